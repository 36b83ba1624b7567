package provider

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ory/fosite/token/jwt"

	"github.com/gatehouse-id/gatehouse/internal/rsasign"
	"github.com/gatehouse-id/gatehouse/storage"
)

// rsaKeySets opens one store with a key set in it and returns, per RSA backend available
// here, a key set over that store signing with it: the same keys, different signers.
func rsaKeySets(t testing.TB) map[rsasign.Backend]*keySet {
	t.Helper()
	ctx := context.Background()
	store, seal := openKeyStore(t)
	sets := map[rsasign.Backend]*keySet{}
	for _, backend := range []rsasign.Backend{rsasign.Go, rsasign.OpenSSL} {
		eng, err := rsasign.Open(rsasign.Options{Backend: backend})
		if err != nil {
			t.Logf("%s: %v", backend, err)
			continue
		}
		ks := &keySet{store: store, sealer: seal, random: rand.Reader, now: time.Now, rsa: eng,
			log: slog.New(slog.NewTextHandler(io.Discard, nil)), retention: time.Hour, reloadEvery: time.Hour}
		if err := ks.ensure(ctx); err != nil {
			t.Fatal(err)
		}
		sets[backend] = ks
	}
	return sets
}

// TestRSABackendsSignTheSameJWT: an RS256 JWT signed through OpenSSL is byte for byte the one
// crypto/rsa signs (PKCS #1 v1.5 is deterministic), and it verifies through the key set.
func TestRSABackendsSignTheSameJWT(t *testing.T) {
	sets := rsaKeySets(t)
	if sets[rsasign.OpenSSL] == nil {
		t.Skip("OpenSSL is unavailable in this build or on this host")
	}
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": "https://op.example", "sub": "alice", "aud": []string{"app"}, "exp": time.Now().Add(time.Hour).Unix()}
	}
	tokens := map[rsasign.Backend]string{}
	for backend, ks := range sets {
		k, err := ks.activeKey(AlgRS256)
		if err != nil {
			t.Fatal(err)
		}
		if got := k.signer.(*rsaSigner).s.Backend(); got != backend {
			t.Fatalf("key set of %s signs with %s", backend, got)
		}
		raw, _, err := signJWT(k, claims(), map[string]any{"typ": "JWT"})
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		if _, err := ks.parse(raw); err != nil {
			t.Errorf("%s: the token does not verify: %v", backend, err)
		}
		tokens[backend] = raw
	}
	if tokens[rsasign.OpenSSL] != tokens[rsasign.Go] {
		t.Errorf("OpenSSL and Go signed the same claims differently:\n%s\n%s", tokens[rsasign.OpenSSL], tokens[rsasign.Go])
	}
}

// BenchmarkSignJWT measures one RS256 JWT as signJWT makes an ID token (claims, header,
// go-jose serialisation and the signature) per RSA backend.
func BenchmarkSignJWT(b *testing.B) {
	for backend, ks := range rsaKeySets(b) {
		k, err := ks.activeKey(AlgRS256)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("RS256-"+string(backend), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				claims := jwt.MapClaims{"iss": "https://op.example", "sub": "alice", "aud": []string{"app"},
					"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "nonce": "n-0S6_WzA2Mj"}
				if _, _, err := signJWT(k, claims, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// openKeyStore opens a migrated SQLite store of its own and a sealer, what a keySet needs
// underneath, for the tests and benchmarks of signing keys.
func openKeyStore(t testing.TB) (*storage.Store, sealer) {
	t.Helper()
	ctx := context.Background()
	store, err := storage.Open(ctx, "sqlite:"+t.TempDir()+"/keys.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	seal, err := newSealer([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	return store, seal
}
