package provider

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v3"
	"github.com/ory/fosite/token/jwt"

	"github.com/gatehouse-id/gatehouse/storage"
)

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

// openKeySet returns a key set over a store of its own (openKeyStore) with a key of every
// algorithm.
func openKeySet(t testing.TB) *keySet {
	t.Helper()
	store, seal := openKeyStore(t)
	ks := &keySet{store: store, sealer: seal, random: rand.Reader, now: time.Now,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), retention: time.Hour, reloadEvery: time.Hour}
	if err := ks.ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ks
}

// rawSigner answers ECDSA signatures as JWS writes them, r||s, as some HSMs do.
type rawSigner struct{ *ecdsa.PrivateKey }

func (s rawSigner) Sign(random io.Reader, digest []byte, _ crypto.SignerOpts) ([]byte, error) {
	r, ss, err := ecdsa.Sign(random, s.PrivateKey, digest)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 64)
	r.FillBytes(out[:32])
	ss.FillBytes(out[32:])
	return out, nil
}

// otherKeySigner names one key and signs with another: a misconfigured KMS key.
type otherKeySigner struct {
	crypto.Signer
	public crypto.PublicKey
}

func (s otherKeySigner) Public() crypto.PublicKey { return s.public }

// TestKeySignerAlgorithms: an external key signs, through go-jose, a JWS of its algorithm
// that go-jose verifies with the published key: RS256 and PS256 with one RSA key (the
// algorithm is the key's, not its type's), ES256 from signers answering in ASN.1 DER and
// in r||s, and EdDSA. A signer whose signature does not verify with the key it names is refused.
func TestKeySignerAlgorithms(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		alg    jose.SignatureAlgorithm
		signer crypto.Signer
		ok     bool
	}{
		{"RS256", jose.RS256, rsaKey, true},
		{"PS256 with the same RSA key", jose.PS256, rsaKey, true},
		{"ES256, ASN.1 DER as crypto/ecdsa and cloud KMSs answer", jose.ES256, ecKey, true},
		{"ES256, r||s", jose.ES256, rawSigner{ecKey}, true},
		{"EdDSA", jose.EdDSA, edKey, true},
		{"a signer of another key", jose.RS256, otherKeySigner{Signer: otherRSA, public: &rsaKey.PublicKey}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			public := jose.JSONWebKey{Key: c.signer.Public(), KeyID: "k1", Algorithm: string(c.alg), Use: "sig"}
			signer, err := jose.NewSigner(jose.SigningKey{Algorithm: c.alg,
				Key: &keySigner{signer: c.signer, public: &public, alg: c.alg, random: rand.Reader}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			jws, err := signer.Sign([]byte(`{"sub":"alice"}`))
			if !c.ok {
				if err == nil || !strings.Contains(err.Error(), "does not verify") {
					t.Fatalf("Sign = %v, want the signature withheld", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			compact, err := jws.CompactSerialize()
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := jose.ParseSigned(compact)
			if err != nil {
				t.Fatal(err)
			}
			if got := parsed.Signatures[0].Header.Algorithm; got != string(c.alg) {
				t.Errorf("alg %s, want %s", got, c.alg)
			}
			if _, err := parsed.Verify(public.Key); err != nil {
				t.Errorf("go-jose does not verify it: %v", err)
			}
		})
	}
	if err := checkPublicKey(algPS256, &rsaKey.PublicKey); err == nil {
		t.Error("checkPublicKey accepts PS256, which no key of the set is published for yet")
	}
	if err := checkPublicKey(AlgRS256, &ecKey.PublicKey); err == nil {
		t.Error("checkPublicKey accepts an EC key for RS256")
	}
}

// BenchmarkSignJWT measures one JWT as signJWT makes an ID token (claims, header, go-jose
// serialisation and the signature) for each algorithm: with the database's key, and with
// the same kind of key behind WithSigner (the crypto.Signer path, its signature verified).
func BenchmarkSignJWT(b *testing.B) {
	ks := openKeySet(b)
	for _, alg := range supportedAlgs {
		k, err := ks.activeKey(alg)
		if err != nil {
			b.Fatal(err)
		}
		ext, err := externalKey(ExternalKey{KID: "ext-" + alg, Algorithm: alg, Signer: k.signer.(crypto.Signer),
			CreatedAt: time.Now()}, rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		for name, key := range map[string]*signingKey{"database": k, "external": ext} {
			b.Run(alg+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					claims := jwt.MapClaims{"iss": "https://op.example", "sub": "alice", "aud": []string{"app"},
						"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "nonce": "n-0S6_WzA2Mj"}
					if _, _, err := signJWT(key, claims, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
