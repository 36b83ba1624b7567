package provider_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestSigningAlgorithms: for each algorithm the provider signs with, access tokens
// (--access-token-alg) and a client's ID tokens (--id-token-alg), from the code exchange and
// from a refresh, verify with go-oidc against the published JWKS, whose key for the token's
// kid has the algorithm's key type; the ID token's at_hash is the algorithm's (SHA-512 for
// EdDSA, which go-oidc checks), and the provider's own fast path (UserInfo) accepts the
// access token. Discovery lists every algorithm.
func TestSigningAlgorithms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		alg      string
		kty, crv string
	}{
		{provider.AlgRS256, "RSA", ""},
		{provider.AlgES256, "EC", "P-256"},
		{provider.AlgEdDSA, "OKP", "Ed25519"},
	}
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, c := range cases {
			t.Run(c.alg, func(t *testing.T) {
				e := newEnv(t, b, provider.Config{AccessTokenAlg: c.alg})
				alice := e.user(t, "alice@example.com", "Alice")
				client := e.client(t, provider.ClientSpec{ID: "app", FirstParty: true, IDTokenAlg: c.alg})
				rp := e.relyingParty(t, client)
				if got := rp.op.Endpoint(); got.TokenURL == "" {
					t.Fatal("discovery: no token endpoint")
				}
				var disc struct {
					Algs []string `json:"id_token_signing_alg_values_supported"`
				}
				if err := rp.op.Claims(&disc); err != nil || !slices.Contains(disc.Algs, c.alg) {
					t.Errorf("discovery id_token_signing_alg_values_supported: got %v (%v), want it to list %s", disc.Algs, err, c.alg)
				}

				// The code exchange: rp verifies the ID token through the JWKS, at_hash included.
				_, tok := rp.signIn(t, e, e.browser(t), alice.Email)
				wantSignedWith(t, e, "ID token", tok.rawIDToken, c.alg, c.kty, c.crv)
				wantSignedWith(t, e, "access token", tok.AccessToken, c.alg, c.kty, c.crv)
				verifyAccessTokenWithOIDC(t, e, tok.AccessToken, c.alg)
				if r := e.userinfo(t, tok.AccessToken); r.status != http.StatusOK || r.body["sub"] != alice.ID {
					t.Errorf("userinfo with the %s access token: got %s, want 200 for %s", c.alg, r, alice.ID)
				}

				// A refresh signs both again; the new ID token's at_hash matches the new token.
				refreshed, err := rp.config.TokenSource(rp.ctx, &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
				if err != nil {
					t.Fatalf("refresh: %v", err)
				}
				raw, _ := refreshed.Extra("id_token").(string)
				rp.verifyIDToken(t, raw, refreshed.AccessToken)
				wantSignedWith(t, e, "refreshed ID token", raw, c.alg, c.kty, c.crv)
				verifyAccessTokenWithOIDC(t, e, refreshed.AccessToken, c.alg)
				if r := e.userinfo(t, refreshed.AccessToken); r.status != http.StatusOK {
					t.Errorf("userinfo with the refreshed %s access token: got %s, want 200", c.alg, r)
				}
			})
		}
	})
}

// wantSignedWith asserts that the JWT raw names alg and a kid the JWKS publishes with the
// key type kty (and curve crv, when set) and that algorithm.
func wantSignedWith(t *testing.T, e *env, what, raw, alg, kty, crv string) {
	t.Helper()
	header, _ := decodeJWT(t, raw)
	if header["alg"] != alg {
		t.Errorf("%s alg: got %v, want %s", what, header["alg"], alg)
	}
	kid, _ := header["kid"].(string)
	for _, k := range e.jwks(t) {
		if k["kid"] != kid {
			continue
		}
		if k["kty"] != kty || k["alg"] != alg || (crv != "" && k["crv"] != crv) || k["use"] != "sig" {
			t.Errorf("%s: JWKS key %s is %v, want kty %s crv %q alg %s use sig", what, kid, k, kty, crv, alg)
		}
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
			if _, ok := k[private]; ok {
				t.Errorf("%s: JWKS key %s publishes its private part %q", what, kid, private)
			}
		}
		return
	}
	t.Errorf("%s kid %q is not in the JWKS", what, kid)
}

// verifyAccessTokenWithOIDC verifies an access token as a resource server would with
// go-oidc: signature through the JWKS (alg only), issuer and expiry.
func verifyAccessTokenWithOIDC(t *testing.T, e *env, raw, alg string) {
	t.Helper()
	keys := oidc.NewRemoteKeySet(e.ctx, e.issuer+"/.well-known/jwks.json")
	v := oidc.NewVerifier(e.issuer, keys, &oidc.Config{SkipClientIDCheck: true, SupportedSigningAlgs: []string{alg}})
	if _, err := v.Verify(context.WithoutCancel(e.ctx), raw); err != nil {
		t.Errorf("go-oidc verifying the %s access token through the JWKS: %v", alg, err)
	}
}
