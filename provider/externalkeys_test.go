package provider_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// kmsKeys is a KeySource as an embedder's KMS adapter would be: keys Gatehouse never sees
// the private part of, each behind a crypto.Signer that counts its signatures.
type kmsKeys struct {
	mu    sync.Mutex
	keys  []provider.ExternalKey
	signs map[string]*atomic.Int64 // by kid
	fail  bool                     // SigningKeys answers an error (the KMS is down)
}

func (s *kmsKeys) SigningKeys(context.Context) ([]provider.ExternalKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return nil, errors.New("kms unreachable")
	}
	return slices.Clone(s.keys), nil
}

// add makes a key of alg named kid, created at createdAt.
func (s *kmsKeys) add(t *testing.T, kid, alg string, createdAt time.Time) {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case provider.AlgRS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case provider.AlgES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.signs == nil {
		s.signs = map[string]*atomic.Int64{}
	}
	n := &atomic.Int64{}
	s.signs[kid] = n
	s.keys = append(s.keys, provider.ExternalKey{KID: kid, Algorithm: alg, Signer: countingSigner{priv, n}, CreatedAt: createdAt})
}

// retire marks the key kid replaced at at.
func (s *kmsKeys) retire(kid string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.keys {
		if s.keys[i].KID == kid {
			s.keys[i].RetiredAt = &at
		}
	}
}

func (s *kmsKeys) signatures(kid string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signs[kid].Load()
}

func (s *kmsKeys) setFailing(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = fail
}

// countingSigner is a private key that only signs, counting.
type countingSigner struct {
	key crypto.Signer
	n   *atomic.Int64
}

func (c countingSigner) Public() crypto.PublicKey { return c.key.Public() }

func (c countingSigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	c.n.Add(1)
	return c.key.Sign(r, digest, opts)
}

// offsetClock is the real clock plus an offset the test moves forward: fosite stamps exp and
// iat with the real clock, the key set decides with this one.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

const (
	extReload   = time.Minute
	extLifespan = 10 * time.Minute
)

// extActivation and extRetention are keyActivation and keyRetention of extConfig.
var (
	extActivation = extReload + extReload/2
	extRetention  = 2*extReload + extLifespan + 5*time.Minute
)

func extConfig() provider.Config {
	return provider.Config{KeyReloadInterval: extReload, AccessTokenLifespan: extLifespan, IDTokenLifespan: extLifespan}
}

// issued is what one token response's ID token and access token were signed with.
type issued struct{ idToken, accessToken, refreshToken, idKID, atKID string }

