package provider

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// Dynamic client registration (RFC 7591) and its management (RFC 7592): a JSON front end
// over CreateClient, UpdateClient and DeleteClient. A client registered this way is never
// first-party (its users always see the consent page) and never a resource server, and it
// gets a registration access token, stored as its SHA-256, with which it reads, replaces
// and deletes its registration at registration_client_uri. The token is not rotated by a
// PUT: a client whose PUT answer was lost would otherwise be locked out of its
// registration, and the token is only ever sent to this endpoint.

// maxRegistrationBytes bounds a registration request's body: a JWKS of a few keys fits
// many times over.
const maxRegistrationBytes = 64 << 10

// maxClientNameLen bounds client_name, which the consent page shows.
const maxClientNameLen = 200

// maxMetadataURILen bounds each URI of the metadata.
const maxMetadataURILen = 2000

// rateRegister is the publicauth.CheckRate endpoint name of registration attempts.
const rateRegister = "oauth-register"

// The error codes of RFC 7591 §3.2.2.
const (
	errInvalidRedirectURI    = "invalid_redirect_uri"
	errInvalidClientMetadata = "invalid_client_metadata"
)

// registrationError is a refused registration request: its HTTP status and OAuth error.
type registrationError struct {
	status      int
	code        string
	description string
}

func (e *registrationError) Error() string { return e.code + ": " + e.description }

func metadataError(format string, args ...any) *registrationError {
	return &registrationError{http.StatusBadRequest, errInvalidClientMetadata, fmt.Sprintf(format, args...)}
}

func redirectURIError(format string, args ...any) *registrationError {
	return &registrationError{http.StatusBadRequest, errInvalidRedirectURI, fmt.Sprintf(format, args...)}
}

// clientMetadata is the client metadata of RFC 7591 §2 Gatehouse understands, as a
// registration request carries them; any other member is ignored (RFC 7591 §2). ClientID
// and ClientSecret are those of an RFC 7592 §2.2 update.
type clientMetadata struct {
	RedirectURIs             []string        `json:"redirect_uris"`
	TokenEndpointAuthMethod  string          `json:"token_endpoint_auth_method"`
	GrantTypes               []string        `json:"grant_types"`
	ResponseTypes            []string        `json:"response_types"`
	ClientName               string          `json:"client_name"`
	LogoURI                  string          `json:"logo_uri"`
	PolicyURI                string          `json:"policy_uri"`
	TOSURI                   string          `json:"tos_uri"`
	Scope                    string          `json:"scope"`
	JWKSURI                  string          `json:"jwks_uri"`
	JWKS                     json.RawMessage `json:"jwks"`
	IDTokenSignedResponseAlg string          `json:"id_token_signed_response_alg"`
	RequestObjectSigningAlg  string          `json:"request_object_signing_alg"`
	PostLogoutRedirectURIs   []string        `json:"post_logout_redirect_uris"`
	RequirePAR               bool            `json:"require_pushed_authorization_requests"`
	DPoPBoundAccessTokens    bool            `json:"dpop_bound_access_tokens"`
	ClientID                 string          `json:"client_id"`
	ClientSecret             string          `json:"client_secret"`
	// OpenID Connect Back-Channel Logout 1.0 §2.2.
	BackchannelLogoutURI             string `json:"backchannel_logout_uri"`
	BackchannelLogoutSessionRequired bool   `json:"backchannel_logout_session_required"`
}

// registrationResponse is the client information response of RFC 7591 §3.2.1 and RFC
// 7592 §3: the client's id, its secret when one was issued with this answer, the
// registration access token when issued with it, and the metadata as stored.
type registrationResponse struct {
	ClientID                 string          `json:"client_id"`
	ClientSecret             string          `json:"client_secret,omitempty"`
	ClientSecretExpiresAt    *int64          `json:"client_secret_expires_at,omitempty"`
	ClientIDIssuedAt         int64           `json:"client_id_issued_at"`
	RegistrationAccessToken  string          `json:"registration_access_token,omitempty"`
	RegistrationClientURI    string          `json:"registration_client_uri"`
	RedirectURIs             []string        `json:"redirect_uris"`
	TokenEndpointAuthMethod  string          `json:"token_endpoint_auth_method"`
	GrantTypes               []string        `json:"grant_types"`
	ResponseTypes            []string        `json:"response_types"`
	ClientName               string          `json:"client_name,omitempty"`
	LogoURI                  string          `json:"logo_uri,omitempty"`
	PolicyURI                string          `json:"policy_uri,omitempty"`
	TOSURI                   string          `json:"tos_uri,omitempty"`
	Scope                    string          `json:"scope"`
	JWKSURI                  string          `json:"jwks_uri,omitempty"`
	JWKS                     json.RawMessage `json:"jwks,omitempty"`
	IDTokenSignedResponseAlg string          `json:"id_token_signed_response_alg"`
	RequestObjectSigningAlg  string          `json:"request_object_signing_alg,omitempty"`
	PostLogoutRedirectURIs   []string        `json:"post_logout_redirect_uris"`
	RequirePAR               bool            `json:"require_pushed_authorization_requests"`
	DPoPBoundAccessTokens    bool            `json:"dpop_bound_access_tokens"`
	// BackchannelLogoutURI and BackchannelLogoutSessionRequired: Back-Channel Logout §2.2.
	BackchannelLogoutURI             string `json:"backchannel_logout_uri,omitempty"`
	BackchannelLogoutSessionRequired bool   `json:"backchannel_logout_session_required"`
}

