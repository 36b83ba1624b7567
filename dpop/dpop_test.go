package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v3"

	"github.com/gatehouse-id/gatehouse/dpop"
)

// memReplay is a ReplayCache in memory, for the verifier's own tests.
type memReplay struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (m *memReplay) Use(_ context.Context, id string, exp time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]time.Time{}
	}
	if _, ok := m.seen[id]; ok {
		return dpop.ErrReplayed
	}
	m.seen[id] = exp
	return nil
}

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// proofSpec is one proof to build; zero fields take the values of a valid proof.
type proofSpec struct {
	alg     jose.SignatureAlgorithm
	key     any // signing key; default an ES256 key
	typ     string
	noJWK   bool
	jwk     any // replaces the embedded jwk header
	claims  map[string]any
	without []string // claims to leave out
}

const (
	testURL   = "https://rs.example/api/things"
	testToken = "access-token-value"
)

var ecKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

func build(t *testing.T, s proofSpec) string {
	t.Helper()
	if s.alg == "" {
		s.alg = jose.ES256
	}
	if s.key == nil {
		s.key = ecKey
	}
	if s.typ == "" {
		s.typ = "dpop+jwt"
	}
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(s.typ))
	switch {
	case s.jwk != nil:
		opts = opts.WithHeader("jwk", s.jwk)
	case !s.noJWK:
		opts.EmbedJWK = true
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: s.key}, opts)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	claims := map[string]any{
		"jti": randomID(), "htm": "GET", "htu": testURL, "iat": now.Unix(), "ath": dpop.AccessTokenHash(testToken),
	}
	for k, v := range s.claims {
		claims[k] = v
	}
	for _, k := range s.without {
		delete(claims, k)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		t.Fatalf("CompactSerialize: %v", err)
	}
	return raw
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func newVerifier(t *testing.T, cfg dpop.Config) *dpop.Verifier {
	t.Helper()
	if cfg.Replay == nil {
		cfg.Replay = &memReplay{}
	}
	cfg.Now = func() time.Time { return now }
	v, err := dpop.NewVerifier(cfg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

func request(proofs ...string) dpop.Request {
	return dpop.Request{Proofs: proofs, Method: "GET", URL: testURL + "?q=1", AccessToken: testToken}
}

// TestVerifyRefusesBadProofs: each way a proof breaks RFC 9449 §4.3 is refused with its own
// sentinel, and every refusal is invalid_dpop_proof.
func TestVerifyRefusesBadProofs(t *testing.T) {
	t.Parallel()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	private := jose.JSONWebKey{Key: ecKey}
	privJSON, _ := private.MarshalJSON()
	var privMap map[string]any
	_ = json.Unmarshal(privJSON, &privMap)
	for _, c := range []struct {
		name string
		req  func(t *testing.T) dpop.Request
		want error
	}{
		{"no header", func(t *testing.T) dpop.Request { return request() }, dpop.ErrNoProof},
		{"two headers", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{}), build(t, proofSpec{}))
		}, dpop.ErrMultipleProofs},
		{"not a JWS", func(t *testing.T) dpop.Request { return request("not.a.jws") }, dpop.ErrMalformed},
		{"JSON serialization", func(t *testing.T) dpop.Request { return request(`{"payload":"e30"}..`) }, dpop.ErrMalformed},
		{"wrong typ", func(t *testing.T) dpop.Request { return request(build(t, proofSpec{typ: "JWT"})) }, dpop.ErrType},
		{"symmetric alg", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{alg: jose.HS256, key: []byte("0123456789abcdef0123456789abcdef"), noJWK: true,
				jwk: map[string]any{"kty": "oct", "k": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}}))
		}, dpop.ErrAlgorithm},
		{"no jwk", func(t *testing.T) dpop.Request { return request(build(t, proofSpec{noJWK: true})) }, dpop.ErrKey},
		{"private key in jwk", func(t *testing.T) dpop.Request { return request(build(t, proofSpec{jwk: privMap})) }, dpop.ErrKey},
		{"jwk of another key", func(t *testing.T) dpop.Request {
			other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			pub := jose.JSONWebKey{Key: other.Public()}
			b, _ := pub.MarshalJSON()
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			return request(build(t, proofSpec{jwk: m}))
		}, dpop.ErrSignature},
		{"wrong htm", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"htm": "POST"}}))
		}, dpop.ErrMethod},
		{"lower-case htm", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"htm": "get"}}))
		}, dpop.ErrMethod},
		{"wrong htu path", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"htu": "https://rs.example/api/other"}}))
		}, dpop.ErrURI},
		{"wrong htu host", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"htu": "https://evil.example/api/things"}}))
		}, dpop.ErrURI},
		{"htu over http", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"htu": "http://rs.example/api/things"}}))
		}, dpop.ErrURI},
		{"no htu", func(t *testing.T) dpop.Request { return request(build(t, proofSpec{without: []string{"htu"}})) }, dpop.ErrURI},
		{"stale iat", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"iat": now.Add(-61 * time.Second).Unix()}}))
		}, dpop.ErrIssuedAt},
		{"future iat", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"iat": now.Add(61 * time.Second).Unix()}}))
		}, dpop.ErrIssuedAt},
		{"iat a string", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"iat": "now"}}))
		}, dpop.ErrMalformed},
		{"no iat", func(t *testing.T) dpop.Request { return request(build(t, proofSpec{without: []string{"iat"}})) }, dpop.ErrIssuedAt},
		{"no jti", func(t *testing.T) dpop.Request { return request(build(t, proofSpec{without: []string{"jti"}})) }, dpop.ErrMissingID},
		{"no ath", func(t *testing.T) dpop.Request { return request(build(t, proofSpec{without: []string{"ath"}})) }, dpop.ErrAccessTokenHash},
		{"ath of another token", func(t *testing.T) dpop.Request {
			return request(build(t, proofSpec{claims: map[string]any{"ath": dpop.AccessTokenHash("other")}}))
		}, dpop.ErrAccessTokenHash},
		{"RSA key too small", func(t *testing.T) dpop.Request {
			small, _ := rsa.GenerateKey(rand.Reader, 1024)
			return request(build(t, proofSpec{alg: jose.RS256, key: small}))
		}, dpop.ErrKey},
		{"alg of another key type", func(t *testing.T) dpop.Request {
			pub := jose.JSONWebKey{Key: rsaKey.Public()}
			b, _ := pub.MarshalJSON()
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			return request(build(t, proofSpec{alg: jose.EdDSA, key: edKey, jwk: m}))
		}, dpop.ErrKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newVerifier(t, dpop.Config{})
			_, err := v.Verify(context.Background(), c.req(t))
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if dpop.ErrorCode(err) != dpop.CodeInvalidProof {
				t.Errorf("ErrorCode: got %q, want %q", dpop.ErrorCode(err), dpop.CodeInvalidProof)
			}
		})
	}
}

