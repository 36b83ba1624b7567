package dpop_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v3"

	"github.com/gatehouse-id/gatehouse/dpop"
)

// FuzzVerify feeds arbitrary DPoP proofs to the verifier: as raw header values, and as
// payloads (and typ headers) the harness signs with a real key, so the fuzzer reaches the
// claim checks behind the signature. Properties: every refusal matches ErrInvalidProof (the
// replay cache here never fails, and no nonce is demanded); an accepted proof's htm is the
// request's method, its htu names the request's URI, its jti is not empty, its iat lies in
// the window, its ath matches the access token, and its thumbprint is the signing key's;
// the same proof is refused a second time (ErrReplayed).
func FuzzVerify(f *testing.F) {
	signed := func(typ string, payload []byte) string {
		opts := (&jose.SignerOptions{EmbedJWK: true}).WithType(jose.ContentType(typ))
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: ecKey}, opts)
		if err != nil {
			f.Fatal(err)
		}
		jws, err := signer.Sign(payload)
		if err != nil {
			f.Fatal(err)
		}
		raw, err := jws.CompactSerialize()
		if err != nil {
			f.Fatal(err)
		}
		return raw
	}
	wantThumb, err := dpop.Thumbprint(&jose.JSONWebKey{Key: ecKey.Public()})
	if err != nil {
		f.Fatal(err)
	}
	ath := dpop.AccessTokenHash(testToken)
	good := `{"jti":"j1","htm":"GET","htu":"https://rs.example/api/things","iat":` + itoa(now.Unix()) + `,"ath":"` + ath + `"}`
	for _, seed := range []struct {
		raw, typ, payload string
	}{
		{"", "dpop+jwt", good},
		{"", "DPoP+JWT", strings.Replace(good, `"htu":"https://rs.example/api/things"`, `"htu":"HTTPS://RS.EXAMPLE:443/api/./things#f"`, 1)},
		{"", "dpop+jwt", strings.Replace(good, `"iat":`+itoa(now.Unix()), `"iat":1e400`, 1)},
		{"", "dpop+jwt", strings.Replace(good, `"iat":`+itoa(now.Unix()), `"iat":`+itoa(now.Unix())+`.5`, 1)},
		{"", "dpop+jwt", strings.Replace(good, `"htm":"GET"`, `"htm":"get"`, 1)},
		{"", "jwt", good},
		{"", "dpop+jwt", `{"jti":"","htm":"GET"}`},
		{"", "dpop+jwt", `[]`},
		{"eyJhbGciOiJub25lIiwidHlwIjoiZHBvcCtqd3QifQ.e30.", "", ""},
		{"a.b.c", "", ""},
		{"..", "", ""},
		{base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"","y":"","d":"AA"}}`)) + ".e30.AA", "", ""},
	} {
		f.Add(seed.raw, seed.typ, seed.payload)
	}
	f.Fuzz(func(t *testing.T, raw, typ, payload string) {
		v, err := dpop.NewVerifier(dpop.Config{Replay: &memReplay{}, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		proof := raw
		if proof == "" {
			proof = signed(typ, []byte(payload))
		}
		req := request(proof)
		p, err := v.Verify(context.Background(), req)
		if err != nil {
			if !errors.Is(err, dpop.ErrInvalidProof) {
				t.Fatalf("Verify(%q) = %v, want an ErrInvalidProof", proof, err)
			}
			return
		}
		if p.Thumbprint != wantThumb || p.ID == "" || p.Algorithm != "ES256" {
			t.Fatalf("Verify(%q) accepted %+v: wrong key, algorithm or empty jti", proof, p)
		}
		if d := p.IssuedAt.Sub(now); d < -dpop.DefaultWindow || d > dpop.DefaultWindow {
			t.Fatalf("Verify(%q) accepted iat %v, %v from now", proof, p.IssuedAt, d)
		}
		if !strings.Contains(payload, `"GET"`) || !strings.Contains(payload, ath) {
			t.Fatalf("Verify(%q) accepted a payload %q without htm GET or the ath", proof, payload)
		}
		if _, err := v.Verify(context.Background(), req); !errors.Is(err, dpop.ErrReplayed) {
			t.Fatalf("Verify of the same proof again = %v, want ErrReplayed", err)
		}
	})
}

// FuzzNormalizeURI feeds arbitrary URIs to the htu normalisation. Properties: it is
// idempotent; an accepted URI is an absolute http(s) URI with a lower-case scheme, a path
// beginning with "/", no query, no fragment and no dot segment; and it is what NormalizeURI
// gives for the input with a query and fragment added.
func FuzzNormalizeURI(f *testing.F) {
	for _, seed := range []string{
		"https://rs.example/api/things", "HTTPS://RS.example:443/a/../b/./c?x#y", "http://[::1]:80/%7e%2f",
		"https://u@h/", "https://h/%zz", "https://h", "ftp://h/", "https:///p", "https://h/a/..", "https://h/..//x",
		"http://H:8080", "https://[fe80::1%25eth0]/", "https://h/a%2e%2e/b", "https://h:/",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := dpop.NormalizeURI(raw)
		if err != nil {
			return
		}
		again, err := dpop.NormalizeURI(got)
		if err != nil || again != got {
			t.Fatalf("NormalizeURI(%q) = %q, not a fixed point: %q, %v", raw, got, again, err)
		}
		if !strings.HasPrefix(got, "http://") && !strings.HasPrefix(got, "https://") {
			t.Fatalf("NormalizeURI(%q) = %q: not http(s)", raw, got)
		}
		rest := got[strings.Index(got, "://")+3:]
		slash := strings.IndexByte(rest, '/')
		if slash < 0 || strings.ContainsAny(rest, "?#") {
			t.Fatalf("NormalizeURI(%q) = %q: no path, or a query or fragment", raw, got)
		}
		for _, seg := range strings.Split(rest[slash:], "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("NormalizeURI(%q) = %q keeps a dot segment", raw, got)
			}
		}
		if !strings.ContainsAny(raw, "?#") {
			if q, err := dpop.NormalizeURI(raw + "?q=1#f"); err != nil || q != got {
				t.Fatalf("NormalizeURI(%q + query) = %q, %v; want %q", raw, q, err, got)
			}
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