// checkClientRegistration validates what a client keeps of its registration: its logo,
// policy and terms-of-service URLs, and that a dynamically registered client is neither
// first-party nor a resource server.
func checkClientRegistration(c *storage.Client) []error {
	var errs []error
	for _, u := range []struct{ name, value string }{{"logo_uri", c.LogoURI}, {"policy_uri", c.PolicyURI}, {"tos_uri", c.TOSURI}} {
		if u.value != "" && !isHTTPSURL(u.value) {
			errs = append(errs, fmt.Errorf("%s %q must be an absolute https URL without user info or fragment", u.name, u.value))
		}
	}
	if c.DynamicallyRegistered() && (c.FirstParty || c.ResourceServer) {
		errs = append(errs, errors.New("a dynamically registered client cannot be first-party or a resource server"))
	}
	return errs
}

// isHTTPSURL reports whether raw is an absolute https URL with a host, without user info
// or fragment, of at most maxMetadataURILen bytes.
func isHTTPSURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && len(raw) <= maxMetadataURILen && u.Scheme == "https" && u.Host != "" &&
		u.User == nil && u.Fragment == "" && !strings.Contains(raw, "#")
}

// checkWebRedirectURI checks a redirect or post-logout redirect URI of a registration: https,
// or http on a loopback host (127.0.0.1, [::1], localhost, for native apps, RFC 8252
// §7.3), absolute, without user info or fragment. Native apps' private-use schemes are not
// accepted from self-registration: nothing ties such a scheme to the app.
func checkWebRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || len(raw) > maxMetadataURILen:
		return fmt.Errorf("%q is not an absolute URI", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%q has a fragment", raw)
	case u.User != nil:
		return fmt.Errorf("%q has user info", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))) {
			return nil
		}
		return fmt.Errorf("%q uses http on a host that is not 127.0.0.1, [::1] or localhost", raw)
	}
	return fmt.Errorf("%q must use https (or http on a loopback host)", raw)
}