// TestVerifyAcceptsGoodProofs: proofs by each kind of key are accepted, with the key's
// RFC 7638 thumbprint; htu is compared after normalisation, without query or fragment.
func TestVerifyAcceptsGoodProofs(t *testing.T) {
	t.Parallel()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	for _, c := range []struct {
		name string
		spec proofSpec
		url  string
	}{
		{"ES256", proofSpec{}, testURL},
		{"RS256", proofSpec{alg: jose.RS256, key: rsaKey}, testURL},
		{"PS256", proofSpec{alg: jose.PS256, key: rsaKey}, testURL},
		{"EdDSA", proofSpec{alg: jose.EdDSA, key: edKey}, testURL},
		{"htu normalised", proofSpec{claims: map[string]any{"htu": "HTTPS://RS.example:443/api/./x/../%74hings"}}, testURL + "#frag"},
		{"iat at the window's edge", proofSpec{claims: map[string]any{"iat": now.Add(-60 * time.Second).Unix()}}, testURL},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newVerifier(t, dpop.Config{})
			req := request(build(t, c.spec))
			req.URL = c.url
			p, err := v.Verify(context.Background(), req)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			jwk := jose.JSONWebKey{Key: p.PublicKey}
			want, _ := dpop.Thumbprint(&jwk)
			if p.Thumbprint != want || len(p.Thumbprint) != 43 {
				t.Errorf("Thumbprint: got %q, want %q", p.Thumbprint, want)
			}
		})
	}
}