// TestExternalSignerSignsAndRotates: with WithSigner, a KMS-like key source (RS256 and ES256
// keys behind crypto.Signers) signs the ID tokens and the access tokens of a code flow and
// of refreshes, which go-oidc verifies against the published JWKS and the provider's own
// endpoints accept. The source rotates: a new key is published at once but signs only once
// its activation has passed; the retired key keeps verifying what it signed, in the JWKS,
// until its retention ends, then leaves. The database keeps the key of the algorithm the
// source lacks (EdDSA) and makes none of the others. A failing source leaves the keys as
// they were.
func TestExternalSignerSignsAndRotates(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		clock := &offsetClock{}
		src := &kmsKeys{}
		src.add(t, "kms-rs-1", provider.AlgRS256, clock.now().Add(-time.Hour))
		src.add(t, "kms-es-1", provider.AlgES256, clock.now().Add(-time.Hour))
		e := newEnv(t, b, extConfig(), provider.WithSigner(src), provider.WithClock(clock.now))
		ctx := context.Background()
		alice := e.user(t, "alice@example.com", "Alice")
		client := e.client(t, provider.ClientSpec{ID: "app", FirstParty: true})
		rp := e.relyingParty(t, client)

		_, tok := rp.signIn(t, e, e.browser(t), alice.Email) // go-oidc verifies the ID token
		first := issuedOf(t, tok.rawIDToken, tok.AccessToken, tok.RefreshToken)
		if first.idKID != "kms-rs-1" || first.atKID != "kms-es-1" {
			t.Fatalf("signed by %s (ID token) and %s (access token), want kms-rs-1 and kms-es-1", first.idKID, first.atKID)
		}
		if src.signatures("kms-rs-1") == 0 || src.signatures("kms-es-1") == 0 {
			t.Fatal("the source's signers were not asked to sign")
		}
		verifyAccessTokenWithOIDC(t, e, first.accessToken, provider.AlgES256)
		if r := e.userinfo(t, first.accessToken); r.status != http.StatusOK {
			t.Fatalf("userinfo with the externally signed access token: %s", r)
		}
		wantKIDs(t, e, []string{"kms-es-1", "kms-rs-1"}, []string{provider.AlgEdDSA})
		for _, k := range e.p.Keys() {
			if k.External != (k.Algorithm != provider.AlgEdDSA) {
				t.Errorf("key %s (%s): External %v", k.KID, k.Algorithm, k.External)
			}
		}

		// The source rotates both keys. The new ones are published at the next reload but
		// the old ones sign until the new ones activate.
		rotatedAt := clock.now()
		src.add(t, "kms-rs-2", provider.AlgRS256, rotatedAt)
		src.add(t, "kms-es-2", provider.AlgES256, rotatedAt)
		src.retire("kms-rs-1", rotatedAt)
		src.retire("kms-es-1", rotatedAt)
		clock.advance(extReload)
		if err := e.p.ReloadKeys(ctx); err != nil {
			t.Fatal(err)
		}
		wantKIDs(t, e, []string{"kms-es-1", "kms-es-2", "kms-rs-1", "kms-rs-2"}, []string{provider.AlgEdDSA})
		before := refreshed(t, e, rp, client, first.refreshToken)
		if before.idKID != "kms-rs-1" || before.atKID != "kms-es-1" {
			t.Errorf("before activation: signed by %s and %s, want the old keys", before.idKID, before.atKID)
		}

		clock.advance(extActivation - extReload + time.Second)
		if err := e.p.ReloadKeys(ctx); err != nil {
			t.Fatal(err)
		}
		after := refreshed(t, e, rp, client, before.refreshToken)
		if after.idKID != "kms-rs-2" || after.atKID != "kms-es-2" {
			t.Errorf("after activation: signed by %s and %s, want kms-rs-2 and kms-es-2", after.idKID, after.atKID)
		}
		// What the old keys signed still verifies through the JWKS, for a relying party that
		// fetches it afresh. (The provider's own check of access tokens, which the start
		// of the test covers, is left out here: the refresh since revoked that token, and
		// this test's clock runs ahead of fosite's.)
		fresh := oidc.NewVerifier(e.issuer, oidc.NewRemoteKeySet(ctx, e.issuer+"/.well-known/jwks.json"), &oidc.Config{ClientID: client.ClientID})
		if _, err := fresh.Verify(ctx, before.idToken); err != nil {
			t.Errorf("the ID token of the retired key: %v", err)
		}
		verifyAccessTokenWithOIDC(t, e, before.accessToken, provider.AlgES256)
		verifyAccessTokenWithOIDC(t, e, after.accessToken, provider.AlgES256)

		// A source that fails leaves the keys as they were.
		src.setFailing(true)
		if err := e.p.ReloadKeys(ctx); err == nil {
			t.Error("ReloadKeys with a failing source: no error")
		}
		wantKIDs(t, e, []string{"kms-es-1", "kms-es-2", "kms-rs-1", "kms-rs-2"}, []string{provider.AlgEdDSA})
		src.setFailing(false)

		// Once the retention has passed since the retirement, the old keys leave the JWKS,
		// though the source still lists them.
		clock.offset.Store(int64(time.Duration(rotatedAt.Sub(time.Now())) + extRetention + time.Second))
		if err := e.p.ReloadKeys(ctx); err != nil {
			t.Fatal(err)
		}
		wantKIDs(t, e, []string{"kms-es-2", "kms-rs-2"}, []string{provider.AlgEdDSA})
		if last := refreshed(t, e, rp, client, after.refreshToken); last.idKID != "kms-rs-2" || last.atKID != "kms-es-2" {
			t.Errorf("after the retention: signed by %s and %s, want kms-rs-2 and kms-es-2", last.idKID, last.atKID)
		}
	})
}

