package social

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/markbates/goth"
	"github.com/markbates/goth/providers/facebook"

	"github.com/markbates/goth/providers/openidConnect"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// The providers' real endpoints; an override replaces them. goth keeps Facebook's
// unexported (the profile URL as a constant), and Google's are those of its OpenID Connect
// discovery document.
const (
	googleIssuer       = "https://accounts.google.com"
	googleAuthURL      = "https://accounts.google.com/o/oauth2/v2/auth"
	googleTokenURL     = "https://oauth2.googleapis.com/token"
	googleProfileURL   = "https://openidconnect.googleapis.com/v1/userinfo"
	facebookAuthURL    = "https://www.facebook.com/dialog/oauth"
	facebookTokenURL   = "https://graph.facebook.com/oauth/access_token"
	facebookProfileURL = "https://graph.facebook.com/me"
)

// googleIssuers are the `iss` values Google's ID tokens carry (Google's OpenID Connect
// documentation allows both).
var googleIssuers = []string{googleIssuer, "accounts.google.com"}

// upstream is one enabled provider.
type upstream struct {
	cfg      Upstream
	provider string // login method: "google", "facebook", "oidc:<name>"
	label    string
	base     string // route prefix
	callback string // absolute callback URL registered at the provider
	client   *http.Client

	// Google: goth's openidConnect provider on Google's (or the overriding) endpoints.
	google *openidConnect.Provider
	// Facebook: goth's provider reads the profile, token exchanges the code with PKCE.
	facebook *facebook.Provider
	token    oauth2.Config
	// authURL is the authorization endpoint that replaces goth's for Facebook, or nil.
	authURL *url.URL

	// OpenID Connect upstreams, discovered on first use.
	mu   sync.Mutex
	disc *discovered
}

// discovered is what an OpenID Connect upstream's discovery yields.
type discovered struct {
	goth     *openidConnect.Provider
	verifier *oidc.IDTokenVerifier
}

// newUpstream builds the provider of c. issuer is Gatehouse's base URL.
func newUpstream(c Upstream, issuer string, client *http.Client) (*upstream, error) {
	u := &upstream{
		cfg: c, provider: providerName(c), label: c.Label, base: routeBase(c), client: client,
	}
	u.callback = issuer + u.base + "/callback"
	openIDScopes := []string{oidc.ScopeOpenID, "email", "profile"}
	switch c.Kind {
	case KindOIDC:
		u.label = cmpOr(u.label, c.Name)
		u.cfg.Scopes = cmpOrList(c.Scopes, openIDScopes)
	case KindGoogle:
		u.label = cmpOr(u.label, "Google")
		u.cfg.Scopes = cmpOrList(c.Scopes, openIDScopes)
		u.cfg.AuthURL = cmpOr(c.AuthURL, googleAuthURL)
		u.cfg.TokenURL = cmpOr(c.TokenURL, googleTokenURL)
		u.cfg.ProfileURL = cmpOr(c.ProfileURL, googleProfileURL)
		p, err := u.googleProvider(googleIssuer)
		if err != nil {
			return nil, err
		}
		u.google = p
	case KindFacebook:
		u.label = cmpOr(u.label, "Facebook")
		u.cfg.Scopes = cmpOrList(c.Scopes, []string{"email"})
		u.token = oauth2.Config{
			ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: u.callback,
			Endpoint: oauth2.Endpoint{
				AuthURL: facebookAuthURL, TokenURL: cmpOr(c.TokenURL, facebookTokenURL), AuthStyle: oauth2.AuthStyleInParams,
			},
		}
		if c.AuthURL != "" {
			var err error
			if u.authURL, err = url.Parse(c.AuthURL); err != nil {
				return nil, fmt.Errorf("%s auth URL: %w", u.provider, err)
			}
		}
		if c.ProfileURL != "" {
			var err error
			if u.client, err = overrideEndpoint(client, facebookProfileURL, c.ProfileURL); err != nil {
				return nil, fmt.Errorf("%s profile URL: %w", u.provider, err)
			}
		}
		u.facebook = facebook.New(c.ClientID, c.ClientSecret, u.callback, u.cfg.Scopes...)
		u.facebook.HTTPClient = u.client
	}
	return u, nil
}

