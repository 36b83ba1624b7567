package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/dpop"
	"github.com/gatehouse-id/gatehouse/internal/bearer"
	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/storage"
)

// DPoPConfig configures DPoP (RFC 9449): access tokens bound to a key the client proves it
// holds with each request. DPoP needs no switch: a token request with a DPoP proof gets a
// bound token, one without gets a bearer token, unless its client requires DPoP
// (ClientSpec.RequireDPoP). The zero value is the default.
type DPoPConfig struct {
	// RequireNonce makes the token endpoint and the resource endpoints (userinfo, the
	// permission routes, RequireScopes) demand a server nonce in every proof (RFC 9449 §8):
	// a proof without one, or with an expired one, is answered use_dpop_nonce with a fresh
	// nonce in the DPoP-Nonce header, and the client retries with it. Nonces are stateless
	// (an HMAC of a time step under a key derived from Config.Secret), so every replica
	// accepts every replica's nonces. Default false: proofs are limited by iat and
	// single-use jti alone.
	RequireNonce bool
	// NonceLifetime is the step of server nonces: a nonce is accepted for between one and two
	// steps. Default dpop.DefaultNonceLifetime (5 minutes).
	NonceLifetime time.Duration
	// ProofWindow is how far a proof's iat may lie from the provider's clock, in the past or
	// the future. Default dpop.DefaultWindow (1 minute).
	ProofWindow time.Duration
	// Algorithms are the JWS algorithms a proof may be signed with, advertised in discovery
	// as dpop_signing_alg_values_supported. Default dpop.DefaultAlgorithms (ES256, ES384,
	// ES512, PS256, PS384, PS512, RS256, RS384, RS512, EdDSA); symmetric algorithms are
	// refused.
	Algorithms []string
}

// ErrDPoPRequired: the access token is bound to a DPoP key (its cnf.jkt), so it is valid
// only presented with the DPoP scheme and a proof by that key (VerifyRequest), never as a
// bearer token (RFC 9449 §7.2). It matches ErrInvalidToken.
var ErrDPoPRequired = fmt.Errorf("%w: the token is DPoP-bound", ErrInvalidToken)

// ErrNoAccessToken: the request presents no access token, in neither the Bearer nor the DPoP
// scheme (VerifyRequest). Answer 401 with a challenge and no error code (RFC 6750 §3.1).
var ErrNoAccessToken = errors.New("no access token")

// newDPoPVerifier builds the provider's proof verifier: jti values single-use in the
// database, nonces (when required) keyed from the system secret.
func newDPoPVerifier(cfg Config, store *storage.Store, now func() time.Time) (*dpop.Verifier, error) {
	dc := dpop.Config{Algorithms: cfg.DPoP.Algorithms, Window: cfg.DPoP.ProofWindow, Replay: dpopReplay{store: store}, Now: now}
	if cfg.DPoP.RequireNonce {
		dc.Nonces = dpop.NewHMACNonces(deriveKey(cfg.Secret, "dpop-nonces"), cfg.DPoP.NonceLifetime, now)
	}
	v, err := dpop.NewVerifier(dc)
	if err != nil {
		return nil, fmt.Errorf("provider: DPoP: %w", err)
	}
	return v, nil
}

// dpopReplay keeps proofs single-use across replicas in the table of single-use JWT ids that
// client assertions use: the key is namespaced and hashed, so it never collides with an
// assertion's jti and its length is bounded whatever the proof's jti.
type dpopReplay struct{ store *storage.Store }

