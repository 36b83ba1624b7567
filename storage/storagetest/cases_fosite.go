package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/ory/fosite"
)

// fositeKind is one kind of row keyed by a signature (or, for OpenID Connect sessions, by
// the authorization code).
type fositeKind struct {
	name   string
	create func(s *storage.Store, ctx context.Context, key string, r fosite.Requester) error
	get    func(s *storage.Store, ctx context.Context, key string, session fosite.Session) (fosite.Requester, error)
	// del is nil for rows that are never deleted one by one (codes are invalidated).
	del func(s *storage.Store, ctx context.Context, key string) error
}

func fositeKinds() []fositeKind {
	return []fositeKind{
		{
			name:   "authorization code",
			create: (*storage.Store).CreateAuthorizeCodeSession,
			get:    (*storage.Store).GetAuthorizeCodeSession,
		},
		{
			name: "refresh token",
			create: func(s *storage.Store, ctx context.Context, key string, r fosite.Requester) error {
				return s.CreateRefreshTokenSession(ctx, key, "access-of-"+key, r)
			},
			get: (*storage.Store).GetRefreshTokenSession,
			del: (*storage.Store).DeleteRefreshTokenSession,
		},
		{
			name: "pkce request",
			create: func(s *storage.Store, ctx context.Context, key string, r fosite.Requester) error {
				if err := ensureCode(s, ctx, key, r); err != nil {
					return err
				}
				return s.CreatePKCERequestSession(ctx, key, r)
			},
			get: (*storage.Store).GetPKCERequestSession,
			del: (*storage.Store).DeletePKCERequestSession,
		},
		{
			name: "openid connect session",
			create: func(s *storage.Store, ctx context.Context, code string, r fosite.Requester) error {
				if err := ensureCode(s, ctx, code, r); err != nil {
					return err
				}
				return s.CreateOpenIDConnectSession(ctx, code, r)
			},
			get: func(s *storage.Store, ctx context.Context, code string, session fosite.Session) (fosite.Requester, error) {
				return s.GetOpenIDConnectSession(ctx, code, &fosite.Request{Session: session})
			},
			del: (*storage.Store).DeleteOpenIDConnectSession,
		},
	}
}

// ensureCode creates the authorization code that PKCE and OpenID Connect data belong to
// (their rows are the code's), keyed by key, unless it exists.
func ensureCode(s *storage.Store, ctx context.Context, key string, r fosite.Requester) error {
	_, err := s.GetAuthorizeCodeSession(ctx, key, newSession())
	if errors.Is(err, fosite.ErrNotFound) {
		return s.CreateAuthorizeCodeSession(ctx, key, r)
	}
	return err
}

func testFositeRoundTrip(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	client := mustCreateClient(t, s, "app")
	for _, k := range fositeKinds() {
		t.Run(k.name, func(t *testing.T) {
			want := newRequest(t, client, "user-1", t0)
			key := "key-" + randomID(t)
			mustNoErr(t, "create", k.create(s, ctx, key, want))
			if err := k.create(s, ctx, key, want); err == nil {
				t.Errorf("create twice: got no error, want one")
			}

			proto := newSession()
			got, err := k.get(s, ctx, key, proto)
			mustNoErr(t, "get", err)
			checkRequest(t, got, want)
			if got.GetSession() != proto || proto.Subject != "user-1" {
				t.Errorf("got session %p with subject %q, want the prototype %p filled in", got.GetSession(), proto.Subject, proto)
			}

			other := newRequest(t, client, "user-2", t0)
			otherKey := "key-" + randomID(t)
			mustNoErr(t, "create other", k.create(s, ctx, otherKey, other))
			if k.del == nil {
				return
			}
			mustNoErr(t, "delete", k.del(s, ctx, key))
			_, err = k.get(s, ctx, key, newSession())
			checkErr(t, "get after delete", err, fosite.ErrNotFound)
			got, err = k.get(s, ctx, otherKey, newSession())
			mustNoErr(t, "get other after delete", err)
			checkRequest(t, got, other)
		})
	}
}

func testCodeInvalidation(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	req := newRequest(t, mustCreateClient(t, s, "app"), "user-1", t0)
	mustNoErr(t, "CreateAuthorizeCodeSession", s.CreateAuthorizeCodeSession(ctx, "code-1", req))

	mustNoErr(t, "InvalidateAuthorizeCodeSession", s.InvalidateAuthorizeCodeSession(ctx, "code-1"))
	got, err := s.GetAuthorizeCodeSession(ctx, "code-1", newSession())
	checkErr(t, "GetAuthorizeCodeSession of a used code", err, fosite.ErrInvalidatedAuthorizeCode)
	checkRequest(t, got, req)
	checkErr(t, "InvalidateAuthorizeCodeSession twice",
		s.InvalidateAuthorizeCodeSession(ctx, "code-1"), fosite.ErrInvalidatedAuthorizeCode)
}