// TestVerifyThumbprintRFC7638: the thumbprint is RFC 7638 §3.1's example value.
func TestVerifyThumbprintRFC7638(t *testing.T) {
	t.Parallel()
	var jwk jose.JSONWebKey
	err := jwk.UnmarshalJSON([]byte(`{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := dpop.Thumbprint(&jwk)
	if want := "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"; err != nil || got != want {
		t.Errorf("got %q (%v), want %q", got, err, want)
	}
}

// TestVerifyRefusesReplay: a proof is accepted once; its replay is ErrReplayed.
func TestVerifyRefusesReplay(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, dpop.Config{})
	proof := build(t, proofSpec{})
	if _, err := v.Verify(context.Background(), request(proof)); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if _, err := v.Verify(context.Background(), request(proof)); !errors.Is(err, dpop.ErrReplayed) {
		t.Fatalf("replay: got %v, want ErrReplayed", err)
	}
}

// TestVerifyNonces: with nonces on, a proof without a nonce, or with a forged or expired
// one, is use_dpop_nonce; the nonce the server issued is accepted, also by another
// verifier holding the same key (another replica).
func TestVerifyNonces(t *testing.T) {
	t.Parallel()
	clock := now
	key := []byte("0123456789abcdef0123456789abcdef")
	nonces := dpop.NewHMACNonces(key, time.Minute, func() time.Time { return clock })
	v := newVerifier(t, dpop.Config{Nonces: nonces})
	other := newVerifier(t, dpop.Config{Nonces: dpop.NewHMACNonces(key, time.Minute, func() time.Time { return clock })})
	issued := v.Nonce()
	for _, c := range []struct {
		name  string
		v     *dpop.Verifier
		nonce string
		want  error
	}{
		{"no nonce", v, "", dpop.ErrUseNonce},
		{"forged nonce", v, base64.RawURLEncoding.EncodeToString(make([]byte, 24)), dpop.ErrUseNonce},
		{"issued nonce", v, issued, nil},
		{"issued nonce at another replica", other, issued, nil},
	} {
		claims := map[string]any{}
		if c.nonce != "" {
			claims["nonce"] = c.nonce
		}
		_, err := c.v.Verify(context.Background(), request(build(t, proofSpec{claims: claims})))
		if !errors.Is(err, c.want) || (c.want != nil && dpop.ErrorCode(err) != dpop.CodeUseNonce) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if !nonces.Valid(issued) {
		t.Errorf("a nonce is refused in its own step")
	}
	clock = clock.Add(time.Minute)
	if !nonces.Valid(issued) {
		t.Errorf("a nonce is refused in the step after its own")
	}
	clock = clock.Add(time.Minute)
	if nonces.Valid(issued) {
		t.Errorf("a nonce two steps old is accepted")
	}
}

// TestNewVerifierRefusesBadConfig: a symmetric algorithm, "none" and a missing ReplayCache
// are configuration errors.
func TestNewVerifierRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []dpop.Config{
		{Replay: &memReplay{}, Algorithms: []string{"HS256"}},
		{Replay: &memReplay{}, Algorithms: []string{"none"}},
		{},
	} {
		if _, err := dpop.NewVerifier(cfg); err == nil {
			t.Errorf("NewVerifier(%+v) succeeded", cfg)
		}
	}
}

// TestNormalizeURI pins RFC 3986 §6.2.2 and §6.2.3 normalisation.
func TestNormalizeURI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://Example.COM":             "https://example.com/",
		"https://example.com:443/a/b":     "https://example.com/a/b",
		"http://example.com:80/a":         "http://example.com/a",
		"http://example.com:8080/a?x=1#f": "http://example.com:8080/a",
		"https://example.com/a/./b/../c":  "https://example.com/a/c",
		"https://example.com/%7euser/%2f": "https://example.com/~user/%2F",
		"https://[::1]:8443/x":            "https://[::1]:8443/x",
		"https://example.com/a/b/":        "https://example.com/a/b/",
		"https://example.com/../../a":     "https://example.com/a",
		// Found by FuzzNormalizeURI: the host's percent-encodings (an IPv6 zone, an
		// escaped name) were written back unescaped, which is no URI.
		"https://[fe80::1%25eth0]:8443/x": "https://[fe80::1%25eth0]:8443/x",
		"https://%25":                     "https://%25/",
	} {
		if got, err := dpop.NormalizeURI(in); err != nil || got != want {
			t.Errorf("NormalizeURI(%q): got %q (%v), want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ftp://example.com/", "/relative", "https://user@example.com/", "https://example.com/%zz", "http://:", "http://:8080/"} {
		if got, err := dpop.NormalizeURI(bad); err == nil {
			t.Errorf("NormalizeURI(%q): got %q, want an error", bad, got)
		}
	}
}