func (r dpopReplay) Use(ctx context.Context, id string, expiresAt time.Time) error {
	sum := sha256.Sum256([]byte(id))
	err := r.store.SetClientAssertionJWT(ctx, "dpop:"+hex.EncodeToString(sum[:]), expiresAt)
	switch {
	case errors.Is(err, fosite.ErrJTIKnown):
		return dpop.ErrReplayed
	case err != nil:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// validDPoPJKT reports whether jkt, the dpop_jkt of an authorization request, is empty or
// has the shape of a JWK SHA-256 thumbprint: 32 bytes, base64url without padding.
func validDPoPJKT(jkt string) bool {
	if jkt == "" {
		return true
	}
	b, err := base64.RawURLEncoding.DecodeString(jkt)
	return err == nil && len(b) == sha256.Size
}

// dpopKeyKey carries, on a token request's context, the thumbprint of the key its access
// token is bound to; tokenClaimsFor turns it into the cnf claim.
type dpopKeyKey struct{}

// confirmation is the cnf claim (RFC 7800, RFC 9449 §6.1) of an access token issued with
// ctx, or nil for a bearer token.
func confirmation(ctx context.Context) map[string]any {
	if jkt, _ := ctx.Value(dpopKeyKey{}).(string); jkt != "" {
		return map[string]any{"jkt": jkt}
	}
	return nil
}

// invalidDPoPProof and useDPoPNonce are the token endpoint's DPoP errors (RFC 9449 §5, §8).
func invalidDPoPProof(description string) *fosite.RFC6749Error {
	return &fosite.RFC6749Error{ErrorField: dpop.CodeInvalidProof, DescriptionField: description, CodeField: http.StatusBadRequest}
}

func useDPoPNonce() *fosite.RFC6749Error {
	return &fosite.RFC6749Error{ErrorField: dpop.CodeUseNonce,
		DescriptionField: "Authorization server requires nonce in DPoP proof.", CodeField: http.StatusBadRequest}
}

// tokenDPoP checks the DPoP proof of token request ar (RFC 9449 §5) and returns ctx carrying
// the key its access token is to be bound to, and whether it is bound. Without a proof the
// tokens are bearer tokens, unless the client requires DPoP or the code or refresh token
// presented is bound to a key (invalid_dpop_proof). A code or refresh token bound to another
// key is invalid_grant. A public client's refresh token is bound to the proof's key: the
// thumbprint is kept in the grant's stored session. A confidential client's is not (§5: it
// authenticates anyway).
func (p *Provider) tokenDPoP(ctx context.Context, w http.ResponseWriter, r *http.Request, ar fosite.AccessRequester, granted *Session) (context.Context, bool, error) {
	if nonce := p.dpop.Nonce(); nonce != "" {
		w.Header().Set("DPoP-Nonce", nonce)
	}
	// An interface, not *storage.Client: a client type that embeds it still counts.
	client, _ := ar.GetClient().(interface{ RequiresDPoP() bool })
	proofs := r.Header.Values("DPoP")
	bound := granted.DPoPJKT // a refresh token's key
	if ar.GetGrantTypes().ExactOne("authorization_code") {
		bound = granted.CodeDPoPJKT
	}
	if len(proofs) == 0 {
		switch {
		case client != nil && client.RequiresDPoP():
			return ctx, false, invalidDPoPProof("This client must send a DPoP proof with every token request.")
		case bound != "":
			return ctx, false, invalidDPoPProof("The grant is bound to a DPoP key: send a DPoP proof by that key.")
		}
		return ctx, false, nil
	}
	proof, err := p.dpop.Verify(ctx, dpop.Request{Proofs: proofs, Method: r.Method, URL: p.cfg.Issuer + "/api/oauth/token"})
	switch {
	case errors.Is(err, dpop.ErrUseNonce):
		return ctx, false, useDPoPNonce()
	case errors.Is(err, dpop.ErrInvalidProof):
		// The reason is one of package dpop's fixed sentences: no quote or backslash.
		return ctx, false, invalidDPoPProof("The DPoP proof is invalid: " + strings.TrimPrefix(err.Error(), dpop.ErrInvalidProof.Error()+": ") + ".")
	case err != nil:
		return ctx, false, fosite.ErrTemporarilyUnavailable.WithWrap(err).WithDebug(err.Error())
	}
	if bound != "" && proof.Thumbprint != bound {
		return ctx, false, fosite.ErrInvalidGrant.WithHint("The grant is bound to another DPoP key.")
	}
	if ar.GetClient().IsPublic() {
		granted.DPoPJKT = proof.Thumbprint
	}
	return context.WithValue(ctx, dpopKeyKey{}, proof.Thumbprint), true, nil
}

// VerifyRequest checks the access token r presents, as VerifyAccessToken does, and how it is
// presented: in the Authorization header with the Bearer scheme (or, for a form-encoded
// POST, as access_token), or with the DPoP scheme and a DPoP proof (RFC 9449 §7.1). A DPoP
// proof must be valid for r (dpop.Verifier.Verify: htm is r's method; htu the issuer's
// scheme and host with r's path; ath the token's hash; single-use jti) and signed by the key
// the token is bound to (its cnf.jkt). A bound token presented as Bearer is ErrDPoPRequired;
// a bearer token presented with the DPoP scheme is ErrInvalidToken. Errors: ErrNoAccessToken,
// ErrInvalidToken (ErrDPoPRequired among them), ErrUnavailable, and the dpop package's
// (matching dpop.ErrInvalidProof or dpop.ErrUseNonce) for a refused proof. RequireScopes
// and RequireAudience verify with it; userinfo and the permission routes with
// verifyOwnRequest, which also checks the audience.
func (p *Provider) VerifyRequest(r *http.Request) (*AccessToken, error) {
	return p.verifyRequest(r, p.requestURL(r))
}

// errForeignAudience refuses, at Gatehouse's own resources (verifyOwnRequest), a token
// issued for another API.
var errForeignAudience = fmt.Errorf("%w: its audience names neither Gatehouse nor its client", ErrInvalidToken)

// verifyOwnRequest is VerifyRequest for Gatehouse's own resources, userinfo and the
// permission routes, which r reaches through the provider's router: its path is relative
// to the mount path, the issuer's path. The DPoP proof's htu must be the issuer's URL plus
// that path, the URL the client called (RFC 9449 §4.3). The token's audience must name the
// issuer or the token's own client (the audience of every token asked for no other), so a
// token issued for another API (RFC 8707) is errForeignAudience (RFC 9068 §4).
func (p *Provider) verifyOwnRequest(r *http.Request) (*AccessToken, error) {
	at, err := p.verifyRequest(r, p.cfg.Issuer+r.URL.EscapedPath())
	if err != nil {
		return nil, err
	}
	if !slices.Contains(at.Audience, p.cfg.Issuer) && !slices.Contains(at.Audience, at.ClientID) {
		return nil, errForeignAudience
	}
	return at, nil
}

// verifyRequest is VerifyRequest with htu the URL a DPoP proof must be made for.
func (p *Provider) verifyRequest(r *http.Request, htu string) (*AccessToken, error) {
	cred := bearer.FromRequest(r)
	if cred.Token == "" {
		return nil, ErrNoAccessToken
	}
	at, _, err := p.verifier.verify(r.Context(), cred.Token)
	if err != nil {
		return nil, err
	}
	if cred.Scheme != bearer.SchemeDPoP {
		if at.DPoPThumbprint != "" {
			return nil, ErrDPoPRequired
		}
		return at, nil
	}
	proof, err := p.dpop.Verify(r.Context(), dpop.Request{
		Proofs: r.Header.Values("DPoP"), Method: r.Method, URL: htu, AccessToken: cred.Token,
	})
	if err != nil {
		return nil, err
	}
	if at.DPoPThumbprint == "" || proof.Thumbprint != at.DPoPThumbprint {
		return nil, ErrInvalidToken
	}
	return at, nil
}

// requestURL is r's URI as the client addressed it, for an API of the embedder's own
// (RequireScopes): the issuer's scheme and host with r's path as the embedder's mux saw it.
// The provider's own routes see the path after the mount path, and use verifyOwnRequest.
func (p *Provider) requestURL(r *http.Request) string {
	u, _ := url.Parse(p.cfg.Issuer) // withDefaults checked it
	return u.Scheme + "://" + u.Host + r.URL.EscapedPath()
}

// tokenRefusal is the answer to a request whose access token VerifyRequest refused, or that
// the resource refuses for its token (code and description): the status, the OAuth error
// body and the headers, with the challenge of the scheme the token was presented with
// (RFC 6750 §3, RFC 9449 §7.1). Code "" means no token was sent: both schemes are offered.
type tokenRefusal struct {
	status      int
	code        string
	description string
	header      http.Header
}

// refusal maps err of VerifyRequest to its answer for r.
func (p *Provider) refusal(r *http.Request, err error) tokenRefusal {
	scheme := bearer.FromRequest(r).Scheme
	switch {
	case errors.Is(err, ErrNoAccessToken):
		return p.challenge("", http.StatusUnauthorized, "", "An access token is required.", "")
	case errors.Is(err, ErrUnavailable):
		return tokenRefusal{status: http.StatusServiceUnavailable, code: "temporarily_unavailable",
			description: "The database is unavailable; try again shortly.", header: http.Header{"Retry-After": {"5"}}}
	case errors.Is(err, dpop.ErrUseNonce):
		return p.challenge(bearer.SchemeDPoP, http.StatusUnauthorized, dpop.CodeUseNonce, "Resource server requires nonce in DPoP proof.", "")
	case errors.Is(err, dpop.ErrInvalidProof):
		return p.challenge(bearer.SchemeDPoP, http.StatusUnauthorized, dpop.CodeInvalidProof, "The DPoP proof is invalid.", "")
	case errors.Is(err, errForeignAudience):
		return p.challenge(scheme, http.StatusUnauthorized, "invalid_token", "The access token was not issued for this resource.", "")
	case errors.Is(err, ErrDPoPRequired):
		return p.challenge(bearer.SchemeDPoP, http.StatusUnauthorized, "invalid_token", "The access token is DPoP-bound: present it with the DPoP scheme and a proof.", "")
	}
	return p.challenge(scheme, http.StatusUnauthorized, "invalid_token", "The access token is invalid, expired or revoked.", "")
}

// challenge is the answer refusing an access token presented with scheme (bearer.SchemeDPoP
// or bearer.SchemeBearer; "" when none was sent, and then both are offered), with status,
// code and description; scope, when set, names the scopes the resource requires. Code ""
// means no token was sent: the challenge carries no error (RFC 6750 §3.1) and the body says
// invalid_request. A DPoP challenge lists the accepted algorithms, and with nonces on the
// answer carries a fresh DPoP-Nonce.
func (p *Provider) challenge(scheme string, status int, code, description, scope string) tokenRefusal {
	params := `realm=` + quoted(p.cfg.Issuer)
	if code != "" {
		params += `, error=` + quoted(code) + `, error_description=` + quoted(description)
	}
	if scope != "" {
		params += `, scope=` + quoted(scope)
	}
	dpopChallenge := `DPoP ` + params + `, algs=` + quoted(strings.Join(p.dpop.Algorithms(), " "))
	h := http.Header{}
	switch scheme {
	case "":
		h["Www-Authenticate"] = []string{`Bearer ` + params, dpopChallenge}
	case bearer.SchemeDPoP:
		h.Set("WWW-Authenticate", dpopChallenge)
	default:
		h.Set("WWW-Authenticate", `Bearer `+params)
	}
	if nonce := p.dpop.Nonce(); nonce != "" && scheme != bearer.SchemeBearer {
		h.Set("DPoP-Nonce", nonce)
	}
	if code == "" {
		code = "invalid_request"
	}
	return tokenRefusal{status: status, code: code, description: description, header: h}
}

// writeRefusal answers w with a: its headers and the OAuth JSON shape.
func writeRefusal(w http.ResponseWriter, a tokenRefusal) {
	for name, values := range a.header {
		w.Header()[name] = values
	}
	httpjson.Write(w, a.status, map[string]string{"error": a.code, "error_description": a.description})
}
