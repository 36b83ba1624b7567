package dpop

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v3"
)

// DefaultAlgorithms are the JWS algorithms a proof may be signed with when
// Config.Algorithms is empty: every asymmetric algorithm of RFC 7518 and EdDSA (RFC 8037).
var DefaultAlgorithms = []string{"ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "EdDSA"}

// DefaultWindow is how far a proof's iat may lie from the verifier's clock, in the past or
// the future, when Config.Window is zero.
const DefaultWindow = time.Minute

// replaySlack is how much longer than its window a jti is remembered: replicas' clocks
// differ, and one whose clock is behind still accepts a proof another already calls stale.
const replaySlack = time.Minute

// maxProofBytes bounds a proof: a proof with an RSA-4096 key is under 2 KiB.
const maxProofBytes = 8 << 10

// ReplayCache remembers the proofs' jti values, so each proof is used once (RFC 9449 §11.1).
// Servers that run several replicas must share it (Gatehouse keeps it in its database).
type ReplayCache interface {
	// Use records id as used until expiresAt. It returns ErrReplayed when id was recorded
	// before and has not expired; any other error is a failure of the cache's store, and
	// the proof is then neither accepted nor refused. It must be safe for concurrent use,
	// and of two concurrent calls with one id exactly one may succeed.
	Use(ctx context.Context, id string, expiresAt time.Time) error
}

// NonceSource issues and checks server nonces (RFC 9449 §8). HMACNonces is one that needs
// no shared state.
type NonceSource interface {
	// Nonce returns a nonce to send in the DPoP-Nonce header.
	Nonce() string
	// Valid reports whether nonce is one this source issued and still accepts.
	Valid(nonce string) bool
}

// Config configures a Verifier.
type Config struct {
	// Algorithms are the JWS algorithms a proof may be signed with; each must be an
	// asymmetric one of DefaultAlgorithms. Default (empty): DefaultAlgorithms.
	Algorithms []string
	// Window is how far a proof's iat may lie from now, in the past or the future. Default
	// (zero): DefaultWindow. A proof's jti is remembered for as long as it could be accepted,
	// plus a minute for clocks that differ between replicas.
	Window time.Duration
	// Replay remembers used jti values. Required.
	Replay ReplayCache
	// Nonces, when set, makes every proof carry a nonce it accepts (else ErrUseNonce).
	// Default nil: no nonce is demanded, and one a proof carries is ignored.
	Nonces NonceSource
	// Now is the verifier's clock. Default nil: time.Now.
	Now func() time.Time
}

// Verifier checks DPoP proofs. It is safe for concurrent use.
type Verifier struct {
	algs   []string
	window time.Duration
	replay ReplayCache
	nonces NonceSource
	now    func() time.Time
}

// NewVerifier validates cfg and returns its Verifier.
func NewVerifier(cfg Config) (*Verifier, error) {
	v := &Verifier{algs: slices.Clone(cfg.Algorithms), window: cfg.Window, replay: cfg.Replay, nonces: cfg.Nonces, now: cfg.Now}
	if len(v.algs) == 0 {
		v.algs = slices.Clone(DefaultAlgorithms)
	}
	var errs []error
	for _, a := range v.algs {
		if !slices.Contains(DefaultAlgorithms, a) {
			errs = append(errs, fmt.Errorf("algorithm %q is not an asymmetric JWS algorithm (use %s)", a, strings.Join(DefaultAlgorithms, ", ")))
		}
	}
	if v.window == 0 {
		v.window = DefaultWindow
	}
	if v.window < 0 {
		errs = append(errs, errors.New("window must be positive"))
	}
	if v.replay == nil {
		errs = append(errs, errors.New("a ReplayCache is required"))
	}
	if v.now == nil {
		v.now = time.Now
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dpop: invalid config: %w", err)
	}
	return v, nil
}

// Algorithms are the JWS algorithms the verifier accepts, for a server's metadata
// (dpop_signing_alg_values_supported) and its WWW-Authenticate challenges (algs).
func (v *Verifier) Algorithms() []string { return slices.Clone(v.algs) }

// Nonce returns a fresh server nonce for the DPoP-Nonce header, or "" when the verifier
// demands none.
func (v *Verifier) Nonce() string {
	if v.nonces == nil {
		return ""
	}
	return v.nonces.Nonce()
}

// Request is what a proof is checked against: the request that carries it.
type Request struct {
	// Proofs are the values of the request's DPoP headers: r.Header.Values("DPoP"). Exactly
	// one is accepted.
	Proofs []string
	// Method is the request's method, compared exactly with htm.
	Method string
	// URL is the request's absolute URI as the client addressed it (scheme, host, path):
	// behind a proxy, the public URL. Its query and fragment are ignored, and both it and
	// htu are normalised (RFC 3986 §6.2.2, §6.2.3) before they are compared.
	URL string
	// AccessToken is the access token the request presents (at a resource server): the
	// proof's ath must then be its hash (RFC 9449 §4.3 step 12). Empty at a token
	// endpoint, where ath is not checked.
	AccessToken string
}

// Proof is a proof Verify accepted.
type Proof struct {
	// Thumbprint is the JWK SHA-256 thumbprint (RFC 7638) of the proof's key,
	// base64url-encoded: the jkt an access token bound to the key carries in cnf.
	Thumbprint string
	// PublicKey is the proof's key: *ecdsa.PublicKey, *rsa.PublicKey or ed25519.PublicKey.
	PublicKey crypto.PublicKey
	// Algorithm is the JWS algorithm the proof is signed with.
	Algorithm string
	// ID is the proof's jti.
	ID string
	// IssuedAt is the proof's iat.
	IssuedAt time.Time
	// Nonce is the proof's nonce, "" when it has none.
	Nonce string
}

// claims are a proof's payload (RFC 9449 §4.2).
type claims struct {
	JTI   string       `json:"jti"`
	HTM   string       `json:"htm"`
	HTU   string       `json:"htu"`
	IAT   *json.Number `json:"iat"`
	ATH   string       `json:"ath"`
	Nonce string       `json:"nonce"`
}

// privateMembers are the JWK members of private and symmetric keys (RFC 7518 §6).
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// Verify checks the proof of req as RFC 9449 §4.3 lists: exactly one DPoP header holding
// one compact JWS; typ dpop+jwt; an allowed asymmetric alg; a jwk header that is a public
// key only, under which the signature verifies; htm equal to the method; htu equal to the
// URL (query and fragment ignored, both normalised); iat within the window; the server's
// nonce when one is demanded; ath equal to base64url(SHA-256(AccessToken)) when an access
// token is presented; and a jti not used before, which it then records. It returns the
// accepted proof, or an error matching ErrInvalidProof (with the reason's sentinel) or
// ErrUseNonce, or the ReplayCache's own error. Comparing Proof.Thumbprint with the key an
// access token is bound to is the caller's step.
func (v *Verifier) Verify(ctx context.Context, req Request) (*Proof, error) {
	switch {
	case len(req.Proofs) == 0:
		return nil, ErrNoProof
	case len(req.Proofs) > 1:
		return nil, ErrMultipleProofs
	}
	raw := req.Proofs[0]
	if raw == "" {
		return nil, ErrNoProof
	}
	if len(raw) > maxProofBytes || strings.Count(raw, ".") != 2 || strings.ContainsAny(raw, " \t{") {
		return nil, ErrMalformed
	}
	header, err := decodeHeader(raw)
	if err != nil {
		return nil, err
	}
	if typ, _ := header["typ"].(string); !strings.EqualFold(typ, "dpop+jwt") {
		return nil, ErrType
	}
	alg, _ := header["alg"].(string)
	if !slices.Contains(v.algs, alg) {
		return nil, ErrAlgorithm
	}
	jwkMembers, ok := header["jwk"].(map[string]any)
	if !ok {
		return nil, ErrKey
	}
	for _, m := range privateMembers {
		if _, has := jwkMembers[m]; has {
			return nil, ErrKey
		}
	}
	jws, err := jose.ParseSigned(raw)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, ErrMalformed
	}
	jwk := jws.Signatures[0].Protected.JSONWebKey
	if jwk == nil || !jwk.Valid() || !jwk.IsPublic() || !keyFits(jwk.Key, alg) {
		return nil, ErrKey
	}
	payload, err := jws.Verify(jwk.Key)
	if err != nil {
		return nil, ErrSignature
	}
	var c claims
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return nil, ErrMalformed
	}
	if c.HTM == "" || c.HTM != req.Method {
		return nil, ErrMethod
	}
	want, err := NormalizeURI(req.URL)
	if err != nil {
		return nil, ErrURI // the caller's URL is no absolute http(s) URI: nothing can match it
	}
	if got, err := NormalizeURI(c.HTU); err != nil || got != want {
		return nil, ErrURI
	}
	iat, err := v.issuedAt(c.IAT)
	if err != nil {
		return nil, err
	}
	if c.JTI == "" {
		return nil, ErrMissingID
	}
	if v.nonces != nil && (c.Nonce == "" || !v.nonces.Valid(c.Nonce)) {
		return nil, ErrUseNonce
	}
	if req.AccessToken != "" {
		if subtle.ConstantTimeCompare([]byte(c.ATH), []byte(AccessTokenHash(req.AccessToken))) != 1 {
			return nil, ErrAccessTokenHash
		}
	}
	thumb, err := Thumbprint(jwk)
	if err != nil {
		return nil, ErrKey
	}
	// The jti is scoped by the key: another key's proof cannot spend it. It is remembered
	// for as long as its iat stays in the window, on any replica's clock.
	if err := v.replay.Use(ctx, thumb+":"+c.JTI, iat.Add(v.window+replaySlack)); err != nil {
		return nil, err
	}
	return &Proof{Thumbprint: thumb, PublicKey: jwk.Key, Algorithm: alg, ID: c.JTI, IssuedAt: iat, Nonce: c.Nonce}, nil
}

