package storagetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/storage"
)

// testClientAuthentication: a client's authentication settings (migration 12) survive
// CreateClient, ClientByID and GetClient, UpdateClient rewrites them but not the sealed
// secret, SetClientSecret replaces hash and sealed copy together, and a client created
// without them reads back as the legacy confidential client.
func testClientAuthentication(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	jwks := []byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"k1"}]}`)
	c := newClient("jwt-client")
	c.ClientAuthentication = storage.ClientAuthentication{
		TokenEndpointAuthMethod: storage.AuthMethodSecretJWT,
		JWKS:                    jwks,
		SecretSealed:            []byte{0x00, 0x10, 0xff, 0x7f},
		RequestObjectSigningAlg: "ES256",
	}
	mustNoErr(t, "CreateClient", s.CreateClient(ctx, c))
	got, err := s.ClientByID(ctx, c.ID)
	mustNoErr(t, "ClientByID", err)
	if got.TokenEndpointAuthMethod != storage.AuthMethodSecretJWT || !bytes.Equal(got.JWKS, jwks) ||
		!bytes.Equal(got.SecretSealed, c.SecretSealed) || got.RequestObjectSigningAlg != "ES256" || got.JWKSURI != "" {
		t.Errorf("ClientByID: got %+v, want the created authentication settings", got.ClientAuthentication)
	}
	fc, err := s.GetClient(ctx, c.ID)
	mustNoErr(t, "GetClient", err)
	oc, ok := fc.(fosite.OpenIDConnectClient)
	if !ok {
		t.Fatalf("GetClient: %T is not a fosite.OpenIDConnectClient", fc)
	}
	if set := oc.GetJSONWebKeys(); set == nil || len(set.Key("k1")) != 1 || set.Keys[0].Use != "sig" {
		t.Errorf("GetJSONWebKeys: got %+v, want key k1 marked sig", set)
	}
	if got, want := oc.GetTokenEndpointAuthMethod(), storage.AuthMethodSecretJWT; got != want {
		t.Errorf("GetTokenEndpointAuthMethod: got %q, want %q", got, want)
	}

	up := *got
	up.ClientAuthentication = storage.ClientAuthentication{
		TokenEndpointAuthMethod: storage.AuthMethodPrivateKeyJWT,
		JWKSURI:                 "https://rp.example/jwks.json",
		SecretSealed:            []byte("must not be written by UpdateClient"),
	}
	mustNoErr(t, "UpdateClient", s.UpdateClient(ctx, &up))
	got, err = s.ClientByID(ctx, c.ID)
	mustNoErr(t, "ClientByID after UpdateClient", err)
	if got.TokenEndpointAuthMethod != storage.AuthMethodPrivateKeyJWT || got.JWKSURI != "https://rp.example/jwks.json" ||
		len(got.JWKS) != 0 || got.RequestObjectSigningAlg != "" || !bytes.Equal(got.SecretSealed, c.SecretSealed) {
		t.Errorf("after UpdateClient: got %+v, want the new settings and the sealed secret kept", got.ClientAuthentication)
	}

	mustNoErr(t, "SetClientSecret", s.SetClientSecret(ctx, c.ID, []byte("hash-2"), []byte("sealed-2")))
	got, err = s.ClientByID(ctx, c.ID)
	mustNoErr(t, "ClientByID after SetClientSecret", err)
	if !bytes.Equal(got.SecretHash, []byte("hash-2")) || !bytes.Equal(got.SecretSealed, []byte("sealed-2")) {
		t.Errorf("after SetClientSecret: hash %q sealed %q, want hash-2 and sealed-2", got.SecretHash, got.SecretSealed)
	}
	mustNoErr(t, "SetClientSecret(nil)", s.SetClientSecret(ctx, c.ID, nil, nil))
	got, err = s.ClientByID(ctx, c.ID)
	mustNoErr(t, "ClientByID after clearing the secret", err)
	if len(got.SecretHash) != 0 || len(got.SecretSealed) != 0 {
		t.Errorf("after SetClientSecret(nil, nil): hash %q sealed %q, want both empty", got.SecretHash, got.SecretSealed)
	}

	legacy := mustCreateClient(t, s, "legacy")
	got, err = s.ClientByID(ctx, legacy.ID)
	mustNoErr(t, "ClientByID(legacy)", err)
	if got.TokenEndpointAuthMethod != "" || !got.LegacyAuthMethod() || got.AuthMethod() != storage.AuthMethodSecretBasic {
		t.Errorf("legacy client: method %q, legacy %v, AuthMethod %q; want empty, true, client_secret_basic",
			got.TokenEndpointAuthMethod, got.LegacyAuthMethod(), got.AuthMethod())
	}
}
