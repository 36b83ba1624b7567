package rsasign

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func testKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// openSSLHere reports whether this build on this host can load libcrypto: the table's
// expectations follow from it, so the test holds with and without cgo.
func openSSLHere(t *testing.T) bool {
	t.Helper()
	_, err := loadOpenSSL(DefaultLibraries())
	t.Logf("OpenSSL here: %v", err == nil)
	return err == nil
}

// TestBackends: every backend signs what crypto/rsa signs, byte for byte (PKCS #1 v1.5 is
// deterministic), and its signatures verify with crypto/rsa; auto picks OpenSSL exactly when
// libcrypto loads, openssl fails without it.
func TestBackends(t *testing.T) {
	priv := testKey(t)
	here := openSSLHere(t)
	cases := []struct {
		backend Backend
		want    Backend // "" wants Open to fail with ErrUnavailable
	}{
		{"", map[bool]Backend{true: OpenSSL, false: Go}[here]},
		{Auto, map[bool]Backend{true: OpenSSL, false: Go}[here]},
		{OpenSSL, map[bool]Backend{true: OpenSSL, false: ""}[here]},
		{Go, Go},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.backend), func(t *testing.T) {
			eng, err := Open(Options{Backend: c.backend})
			if c.want == "" {
				if !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Open: got %v, want ErrUnavailable", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if eng.Backend() != c.want || eng.Reason() == "" {
				t.Fatalf("backend: got %s (%q), want %s with a reason", eng.Backend(), eng.Reason(), c.want)
			}
			s, err := eng.New(priv)
			if err != nil {
				t.Fatal(err)
			}
			if s.Backend() != c.want {
				t.Errorf("signer backend: got %s, want %s", s.Backend(), c.want)
			}
			for i := range 20 {
				digest := sha256.Sum256([]byte(fmt.Sprintf("payload %d", i)))
				got, err := s.Sign(rand.Reader, digest[:], crypto.SHA256)
				if err != nil {
					t.Fatalf("Sign: %v", err)
				}
				if err := rsa.VerifyPKCS1v15(&priv.PublicKey, crypto.SHA256, digest[:], got); err != nil {
					t.Fatalf("signature %d does not verify with crypto/rsa: %v", i, err)
				}
				want, _ := rsa.SignPKCS1v15(nil, priv, crypto.SHA256, digest[:])
				if !bytes.Equal(got, want) {
					t.Fatalf("signature %d differs from crypto/rsa's", i)
				}
			}
		})
	}
}

// TestFallback: a libcrypto that cannot be loaded makes auto sign with Go and say why,
// makes openssl fail, and does not stop a later Open from loading the real one (Init is
// once per process, so a failed candidate must never reach it).
func TestFallback(t *testing.T) {
	bogus := Options{Libraries: []string{"libcrypto-gatehouse-test-missing.so.0"}}
	eng, err := Open(bogus)
	if err != nil {
		t.Fatalf("auto with a missing library: %v", err)
	}
	// The reason names the library, or (built without cgo) the missing cgo.
	if r := eng.Reason(); eng.Backend() != Go || !strings.Contains(r, "libcrypto-gatehouse-test-missing.so.0") && !strings.Contains(r, "cgo") {
		t.Errorf("auto with a missing library: got %s (%q), want go naming the library", eng.Backend(), r)
	}
	priv := testKey(t)
	s, err := eng.New(priv)
	if err != nil || s.Backend() != Go {
		t.Fatalf("New: got %v, %v; want a Go signer", s, err)
	}
	digest := sha256.Sum256([]byte("payload"))
	if sig, err := s.Sign(nil, digest[:], crypto.SHA256); err != nil || rsa.VerifyPKCS1v15(&priv.PublicKey, crypto.SHA256, digest[:], sig) != nil {
		t.Errorf("fallback signature: %v", err)
	}
	bogus.Backend = OpenSSL
	if _, err := Open(bogus); !errors.Is(err, ErrUnavailable) {
		t.Errorf("openssl with a missing library: got %v, want ErrUnavailable", err)
	}
	if !openSSLHere(t) {
		t.Skip("no libcrypto in this build or on this host")
	}
	if eng, err := Open(Options{Backend: OpenSSL}); err != nil || eng.Backend() != OpenSSL {
		t.Errorf("openssl after a missing library: got %v, %v", eng, err)
	}
}

// TestFaultySignatureWithheld: a signature that does not verify (a CRT fault, say) is never
// returned. Without the check in Sign the corrupted signature would come back.
func TestFaultySignatureWithheld(t *testing.T) {
	priv := testKey(t)
	s := &Signer{priv: priv, raw: func(digest []byte) ([]byte, error) {
		sig, err := rsa.SignPKCS1v15(nil, priv, crypto.SHA256, digest)
		sig[len(sig)/2] ^= 1
		return sig, err
	}}
	digest := sha256.Sum256([]byte("payload"))
	sig, err := s.Sign(nil, digest[:], crypto.SHA256)
	if err == nil || sig != nil {
		t.Fatalf("faulty signature: got %x, %v; want nothing and an error", sig, err)
	}
}

// TestSignRefuses: the signer makes RS256 signatures only.
func TestSignRefuses(t *testing.T) {
	eng, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := eng.New(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	d256 := sha256.Sum256(nil)
	for name, c := range map[string]struct {
		digest []byte
		opts   crypto.SignerOpts
	}{
		"SHA-512":       {make([]byte, 64), crypto.SHA512},
		"no hash":       {d256[:], nil},
		"PSS":           {d256[:], &rsa.PSSOptions{Hash: crypto.SHA384}},
		"short SHA-256": {d256[:31], crypto.SHA256},
	} {
		if _, err := s.Sign(nil, c.digest, c.opts); err == nil {
			t.Errorf("%s: signed, want an error", name)
		}
	}
	if _, err := Open(Options{Backend: "boringssl"}); err == nil {
		t.Error("unknown backend: opened, want an error")
	}
	if _, err := eng.New(nil); err == nil {
		t.Error("nil key: got a signer, want an error")
	}
}

// TestConcurrentSigning: one key signs from many goroutines at once (run with -race).
func TestConcurrentSigning(t *testing.T) {
	priv := testKey(t)
	eng, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := eng.New(priv)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				digest := sha256.Sum256([]byte(fmt.Sprintf("%d/%d", g, i)))
				sig, err := s.Sign(nil, digest[:], crypto.SHA256)
				if err == nil {
					err = rsa.VerifyPKCS1v15(&priv.PublicKey, crypto.SHA256, digest[:], sig)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkSign: one RS256 signature of a SHA-256 digest per backend; openssl-unchecked
// leaves out the crypto/rsa verification Sign adds, and verify is that verification alone.
func BenchmarkSign(b *testing.B) {
	priv := testKey(b)
	digest := sha256.Sum256([]byte("payload"))
	sig, _ := rsa.SignPKCS1v15(nil, priv, crypto.SHA256, digest[:])
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if err := rsa.VerifyPKCS1v15(&priv.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, backend := range []Backend{Go, OpenSSL} {
		eng, err := Open(Options{Backend: backend})
		if err != nil {
			b.Logf("%s: %v", backend, err)
			continue
		}
		s, err := eng.New(priv)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(backend), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Sign(nil, digest[:], crypto.SHA256); err != nil {
					b.Fatal(err)
				}
			}
		})
		if s.raw != nil {
			b.Run("openssl-unchecked", func(b *testing.B) {
				for b.Loop() {
					if _, err := s.raw(digest[:]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