// runConcurrently calls fn(i) for i in [0, n) from n goroutines released at once and returns
// their errors.
func runConcurrently(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// checkOneWinner fails t unless exactly one error is nil and all others match loser.
func checkOneWinner(t *testing.T, what string, errs []error, loser error) {
	t.Helper()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, loser):
			t.Errorf("%s #%d: got error %v, want nil or %v", what, i, err, loser)
		}
	}
	if won != 1 {
		t.Errorf("%s: got %d successes, want exactly 1", what, won)
	}
}

func testConcurrentCodeInvalidation(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	req := newRequest(t, mustCreateClient(t, s, "app"), "user-1", t0)
	mustNoErr(t, "CreateAuthorizeCodeSession", s.CreateAuthorizeCodeSession(ctx, "code-1", req))
	errs := runConcurrently(10, func(int) error {
		return s.InTx(ctx, func(ctx context.Context) error {
			return s.InvalidateAuthorizeCodeSession(ctx, "code-1")
		})
	})
	checkOneWinner(t, "InvalidateAuthorizeCodeSession", errs, fosite.ErrInvalidatedAuthorizeCode)
}

// testAccessTokenRevocation: access tokens are stateless (no row is stored), and
// RevokeAccessToken revokes, by a rule on the grant, the grant's tokens issued until then
// and no other grant's.
func testAccessTokenRevocation(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	client := mustCreateClient(t, s, "app")
	a := newRequest(t, client, "user-1", t0)
	b := newRequest(t, client, "user-1", t0)
	mustNoErr(t, "CreateAccessTokenSession", s.CreateAccessTokenSession(ctx, "a1", a))
	_, err := s.GetAccessTokenSession(ctx, "a1", newSession())
	checkErr(t, "GetAccessTokenSession: access tokens have no rows", err, fosite.ErrNotFound)
	mustNoErr(t, "DeleteAccessTokenSession", s.DeleteAccessTokenSession(ctx, "a1"))

	issued := time.Now()
	mustNoErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, a.ID))
	for _, c := range []struct {
		name string
		ref  storage.AccessTokenRef
		want bool
	}{
		{"a token of the grant", tokenRef(a.ID, "user-1", client.ID, issued), true},
		{"a token of another grant", tokenRef(b.ID, "user-1", client.ID, issued), false},
		{"a token of the grant issued later", tokenRef(a.ID, "user-1", client.ID, time.Now().Add(time.Second)), false},
	} {
		wantRevoked(t, s, c.name, c.ref, c.want)
	}
}

func testRefreshRotation(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	client := mustCreateClient(t, s, "app")
	req := newRequest(t, client, "user-1", t0)
	unrelated := newRequest(t, client, "user-1", t0)
	mustNoErr(t, "create at-1", s.CreateAccessTokenSession(ctx, "at-1", req))
	mustNoErr(t, "create rt-1", s.CreateRefreshTokenSession(ctx, "rt-1", "at-1", req))
	mustNoErr(t, "create unrelated at", s.CreateAccessTokenSession(ctx, "at-x", unrelated))
	mustNoErr(t, "create unrelated rt", s.CreateRefreshTokenSession(ctx, "rt-x", "at-x", unrelated))

	mustNoErr(t, "RotateRefreshToken", s.RotateRefreshToken(ctx, req.ID, "rt-1"))
	got, err := s.GetRefreshTokenSession(ctx, "rt-1", newSession())
	checkErr(t, "GetRefreshTokenSession of a rotated token", err, fosite.ErrInactiveToken)
	checkRequest(t, got, req)
	checkErr(t, "RotateRefreshToken twice", s.RotateRefreshToken(ctx, req.ID, "rt-1"), fosite.ErrInactiveToken)

	// The grant continues under the same request id, as fosite's refresh flow stores it.
	mustNoErr(t, "create at-2", s.CreateAccessTokenSession(ctx, "at-2", req))
	mustNoErr(t, "create rt-2", s.CreateRefreshTokenSession(ctx, "rt-2", "at-2", req))
	_, err = s.GetRefreshTokenSession(ctx, "rt-2", newSession())
	checkErr(t, "GetRefreshTokenSession of the new token", err, nil)

	// Reuse of rt-1 makes fosite revoke the family.
	issued := time.Now()
	mustNoErr(t, "RevokeRefreshToken", s.RevokeRefreshToken(ctx, req.ID))
	mustNoErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, req.ID))
	_, err = s.GetRefreshTokenSession(ctx, "rt-2", newSession())
	checkErr(t, "GetRefreshTokenSession of the family after revocation", err, fosite.ErrInactiveToken)
	wantRevoked(t, s, "an access token of the family after revocation", tokenRef(req.ID, "user-1", client.ID, issued), true)
	_, err = s.GetRefreshTokenSession(ctx, "rt-x", newSession())
	checkErr(t, "GetRefreshTokenSession of another grant", err, nil)
	wantRevoked(t, s, "an access token of another grant", tokenRef(unrelated.ID, "user-1", client.ID, issued), false)

	mustNoErr(t, "DeleteRefreshTokenSession", s.DeleteRefreshTokenSession(ctx, "rt-1"))
	_, err = s.GetRefreshTokenSession(ctx, "rt-1", newSession())
	checkErr(t, "GetRefreshTokenSession after delete", err, fosite.ErrNotFound)
}