// googleProvider is goth's OpenID Connect provider for Google, accepting ID tokens of iss.
func (u *upstream) googleProvider(iss string) (*openidConnect.Provider, error) {
	p, err := openidConnect.NewCustomisedURL(u.cfg.ClientID, u.cfg.ClientSecret, u.callback,
		u.cfg.AuthURL, u.cfg.TokenURL, iss, u.cfg.ProfileURL, "", u.cfg.Scopes...)
	if err != nil {
		return nil, fmt.Errorf("configure %s: %w", u.provider, err)
	}
	p.SetName(u.provider)
	p.HTTPClient = u.client
	return p, nil
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func cmpOrList(v, def []string) []string {
	if len(v) == 0 {
		return def
	}
	return v
}

// gothProvider returns the goth provider, discovering an OpenID Connect upstream first.
func (u *upstream) gothProvider(ctx context.Context) (goth.Provider, error) {
	switch u.cfg.Kind {
	case KindGoogle:
		return openIDWithSpan(ctx, u.google), nil
	case KindFacebook:
		return facebookWithSpan(ctx, u.facebook), nil
	}
	d, err := u.discover(ctx)
	if err != nil {
		return nil, err
	}
	return openIDWithSpan(ctx, d.goth), nil
}

// discover reads the upstream's discovery document once; a failure is not remembered, so
// the next login tries again.
func (u *upstream) discover(ctx context.Context) (*discovered, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.disc != nil {
		return u.disc, nil
	}
	op, err := oidc.NewProvider(oidc.ClientContext(ctx, u.client), u.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", u.cfg.Issuer, err)
	}
	ep := op.Endpoint()
	p, err := openidConnect.NewCustomisedURL(u.cfg.ClientID, u.cfg.ClientSecret, u.callback,
		ep.AuthURL, ep.TokenURL, u.cfg.Issuer, op.UserInfoEndpoint(), "", u.cfg.Scopes...)
	if err != nil {
		return nil, fmt.Errorf("configure %s: %w", u.provider, err)
	}
	p.SetName(u.provider)
	p.HTTPClient = u.client
	u.disc = &discovered{goth: p, verifier: op.Verifier(&oidc.Config{ClientID: u.cfg.ClientID})}
	return u.disc, nil
}

// authorizationURL is where login sends the browser: goth's authorization URL for st.State
// (on the overriding endpoint, if any) with the PKCE challenge and, for OpenID Connect
// providers, the nonce.
func (u *upstream) authorizationURL(ctx context.Context, st *loginState) (string, error) {
	p, err := u.gothProvider(ctx)
	if err != nil {
		return "", err
	}
	sess, err := p.BeginAuth(st.State)
	if err != nil {
		return "", fmt.Errorf("begin %s login: %w", u.provider, err)
	}
	raw, err := sess.GetAuthURL()
	if err != nil {
		return "", fmt.Errorf("begin %s login: %w", u.provider, err)
	}
	au, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("begin %s login: %w", u.provider, err)
	}
	if u.authURL != nil {
		au.Scheme, au.Host, au.Path, au.RawPath = u.authURL.Scheme, u.authURL.Host, u.authURL.Path, u.authURL.RawPath
	}
	q := au.Query()
	q.Set("code_challenge", oauth2.S256ChallengeFromVerifier(st.Verifier))
	q.Set("code_challenge_method", "S256")
	if u.cfg.Kind != KindFacebook {
		q.Set("nonce", st.Nonce)
	}
	au.RawQuery = q.Encode()
	return au.String(), nil
}

// identity exchanges code (with st's PKCE verifier), checks the ID token and its nonce where
// there is one, and reads the profile. Every failure is an *upstreamError.
func (u *upstream) identity(ctx context.Context, code string, st *loginState) (publicauth.Identity, error) {
	var (
		gu       goth.User
		verified bool
		err      error
	)
	switch {
	case code == "":
		err = errors.New("the callback has no code")
	case u.cfg.Kind == KindFacebook:
		gu, err = u.facebookUser(ctx, code, st)
		// Facebook returns only a confirmed primary address (see the package doc).
		verified = gu.Email != ""
	default:
		gu, err = u.openIDUser(ctx, code, st)
		verified = claimTrue(gu.RawData, "email_verified")
	}
	if err == nil && gu.UserID == "" {
		err = errors.New("the profile has no subject")
	}
	if err != nil {
		return publicauth.Identity{}, &upstreamError{provider: u.provider, err: err}
	}
	return publicauth.Identity{
		Provider: u.provider, Subject: gu.UserID, Email: gu.Email, EmailVerified: verified, Name: gu.Name,
		Profile: upstreamProfile(gu),
	}, nil
}

