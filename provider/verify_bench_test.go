package provider

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ory/fosite/token/jwt"
)

// BenchmarkParseJWT measures the signature check of the verify path (keySet.parse) for each
// algorithm the provider signs with.
func BenchmarkParseJWT(b *testing.B) {
	ctx := context.Background()
	store, seal := openKeyStore(b)
	ks := &keySet{store: store, sealer: seal, random: rand.Reader, now: time.Now,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), retention: time.Hour, reloadEvery: time.Hour}
	if err := ks.ensure(ctx); err != nil {
		b.Fatal(err)
	}
	for _, alg := range supportedAlgs {
		k, err := ks.activeKey(alg)
		if err != nil {
			b.Fatal(err)
		}
		token, _, err := signJWT(k, jwt.MapClaims{"sub": "x", "exp": time.Now().Add(time.Hour).Unix()}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(alg, func(b *testing.B) {
			for b.Loop() {
				if _, err := ks.parse(token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