// testConcurrentRefreshRotation replays fosite's refresh flow (rotate, then store the new
// tokens, in one transaction) from ten clients presenting the same refresh token at once.
func testConcurrentRefreshRotation(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	req := newRequest(t, mustCreateClient(t, s, "app"), "user-1", t0)
	mustNoErr(t, "create at-0", s.CreateAccessTokenSession(ctx, "at-0", req))
	mustNoErr(t, "create rt-0", s.CreateRefreshTokenSession(ctx, "rt-0", "at-0", req))

	const n = 10
	errs := runConcurrently(n, func(i int) error {
		return s.InTx(ctx, func(ctx context.Context) error {
			if err := s.RotateRefreshToken(ctx, req.ID, "rt-0"); err != nil {
				return err
			}
			at, rt := fmt.Sprintf("at-%d", i+1), fmt.Sprintf("rt-%d", i+1)
			if err := s.CreateAccessTokenSession(ctx, at, req); err != nil {
				return err
			}
			return s.CreateRefreshTokenSession(ctx, rt, at, req)
		})
	})
	checkOneWinner(t, "RotateRefreshToken", errs, fosite.ErrInactiveToken)

	_, err := s.GetRefreshTokenSession(ctx, "rt-0", newSession())
	checkErr(t, "GetRefreshTokenSession of the rotated token", err, fosite.ErrInactiveToken)
	issued := 0
	for i := 1; i <= n; i++ {
		_, err := s.GetRefreshTokenSession(ctx, fmt.Sprintf("rt-%d", i), newSession())
		switch {
		case err == nil:
			issued++
		case !errors.Is(err, fosite.ErrNotFound):
			t.Errorf("GetRefreshTokenSession(rt-%d): got error %v, want nil or %v", i, err, fosite.ErrNotFound)
		}
	}
	if issued != 1 {
		t.Errorf("got %d new refresh tokens stored, want exactly 1", issued)
	}
}

func testClientAssertionJTI(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	now := time.Now()
	checkErr(t, "ClientAssertionJWTValid of an unknown jti", s.ClientAssertionJWTValid(ctx, "j1"), nil)
	mustNoErr(t, "SetClientAssertionJWT", s.SetClientAssertionJWT(ctx, "j1", now.Add(time.Hour)))
	checkErr(t, "ClientAssertionJWTValid of a recorded jti", s.ClientAssertionJWTValid(ctx, "j1"), fosite.ErrJTIKnown)
	checkErr(t, "SetClientAssertionJWT of a recorded jti", s.SetClientAssertionJWT(ctx, "j1", now.Add(2*time.Hour)), fosite.ErrJTIKnown)

	mustNoErr(t, "SetClientAssertionJWT already expired", s.SetClientAssertionJWT(ctx, "j2", now.Add(-time.Hour)))
	checkErr(t, "ClientAssertionJWTValid of an expired jti", s.ClientAssertionJWTValid(ctx, "j2"), nil)
	mustNoErr(t, "SetClientAssertionJWT over an expired jti", s.SetClientAssertionJWT(ctx, "j2", now.Add(time.Hour)))
	checkErr(t, "ClientAssertionJWTValid after re-recording", s.ClientAssertionJWTValid(ctx, "j2"), fosite.ErrJTIKnown)
}