// specFromMetadata validates m (RFC 7591 §2) and returns the client it describes, with the
// RFC's defaults: grant type authorization_code, response type code when that grant is
// registered, client_secret_basic, RS256 and the default scopes. It does not run the
// checks CreateClient runs (checkClient), which the caller runs on the result.
//
// A client cannot give itself what an operator must grant: a scope outside
// registrableScopes, or the client_credentials grant unless
// Config.AllowRegisteredClientCredentials. held is the registered client an RFC 7592
// update replaces (nil at registration): what it already holds, an operator may have
// granted, and it keeps.
func (p *Provider) specFromMetadata(m clientMetadata, held *storage.Client) (ClientSpec, *registrationError) {
	grants := m.GrantTypes
	if len(grants) == 0 {
		grants = []string{"authorization_code"}
	}
	grants = dedupe(grants)
	for _, g := range grants {
		if !slices.Contains(grantTypesSupported, g) {
			return ClientSpec{}, metadataError("grant type %q is not supported (use %s)", g, strings.Join(grantTypesSupported, ", "))
		}
	}
	code := slices.Contains(grants, "authorization_code")
	if slices.Contains(grants, "refresh_token") && !code && !slices.Contains(grants, GrantTypeDeviceCode) {
		return ClientSpec{}, metadataError("the refresh_token grant needs a grant that issues refresh tokens: authorization_code or %s", GrantTypeDeviceCode)
	}
	if m.ResponseTypes != nil {
		for _, rt := range m.ResponseTypes {
			if rt != "code" {
				return ClientSpec{}, metadataError("response type %q is not supported (use code)", rt)
			}
		}
		if code != slices.Contains(m.ResponseTypes, "code") {
			return ClientSpec{}, metadataError("response type code and grant type authorization_code go together: register both or neither")
		}
	}
	if code && len(m.RedirectURIs) == 0 {
		return ClientSpec{}, redirectURIError("redirect_uris is required for the authorization_code grant")
	}
	for _, uri := range m.RedirectURIs {
		if err := checkWebRedirectURI(uri); err != nil {
			return ClientSpec{}, redirectURIError("redirect URI %v", err)
		}
	}
	for _, uri := range m.PostLogoutRedirectURIs {
		if err := checkWebRedirectURI(uri); err != nil {
			return ClientSpec{}, metadataError("post-logout redirect URI %v", err)
		}
	}
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = storage.AuthMethodSecretBasic
	}
	if !slices.Contains(clientAuthMethods, method) {
		return ClientSpec{}, metadataError("token_endpoint_auth_method %q is not supported (use %s)", method, strings.Join(clientAuthMethods, ", "))
	}
	public := method == storage.AuthMethodNone
	if public && slices.Contains(grants, "client_credentials") {
		return ClientSpec{}, metadataError("a client authenticating with none cannot use client_credentials")
	}
	if slices.Contains(grants, "client_credentials") && !p.cfg.AllowRegisteredClientCredentials &&
		(held == nil || !slices.Contains(held.GrantTypes, "client_credentials")) {
		// A client_credentials token speaks for the client itself, with no user's consent
		// between it and the scopes it carries.
		return ClientSpec{}, metadataError("grant type client_credentials is not open to dynamically registered clients on this server")
	}
	var jwks []byte
	if len(m.JWKS) > 0 && string(m.JWKS) != "null" {
		if m.JWKS[0] != '{' {
			return ClientSpec{}, metadataError("jwks must be a JSON Web Key Set object")
		}
		jwks = m.JWKS
	}
	if method == storage.AuthMethodPrivateKeyJWT && (m.JWKSURI == "") == (jwks == nil) {
		return ClientSpec{}, metadataError("a private_key_jwt client registers exactly one of jwks_uri and jwks")
	}
	for _, u := range []struct{ name, value string }{{"jwks_uri", m.JWKSURI}, {"backchannel_logout_uri", m.BackchannelLogoutURI}} {
		if err := checkRegisteredClientURL(u.value, p.cfg.InsecureAllowPrivateClientURLs); err != nil {
			return ClientSpec{}, metadataError("%s %v", u.name, err)
		}
	}
	if len(m.ClientName) > maxClientNameLen || !displayable(m.ClientName) {
		return ClientSpec{}, metadataError("client_name must be at most %d characters without control or format characters (Unicode Cc, Cf, Zl, Zp, Co: bidirectional overrides, zero-width characters, …)", maxClientNameLen)
	}
	for _, u := range []struct{ name, value string }{{"logo_uri", m.LogoURI}, {"policy_uri", m.PolicyURI}, {"tos_uri", m.TOSURI}} {
		if u.value != "" && (!isHTTPSURL(u.value) || !displayable(u.value)) {
			return ClientSpec{}, metadataError("%s must be an absolute https URL without user info, fragment, control or format characters", u.name)
		}
	}
	scopes := strings.Fields(m.Scope)
	if len(scopes) == 0 {
		scopes = []string{"openid", "profile", "email", "offline_access"}
	}
	allowed := registrableScopes(p.cfg.Scopes)
	for _, s := range scopes {
		if !slices.Contains(allowed, s) && (held == nil || !slices.Contains(held.Scopes, s)) {
			return ClientSpec{}, metadataError("scope %q is not one a client may register for (%s); an operator grants the others", s, strings.Join(allowed, " "))
		}
	}
	alg := m.IDTokenSignedResponseAlg
	if alg == "" {
		alg = AlgRS256
	}
	return ClientSpec{
		Name: m.ClientName, RedirectURIs: m.RedirectURIs, PostLogoutRedirectURIs: m.PostLogoutRedirectURIs,
		Scopes: dedupe(scopes), GrantTypes: grants, Public: public, IDTokenAlg: alg,
		RequirePAR: m.RequirePAR, RequireDPoP: m.DPoPBoundAccessTokens,
		AuthMethod: method, JWKSURI: m.JWKSURI, JWKS: jwks, RequestObjectAlg: m.RequestObjectSigningAlg,
		LogoURI: m.LogoURI, PolicyURI: m.PolicyURI, TOSURI: m.TOSURI,
		BackchannelLogoutURI: m.BackchannelLogoutURI, BackchannelLogoutSessionRequired: m.BackchannelLogoutSessionRequired,
	}, nil
}