// TestExternalSignerTakesOverFromTheDatabase: a deployment that signed with the database's
// keys starts with a key source for RS256. The database's RS256 key keeps signing until the
// source's key activates and stays published for the retention after the source's key was
// added, so the ID tokens it signed keep verifying; then it leaves the JWKS. The database's
// ES256 key, which the source does not replace, signs throughout.
func TestExternalSignerTakesOverFromTheDatabase(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		store := b.Open(t)
		clock := &offsetClock{}
		config := func(string) provider.Config { return extConfig() }
		old := newEnvOnStore(t, store, config, provider.WithClock(clock.now))
		var dbRS256, dbES256 string
		for _, k := range old.p.Keys() {
			switch k.Algorithm {
			case provider.AlgRS256:
				dbRS256 = k.KID
			case provider.AlgES256:
				dbES256 = k.KID
			}
		}

		src := &kmsKeys{}
		src.add(t, "kms-rs-1", provider.AlgRS256, clock.now())
		e := newEnvOnStore(t, store, config, provider.WithSigner(src), provider.WithClock(clock.now))
		alice := e.user(t, "alice@example.com", "Alice")
		client := e.client(t, provider.ClientSpec{ID: "app", FirstParty: true})
		rp := e.relyingParty(t, client)
		_, tok := rp.signIn(t, e, e.browser(t), alice.Email)
		first := issuedOf(t, tok.rawIDToken, tok.AccessToken, tok.RefreshToken)
		if first.idKID != dbRS256 || first.atKID != dbES256 {
			t.Fatalf("before the source's key activates: signed by %s and %s, want the database's %s and %s", first.idKID, first.atKID, dbRS256, dbES256)
		}
		wantKIDs(t, e, []string{dbRS256, "kms-rs-1"}, []string{provider.AlgES256, provider.AlgEdDSA})

		clock.advance(extActivation + time.Second)
		if err := e.p.ReloadKeys(ctx); err != nil {
			t.Fatal(err)
		}
		next := refreshed(t, e, rp, client, first.refreshToken)
		if next.idKID != "kms-rs-1" || next.atKID != dbES256 {
			t.Errorf("after activation: signed by %s and %s, want kms-rs-1 and %s", next.idKID, next.atKID, dbES256)
		}
		if _, err := oidc.NewVerifier(e.issuer, oidc.NewRemoteKeySet(ctx, e.issuer+"/.well-known/jwks.json"),
			&oidc.Config{ClientID: client.ClientID}).Verify(ctx, first.idToken); err != nil {
			t.Errorf("the ID token the database's key signed: %v", err)
		}
		if _, err := e.p.RotateKeys(ctx); err != nil {
			t.Fatal(err)
		}
		for _, k := range e.p.Keys() {
			if k.Algorithm == provider.AlgRS256 && !k.External && k.KID != dbRS256 {
				t.Errorf("keys rotate made a database RS256 key (%s) though the source holds RS256", k.KID)
			}
		}

		clock.advance(extRetention)
		if err := e.p.ReloadKeys(ctx); err != nil {
			t.Fatal(err)
		}
		for _, k := range e.jwks(t) {
			if k["kid"] == dbRS256 {
				t.Errorf("the database's RS256 key %s is still published after the retention", dbRS256)
			}
		}
	})
}

// issuedOf decodes the kids of a token response.
func issuedOf(t *testing.T, idToken, accessToken, refreshToken string) issued {
	t.Helper()
	idHeader, _ := decodeJWT(t, idToken)
	atHeader, _ := decodeJWT(t, accessToken)
	idKID, _ := idHeader["kid"].(string)
	atKID, _ := atHeader["kid"].(string)
	return issued{idToken: idToken, accessToken: accessToken, refreshToken: refreshToken, idKID: idKID, atKID: atKID}
}

// refreshed refreshes refreshToken and verifies the new ID token with go-oidc.
func refreshed(t *testing.T, e *env, rp *relyingParty, client provider.ClientInfo, refreshToken string) issued {
	t.Helper()
	r := e.refresh(t, client, refreshToken)
	if r.status != http.StatusOK {
		t.Fatalf("refresh: %s", r)
	}
	idToken, _ := r.body["id_token"].(string)
	accessToken, _ := r.body["access_token"].(string)
	next, _ := r.body["refresh_token"].(string)
	rp.verifyIDToken(t, idToken, accessToken)
	return issuedOf(t, idToken, accessToken, next)
}

// wantKIDs fails t unless the JWKS publishes exactly the kids want, plus one key of each
// algorithm in dbAlgs (the database's), and nothing else.
func wantKIDs(t *testing.T, e *env, want []string, dbAlgs []string) {
	t.Helper()
	var got []string
	dbCount := map[string]int{}
	for _, k := range e.jwks(t) {
		kid, _ := k["kid"].(string)
		if slices.Contains(want, kid) {
			got = append(got, kid)
			continue
		}
		alg, _ := k["alg"].(string)
		dbCount[alg]++
		if !slices.Contains(dbAlgs, alg) {
			t.Errorf("JWKS publishes %s (%s), want only %v and one key of %v", kid, alg, want, dbAlgs)
		}
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("JWKS kids of the source %v, want %v", got, want)
	}
	for _, alg := range dbAlgs {
		if dbCount[alg] != 1 {
			t.Errorf("JWKS has %d database keys of %s, want 1", dbCount[alg], alg)
		}
	}
}