func testDeleteClientCascade(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "gina@example.com")
	type rows struct {
		client *storage.Client
		req    *fosite.Request
	}
	seed := func(id string) rows {
		r := rows{client: mustCreateClient(t, s, id)}
		r.req = newRequest(t, r.client, u.ID, t0)
		for _, k := range fositeKinds() {
			mustNoErr(t, "create "+k.name, k.create(s, ctx, id+"-key", r.req))
		}
		mustNoErr(t, "SaveConsent", s.SaveConsent(ctx, &storage.Consent{UserID: u.ID, ClientID: id, Scopes: []string{"openid"}}))
		mustNoErr(t, "CreateAuthRequest", s.CreateAuthRequest(ctx, &storage.AuthRequest{IDHash: id + "-ar", ClientID: id, ExpiresAt: t0}))
		return r
	}
	seed("doomed")
	kept := seed("kept")

	mustNoErr(t, "DeleteClient", s.DeleteClient(ctx, "doomed"))
	_, err := s.ClientByID(ctx, "doomed")
	checkErr(t, "ClientByID after delete", err, storage.ErrNotFound)
	for _, k := range fositeKinds() {
		_, err := k.get(s, ctx, "doomed-key", newSession())
		checkErr(t, k.name+" of the deleted client", err, fosite.ErrNotFound)
		got, err := k.get(s, ctx, "kept-key", newSession())
		checkErr(t, k.name+" of the other client", err, nil)
		if err == nil {
			checkRequest(t, got, kept.req)
		}
	}
	_, err = s.ConsentFor(ctx, u.ID, "doomed")
	checkErr(t, "ConsentFor the deleted client", err, storage.ErrNotFound)
	_, err = s.ConsentFor(ctx, u.ID, "kept")
	checkErr(t, "ConsentFor the other client", err, nil)
	_, err = s.AuthRequestByIDHash(ctx, "doomed-ar", t0.Add(-time.Hour))
	checkErr(t, "AuthRequestByIDHash of the deleted client", err, storage.ErrNotFound)
	_, err = s.AuthRequestByIDHash(ctx, "kept-ar", t0.Add(-time.Hour))
	checkErr(t, "AuthRequestByIDHash of the other client", err, nil)
	checkErr(t, "DeleteClient twice", s.DeleteClient(ctx, "doomed"), storage.ErrNotFound)
}

func testRevokeTokensOf(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	a := mustCreateClient(t, s, "a")
	b := mustCreateClient(t, s, "b")
	grants := []struct {
		name    string
		client  *storage.Client
		subject string
		revoked bool
	}{
		{"u1@a", a, "u1", true},
		{"u2@a", a, "u2", false},
		{"u1@b", b, "u1", false},
	}
	reqs := map[string]*fosite.Request{}
	for _, g := range grants {
		req := newRequest(t, g.client, g.subject, t0)
		reqs[g.name] = req
		mustNoErr(t, "create refresh token", s.CreateRefreshTokenSession(ctx, "rt-"+g.name, "at-"+g.name, req))
	}
	issued := time.Now()
	mustNoErr(t, "RevokeTokensOf", s.RevokeTokensOf(ctx, "u1", "a"))
	for _, g := range grants {
		var wantRT error
		if g.revoked {
			wantRT = fosite.ErrInactiveToken
		}
		wantRevoked(t, s, "access token "+g.name, tokenRef(reqs[g.name].ID, g.subject, g.client.ID, issued), g.revoked)
		_, err := s.GetRefreshTokenSession(ctx, "rt-"+g.name, newSession())
		checkErr(t, "refresh token "+g.name, err, wantRT)
	}
}

// testNilSessionPrototype: fosite's revocation handler reads tokens with a nil session and
// needs only the request id and client back; any error there becomes temporarily_unavailable.
func testNilSessionPrototype(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	client := mustCreateClient(t, s, "app")
	req := newRequest(t, client, "user-1", t0)
	mustNoErr(t, "create refresh", s.CreateRefreshTokenSession(ctx, "rt", "at", req))
	for name, get := range map[string]func() (fosite.Requester, error){
		"GetRefreshTokenSession": func() (fosite.Requester, error) { return s.GetRefreshTokenSession(ctx, "rt", nil) },
	} {
		got, err := get()
		if err != nil {
			t.Fatalf("%s with a nil session: got error %v, want the request", name, err)
		}
		if got.GetID() != req.ID || got.GetClient().GetID() != client.ID {
			t.Errorf("%s with a nil session: got request %q of client %q, want %q of %q",
				name, got.GetID(), got.GetClient().GetID(), req.ID, client.ID)
		}
	}
}

