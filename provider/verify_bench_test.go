package provider

import (
	"testing"
	"time"

	"github.com/ory/fosite/token/jwt"
)

// BenchmarkParseJWT measures the signature check of the verify path (keySet.parse) for each
// algorithm the provider signs with.
func BenchmarkParseJWT(b *testing.B) {
	ks := openKeySet(b)
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