// upstreamProfile is the standard profile a provider reported through goth: first and last
// name, nickname, avatar (as picture) and, from the raw profile or claims, locale. publicauth
// keeps what passes its rules, and only in fields the account leaves empty.
func upstreamProfile(gu goth.User) publicauth.Profile {
	locale, _ := gu.RawData["locale"].(string)
	return publicauth.Profile{
		GivenName: gu.FirstName, FamilyName: gu.LastName, Nickname: gu.NickName,
		Picture: gu.AvatarURL, Locale: locale,
	}
}

func (u *upstream) facebookUser(ctx context.Context, code string, st *loginState) (goth.User, error) {
	tok, err := u.token.Exchange(context.WithValue(ctx, oauth2.HTTPClient, u.client), code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return goth.User{}, fmt.Errorf("exchange the code: %w", err)
	}
	gu, err := facebookWithSpan(ctx, u.facebook).FetchUser(&facebook.Session{AccessToken: tok.AccessToken, ExpiresAt: tok.Expiry})
	if err != nil {
		return goth.User{}, fmt.Errorf("read the profile: %w", err)
	}
	return gu, nil
}

// openIDUser serves Google and OpenID Connect upstreams: goth exchanges the code with the
// PKCE verifier, the ID token is checked (an upstream's through its JWKS, Google's by its
// claims), then goth reads and merges the userinfo claims.
func (u *upstream) openIDUser(ctx context.Context, code string, st *loginState) (goth.User, error) {
	p, err := u.gothProvider(ctx)
	if err != nil {
		return goth.User{}, err
	}
	sess := &openidConnect.Session{}
	if _, err := sess.Authorize(p, url.Values{"code": {code}, "code_verifier": {st.Verifier}}); err != nil {
		return goth.User{}, fmt.Errorf("exchange the code: %w", err)
	}
	var nonce string
	if u.cfg.Kind == KindGoogle {
		claims, err := unverifiedClaims(sess.IDToken)
		if err != nil {
			return goth.User{}, fmt.Errorf("ID token: %w", err)
		}
		iss := claimString(claims, "iss")
		if !slices.Contains(googleIssuers, iss) {
			return goth.User{}, fmt.Errorf("ID token: issuer %q is not Google's", iss)
		}
		// goth compares iss with one configured value; Google uses either form.
		if p, err = u.googleProvider(iss); err != nil {
			return goth.User{}, err
		}
		p = openIDWithSpan(ctx, p.(*openidConnect.Provider))
		nonce = claimString(claims, "nonce")
	} else {
		d, err := u.discover(ctx)
		if err != nil {
			return goth.User{}, err
		}
		idt, err := d.verifier.Verify(oidc.ClientContext(ctx, u.client), sess.IDToken)
		if err != nil {
			return goth.User{}, fmt.Errorf("ID token: %w", err)
		}
		nonce = idt.Nonce
	}
	if nonce != st.Nonce {
		return goth.User{}, errors.New("ID token: nonce does not match")
	}
	gu, err := p.FetchUser(sess) // checks aud, iss and exp, and that userinfo has the same sub
	if err != nil {
		return goth.User{}, fmt.Errorf("read the profile: %w", err)
	}
	return gu, nil
}

// unverifiedClaims decodes the claims of a compact JWS without checking its signature (see
// the package doc for when that is sound).
func unverifiedClaims(raw string) (map[string]any, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, errors.New("missing or not a compact JWS")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return claims, nil
}

func claimString(claims map[string]any, name string) string {
	s, _ := claims[name].(string)
	return s
}

// claimTrue reports whether a boolean claim is true; some providers send "true" as a string.
func claimTrue(claims map[string]any, name string) bool {
	switch v := claims[name].(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// overrideEndpoint returns a copy of client whose requests for the URL from (scheme, host
// and path) go to the URL to instead, query kept.
func overrideEndpoint(client *http.Client, from, to string) (*http.Client, error) {
	f, err := url.Parse(from)
	if err != nil {
		return nil, err
	}
	t, err := url.Parse(to)
	if err != nil {
		return nil, err
	}
	next := client.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c := *client
	c.Transport = endpointOverride{from: f, to: t, next: next}
	return &c, nil
}

// endpointOverride is the transport of overrideEndpoint.
type endpointOverride struct {
	from, to *url.URL
	next     http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (o endpointOverride) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == o.from.Scheme && r.URL.Host == o.from.Host && r.URL.Path == o.from.Path {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.URL.Path, r.URL.RawPath = o.to.Scheme, o.to.Host, o.to.Path, o.to.RawPath
		r.Host = o.to.Host
	}
	return o.next.RoundTrip(r)
}