// displayable reports whether s, metadata shown to users (client_name, on the consent and
// device pages), holds no character that changes how the rest reads instead of showing
// itself: controls (Cc), format characters (Cf: bidirectional overrides such as U+202E,
// zero-width spaces and joiners, which let a name pass for another or hide part of
// itself), line and paragraph separators (Zl, Zp) and private-use characters (Co), which
// a font may draw as anything.
func displayable(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co)
	}) < 0
}

// dedupe returns list without repeated values, in first-seen order.
func dedupe(list []string) []string {
	out := make([]string, 0, len(list))
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// registrationTokenHash is how registration and initial access tokens are stored: the hex
// SHA-256 of the token, which is 256 random bits, so a hash without a key or stretching
// suffices.
func registrationTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// bearerToken returns the token of r's "Authorization: Bearer" header, or "".
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// writeRegistrationError answers r with err: a *registrationError as itself, an invalid
// token as 401 with a Bearer challenge (RFC 6750 §3.1), a rate limit as 429, an outage as
// 503 and anything else as a logged 500.
func (p *Provider) writeRegistrationError(w http.ResponseWriter, r *http.Request, err error) {
	var regErr *registrationError
	var reqErr *httpjson.RequestError
	switch {
	case errors.As(err, &regErr):
		if regErr.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="`+regErr.description+`"`)
		}
		httpjson.Write(w, regErr.status, map[string]string{"error": regErr.code, "error_description": regErr.description})
	case errors.As(err, &reqErr):
		httpjson.Write(w, reqErr.Status, map[string]string{"error": errInvalidClientMetadata, "error_description": reqErr.Message})
	default:
		if seconds, ok := publicauth.RetryAfterSeconds(err); ok {
			w.Header().Set("Retry-After", strconv.Itoa(seconds))
			httpjson.Write(w, http.StatusTooManyRequests, map[string]string{
				"error": "slow_down", "error_description": "Too many registration requests from this address; retry after the Retry-After delay.",
			})
			return
		}
		if httpjson.Unavailable(err) {
			w.Header().Set("Retry-After", "5")
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable", "error_description": "The service is temporarily unavailable; retry shortly."})
			return
		}
		p.log.ErrorContext(r.Context(), "client registration failed", "method", r.Method, "path", r.URL.Path, "error", err)
		httpjson.Write(w, http.StatusInternalServerError, map[string]string{"error": "server_error", "error_description": "internal error"})
	}
}

// errInvalidToken is the answer to a missing or wrong initial or registration access
// token; it says no more, so a token of another client never reveals whether a client
// exists.
var errInvalidToken = &registrationError{http.StatusUnauthorized, "invalid_token", "the access token is missing, expired or not valid here"}

// decodeMetadata reads r's JSON body into clientMetadata. Unlike every other JSON body of
// Gatehouse, unknown members are ignored, not refused: RFC 7591 §2 says the server MUST
// ignore client metadata it does not understand (and RFC 7592 §2.2 the same of an update).
func decodeMetadata(w http.ResponseWriter, r *http.Request) (clientMetadata, error) {
	var m clientMetadata
	err := httpjson.DecodeIgnoringUnknown(w, r, &m, maxRegistrationBytes, func(field, reason string) error {
		return metadataError("%s %s", field, reason)
	})
	return m, err
}

// register serves POST /api/oauth/register (RFC 7591 §3): with the Bearer initial access
// token an admin issued (CreateRegistrationToken), or with none when
// Config.OpenRegistration is on, it registers the client the JSON metadata describe and
// answers 201 with its client information (registrationResponse). The token's use is
// counted in the transaction that creates the client, so a refused registration uses
// nothing. Every attempt counts against the per-IP rate limit.
func (p *Provider) register(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := p.auth.CheckRate(r, rateRegister); err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	initial := bearerToken(r)
	if !p.cfg.OpenRegistration && initial == "" {
		p.writeRegistrationError(w, r, errInvalidToken)
		return
	}
	m, err := decodeMetadata(w, r)
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	spec, regErr := p.specFromMetadata(m, nil)
	if regErr != nil {
		p.writeRegistrationError(w, r, regErr)
		return
	}
	if err := checkClient(clientFromSpec(spec)); err != nil {
		p.writeRegistrationError(w, r, metadataError("%s", oneLine(err)))
		return
	}
	token, err := randomToken(p.random)
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	var info ClientInfo
	err = p.store.InTx(ctx, func(ctx context.Context) error {
		if !p.cfg.OpenRegistration {
			if err := p.store.UseRegistrationToken(ctx, registrationTokenHash(initial)); errors.Is(err, storage.ErrNotFound) {
				return errInvalidToken
			} else if err != nil {
				return err
			}
		}
		var err error
		if info, err = p.CreateClient(ctx, spec); err != nil {
			return err
		}
		return p.store.SetClientRegistrationToken(ctx, info.ClientID, registrationTokenHash(token))
	})
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	c, err := p.store.ClientByID(ctx, info.ClientID)
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	resp := p.registrationResponse(c, info.ClientSecret)
	resp.RegistrationAccessToken = token
	w.Header().Set("Cache-Control", "no-store")
	httpjson.Write(w, http.StatusCreated, resp)
}

// oneLine joins the lines of a joined error into one description.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// registrationResponse is the client information of c; secret, when not empty, is the
// secret issued with this answer.
func (p *Provider) registrationResponse(c *storage.Client, secret string) registrationResponse {
	nonNil := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	responseTypes := []string{}
	if slices.Contains(c.GrantTypes, "authorization_code") {
		responseTypes = []string{"code"}
	}
	resp := registrationResponse{
		ClientID: c.ID, ClientIDIssuedAt: c.CreatedAt.Unix(),
		RegistrationClientURI:   p.cfg.Issuer + "/api/oauth/register/" + url.PathEscape(c.ID),
		RedirectURIs:            nonNil(c.RedirectURIs),
		TokenEndpointAuthMethod: c.AuthMethod(), GrantTypes: nonNil(c.GrantTypes), ResponseTypes: responseTypes,
		ClientName: c.Name, LogoURI: c.LogoURI, PolicyURI: c.PolicyURI, TOSURI: c.TOSURI,
		Scope: strings.Join(c.Scopes, " "), JWKSURI: c.JWKSURI, JWKS: json.RawMessage(c.JWKS),
		IDTokenSignedResponseAlg: c.IDTokenAlg, RequestObjectSigningAlg: c.RequestObjectSigningAlg,
		PostLogoutRedirectURIs: nonNil(c.PostLogoutRedirectURIs), RequirePAR: c.RequirePAR, DPoPBoundAccessTokens: c.RequireDPoP,
		BackchannelLogoutURI: c.BackchannelLogoutURI, BackchannelLogoutSessionRequired: c.BackchannelLogoutSessionRequired,
	}
	if secret != "" {
		var never int64
		resp.ClientSecret, resp.ClientSecretExpiresAt = secret, &never
	}
	return resp
}

// registeredClient returns the client named by r's {client_id} when r's Bearer token is its
// registration access token (RFC 7592 §3), and errInvalidToken otherwise: for a client
// that does not exist, one registered by an admin (which has no such token) and a token of
// another client alike.
func (p *Provider) registeredClient(r *http.Request) (*storage.Client, error) {
	token := bearerToken(r)
	if token == "" {
		return nil, errInvalidToken
	}
	hash := registrationTokenHash(token)
	c, err := p.store.ClientByID(r.Context(), mux.Vars(r)["client_id"])
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errInvalidToken
	} else if err != nil {
		return nil, err
	}
	if c.RegistrationTokenHash == "" || subtle.ConstantTimeCompare([]byte(hash), []byte(c.RegistrationTokenHash)) != 1 {
		return nil, errInvalidToken
	}
	return c, nil
}

// readRegistration serves GET /api/oauth/register/{client_id} (RFC 7592 §2.1): the client's
// information, without its secret, which is stored only hashed.
func (p *Provider) readRegistration(w http.ResponseWriter, r *http.Request) {
	c, err := p.registeredClient(r)
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpjson.Write(w, http.StatusOK, p.registrationResponse(c, ""))
}

// updateRegistration serves PUT /api/oauth/register/{client_id} (RFC 7592 §2.2): the body
// holds the client's full metadata, which replace the registered ones (an omitted member
// takes its default, as at registration). client_id must be the client's; client_secret,
// when sent, must be its secret. A client cannot change between public (none) and
// confidential. A change of method that needs a new secret issues one, in the answer.
// The registration access token stays the same.
func (p *Provider) updateRegistration(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := p.registeredClient(r)
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	m, err := decodeMetadata(w, r)
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	if m.ClientID != c.ID {
		p.writeRegistrationError(w, r, metadataError("client_id must be the registered client's id"))
		return
	}
	if m.ClientSecret != "" && (len(c.SecretHash) == 0 ||
		subtle.ConstantTimeCompare(p.hashClientSecret(ctx, m.ClientSecret), c.SecretHash) != 1) {
		p.writeRegistrationError(w, r, metadataError("client_secret does not match the client's secret"))
		return
	}
	spec, regErr := p.specFromMetadata(m, c)
	if regErr != nil {
		p.writeRegistrationError(w, r, regErr)
		return
	}
	if spec.Public != c.Public {
		p.writeRegistrationError(w, r, metadataError("a client cannot change between token_endpoint_auth_method none and the others: register a new client"))
		return
	}
	up := ClientUpdate{
		Name: &spec.Name, RedirectURIs: &spec.RedirectURIs, PostLogoutRedirectURIs: &spec.PostLogoutRedirectURIs,
		Scopes: &spec.Scopes, GrantTypes: &spec.GrantTypes, IDTokenAlg: &spec.IDTokenAlg,
		RequirePAR: &spec.RequirePAR, RequireDPoP: &spec.RequireDPoP, AuthMethod: &spec.AuthMethod,
		JWKSURI: &spec.JWKSURI, JWKS: &spec.JWKS, RequestObjectAlg: &spec.RequestObjectAlg,
		LogoURI: &spec.LogoURI, PolicyURI: &spec.PolicyURI, TOSURI: &spec.TOSURI,
		BackchannelLogoutURI: &spec.BackchannelLogoutURI, BackchannelLogoutSessionRequired: &spec.BackchannelLogoutSessionRequired,
	}
	// The same checks as UpdateClient's, first, so a refusal is told apart from a failure.
	check := *c
	applyClientUpdate(&check, up)
	if err := checkClient(&check); err != nil {
		p.writeRegistrationError(w, r, metadataError("%s", oneLine(err)))
		return
	}
	info, err := p.UpdateClient(ctx, c.ID, up)
	if errors.Is(err, ErrClientNotFound) {
		err = errInvalidToken
	}
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	if c, err = p.store.ClientByID(ctx, c.ID); err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpjson.Write(w, http.StatusOK, p.registrationResponse(c, info.ClientSecret))
}

// applyClientUpdate sets on c the fields of up that are not nil: UpdateClient's change.
func applyClientUpdate(c *storage.Client, up ClientUpdate) {
	set(&c.Name, up.Name)
	set(&c.RedirectURIs, up.RedirectURIs)
	set(&c.PostLogoutRedirectURIs, up.PostLogoutRedirectURIs)
	set(&c.Scopes, up.Scopes)
	set(&c.GrantTypes, up.GrantTypes)
	set(&c.Audience, up.Audience)
	set(&c.FirstParty, up.FirstParty)
	set(&c.ResourceServer, up.ResourceServer)
	set(&c.IDTokenAlg, up.IDTokenAlg)
	set(&c.RequirePAR, up.RequirePAR)
	set(&c.RequireDPoP, up.RequireDPoP)
	set(&c.BackchannelLogoutURI, up.BackchannelLogoutURI)
	set(&c.BackchannelLogoutSessionRequired, up.BackchannelLogoutSessionRequired)
	set(&c.TokenEndpointAuthMethod, up.AuthMethod)
	set(&c.JWKSURI, up.JWKSURI)
	set(&c.JWKS, up.JWKS)
	set(&c.RequestObjectSigningAlg, up.RequestObjectAlg)
	set(&c.LogoURI, up.LogoURI)
	set(&c.PolicyURI, up.PolicyURI)
	set(&c.TOSURI, up.TOSURI)
}

// deleteRegistration serves DELETE /api/oauth/register/{client_id} (RFC 7592 §2.3): the
// client is deleted with its codes, tokens and consents (DeleteClient); 204.
func (p *Provider) deleteRegistration(w http.ResponseWriter, r *http.Request) {
	c, err := p.registeredClient(r)
	if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	if err := p.DeleteClient(r.Context(), c.ID); errors.Is(err, ErrClientNotFound) {
		err = errInvalidToken
		p.writeRegistrationError(w, r, err)
		return
	} else if err != nil {
		p.writeRegistrationError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}