// testRevokeUserGrants: RevokeUserGrants revokes the access (by rule) and refresh tokens, the unused
// authorization codes and the consents of one user at every client, ends their open PIN
// challenges and spends their unused mailed links, and touches nothing of another user;
// inside a transaction that rolls back it revokes nothing.
func testRevokeUserGrants(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	a := mustCreateClient(t, s, "a")
	b := mustCreateClient(t, s, "b")
	victim := mustCreateUser(t, s, "victim@example.com")
	other := mustCreateUser(t, s, "other@example.com")
	grants := []struct {
		name    string
		client  *storage.Client
		subject string
		revoked bool
	}{
		{"victim@a", a, victim.ID, true},
		{"victim@b", b, victim.ID, true},
		{"other@a", a, other.ID, false},
	}
	issued := time.Now()
	for _, g := range grants {
		req := newRequest(t, g.client, g.subject, t0)
		mustNoErr(t, "create code", s.CreateAuthorizeCodeSession(ctx, "code-"+g.name, req))
		mustNoErr(t, "create refresh token", s.CreateRefreshTokenSession(ctx, "rt-"+g.name, "at-"+g.name, req))
		mustNoErr(t, "save consent", s.SaveConsent(ctx, &storage.Consent{
			UserID: g.subject, ClientID: g.client.ID, Scopes: []string{"openid"}, GrantedAt: t0,
		}))
	}
	for _, u := range []*publicauth.User{victim, other} {
		mustNoErr(t, "create PIN challenge", s.CreatePINChallenge(ctx, newChallenge("pin-"+u.ID, u.ID, t0.Add(time.Hour))))
		mustNoErr(t, "create mailed link", s.CreateOneTimeToken(ctx, newToken("link-"+u.ID, publicauth.PurposeMagicLink, u.ID, t0.Add(time.Hour)), false))
	}
	// check asserts every grant intact, except that with applied the victim's are revoked.
	check := func(when string, applied bool) {
		t.Helper()
		for _, u := range []*publicauth.User{victim, other} {
			var wantPIN, wantLink error
			if applied && u == victim {
				wantPIN, wantLink = publicauth.ErrChallengeInvalid, publicauth.ErrInvalidToken
			}
			_, err := s.ReservePINAttempt(ctx, "pin-"+u.ID, 100, t0)
			checkErr(t, when+": PIN challenge of "+u.Email, err, wantPIN)
			_, err = s.UsableOneTimeToken(ctx, "link-"+u.ID, publicauth.PurposeMagicLink, t0)
			checkErr(t, when+": mailed link of "+u.Email, err, wantLink)
		}
		for _, g := range grants {
			var wantCode, wantRT, wantConsent error
			if applied && g.revoked {
				wantCode, wantRT, wantConsent = fosite.ErrInvalidatedAuthorizeCode, fosite.ErrInactiveToken, storage.ErrNotFound
			}
			_, err := s.GetAuthorizeCodeSession(ctx, "code-"+g.name, newSession())
			checkErr(t, when+": code "+g.name, err, wantCode)
			wantRevoked(t, s, when+": access token "+g.name, tokenRef("grant-"+g.name, g.subject, g.client.ID, issued), applied && g.revoked)
			_, err = s.GetRefreshTokenSession(ctx, "rt-"+g.name, newSession())
			checkErr(t, when+": refresh token "+g.name, err, wantRT)
			_, err = s.ConsentFor(ctx, g.subject, g.client.ID)
			checkErr(t, when+": consent "+g.name, err, wantConsent)
		}
	}

	// Inside a transaction that fails afterwards, the revocation rolls back with it.
	failed := errors.New("the change failed")
	err := s.InTx(ctx, func(ctx context.Context) error {
		mustNoErr(t, "RevokeUserGrants in a transaction", s.RevokeUserGrants(ctx, victim.ID))
		return failed
	})
	checkErr(t, "transaction", err, failed)
	check("after a rolled-back transaction", false)

	err = s.InTx(ctx, func(ctx context.Context) error { return s.RevokeUserGrants(ctx, victim.ID) })
	mustNoErr(t, "committed RevokeUserGrants", err)
	check("after a committed transaction", true)
	mustNoErr(t, "RevokeUserGrants again", s.RevokeUserGrants(ctx, victim.ID))
}

// testConcurrentClientAssertionJTI: of concurrent recordings of one id (one proof or
// assertion sent to several replicas at once) exactly one succeeds; the others get
// fosite.ErrJTIKnown.
func testConcurrentClientAssertionJTI(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	errs := runConcurrently(8, func(int) error { return s.SetClientAssertionJWT(ctx, "dpop:same-proof", exp) })
	checkOneWinner(t, "SetClientAssertionJWT", errs, fosite.ErrJTIKnown)
}
