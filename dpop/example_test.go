package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v3"

	"github.com/gatehouse-id/gatehouse/dpop"
)

// A resource server checks the proof a client sent with its DPoP-bound access token, then
// compares the proof's key with the one the token is bound to (its cnf.jkt).
func ExampleVerifier_Verify() {
	// The client's key and one proof, as a client library would make them.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	accessToken := "eyJhbGciOiJFUzI1NiJ9.example.token"
	claims, _ := json.Marshal(map[string]any{
		"jti": "e1j3V_bKic8-LAEB", "htm": "GET", "htu": "https://api.example.com/orders",
		"iat": time.Now().Unix(), "ath": dpop.AccessTokenHash(accessToken),
	})
	jws, _ := signer.Sign(claims)
	proof, _ := jws.CompactSerialize()

	v, err := dpop.NewVerifier(dpop.Config{Replay: &memReplay{}})
	if err != nil {
		panic(err)
	}
	req := dpop.Request{
		Proofs:      []string{proof}, // r.Header.Values("DPoP")
		Method:      "GET",
		URL:         "https://api.example.com/orders?page=2",
		AccessToken: accessToken,
	}
	p, err := v.Verify(context.Background(), req)
	jkt, _ := dpop.Thumbprint(&jose.JSONWebKey{Key: key.Public()})
	fmt.Println(err, p.Thumbprint == jkt)

	_, err = v.Verify(context.Background(), req) // the same proof again
	fmt.Println(dpop.ErrorCode(err), err)
	// Output:
	// <nil> true
	// invalid_dpop_proof dpop: invalid proof: jti was used before
}