// decodeHeader decodes a compact JWS's protected header as JSON, for the checks go-jose
// does not make (typ, and a jwk's private members, which it would parse into a private key).
func decodeHeader(raw string) (map[string]any, error) {
	seg, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return nil, ErrMalformed
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, ErrMalformed
	}
	return h, nil
}

// keyFits reports whether key is of the kind alg signs with, and of a sane size
// (CheckPublicKey).
func keyFits(key any, alg string) bool {
	var fits bool
	switch key.(type) {
	case *ecdsa.PublicKey:
		fits = strings.HasPrefix(alg, "ES")
	case *rsa.PublicKey:
		fits = strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case ed25519.PublicKey:
		fits = alg == "EdDSA"
	}
	return fits && CheckPublicKey(key) == nil
}

// issuedAt checks iat against the window.
func (v *Verifier) issuedAt(n *json.Number) (time.Time, error) {
	if n == nil {
		return time.Time{}, ErrIssuedAt
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e12 {
		return time.Time{}, ErrIssuedAt
	}
	iat := time.Unix(int64(f), 0).UTC()
	now := v.now()
	if iat.Before(now.Add(-v.window)) || iat.After(now.Add(v.window)) {
		return time.Time{}, ErrIssuedAt
	}
	return iat, nil
}

// Thumbprint is the JWK SHA-256 thumbprint (RFC 7638) of jwk's public key, base64url
// without padding: the value of cnf.jkt (RFC 9449 §6.1).
func Thumbprint(jwk *jose.JSONWebKey) (string, error) {
	pub := jwk.Public()
	sum, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("dpop: thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// AccessTokenHash is the ath of a proof that presents token: base64url(SHA-256(token)).
func AccessTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
