package storagetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

func testMigrateIdempotent(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "kept")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		checkErr(t, fmt.Sprintf("Migrate #%d", i), err, nil)
	}
	if _, err := s.ClientByID(ctx, "kept"); err != nil {
		t.Errorf("ClientByID after re-migration: got error %v, want the client kept", err)
	}
	checkErr(t, "Ping", s.Ping(ctx), nil)
}

func testClientRoundTrip(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	want := mustCreateClient(t, s, "app")
	got, err := s.ClientByID(ctx, "app")
	mustNoErr(t, "ClientByID", err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ClientByID:\ngot  %+v\nwant %+v", got, want)
	}
	fc, err := s.GetClient(ctx, "app")
	mustNoErr(t, "GetClient", err)
	if !reflect.DeepEqual(fc, want) {
		t.Errorf("GetClient:\ngot  %+v\nwant %+v", fc, want)
	}

	public := &storage.Client{ID: "spa", Public: true}
	mustNoErr(t, "CreateClient(public)", s.CreateClient(ctx, public))
	if public.CreatedAt.IsZero() || public.UpdatedAt.IsZero() {
		t.Errorf("got CreatedAt %v, UpdatedAt %v, want both set by CreateClient", public.CreatedAt, public.UpdatedAt)
	}
	got, err = s.ClientByID(ctx, "spa")
	mustNoErr(t, "ClientByID(spa)", err)
	if !got.Public || got.SecretHash != nil || got.RedirectURIs != nil {
		t.Errorf("got %+v, want a public client without secret and redirect URIs", got)
	}
	if !got.CreatedAt.Equal(public.CreatedAt) {
		t.Errorf("got CreatedAt %v, want %v", got.CreatedAt, public.CreatedAt)
	}
}

// testClientResourceServer: the resource-server mark is stored, read back and listed, and a
// client created without it is an ordinary client.
func testClientResourceServer(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	api := newClient("api")
	api.ResourceServer = true
	mustNoErr(t, "CreateClient(api)", s.CreateClient(ctx, api))
	mustCreateClient(t, s, "app")
	for id, want := range map[string]bool{"api": true, "app": false} {
		got, err := s.ClientByID(ctx, id)
		mustNoErr(t, "ClientByID("+id+")", err)
		if got.ResourceServer != want {
			t.Errorf("ClientByID(%s).ResourceServer: got %v, want %v", id, got.ResourceServer, want)
		}
	}
	list, err := s.ListClients(ctx)
	mustNoErr(t, "ListClients", err)
	for _, c := range list {
		if c.ResourceServer != (c.ID == "api") {
			t.Errorf("ListClients: %s has ResourceServer %v", c.ID, c.ResourceServer)
		}
	}
}

func testClientCreateTwice(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	checkErr(t, "CreateClient twice", s.CreateClient(ctx, newClient("app")), storage.ErrConflict)
}

func testListClients(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		id      string
		created time.Time
	}{
		{"c", base.Add(time.Hour)},
		{"b", base},
		{"a", base.Add(time.Hour)},
		{"d", base.Add(-time.Hour)},
	} {
		cl := newClient(c.id)
		cl.CreatedAt = c.created
		mustNoErr(t, "CreateClient", s.CreateClient(ctx, cl))
	}
	list, err := s.ListClients(ctx)
	mustNoErr(t, "ListClients", err)
	var got []string
	for _, c := range list {
		got = append(got, c.ID)
	}
	if want := []string{"d", "b", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("got order %q, want %q", got, want)
	}
}

func testMissingRows(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	mustCreateUser(t, s, "someone@example.com")
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"ClientByID", func() error { _, err := s.ClientByID(ctx, "nope"); return err }, storage.ErrNotFound},
		{"DeleteClient", func() error { return s.DeleteClient(ctx, "nope") }, storage.ErrNotFound},
		{"GetClient", func() error { _, err := s.GetClient(ctx, "nope"); return err }, fosite.ErrNotFound},
		{"UserByID", func() error { _, err := s.UserByID(ctx, "nope"); return err }, publicauth.ErrUserNotFound},
		{"UserByEmail", func() error { _, err := s.UserByEmail(ctx, "nope@example.com"); return err }, publicauth.ErrUserNotFound},
		{"SessionByIDHash", func() error { _, _, err := s.SessionByIDHash(ctx, "nope", t0); return err }, publicauth.ErrSessionNotFound},
		{"DeleteSession", func() error { return s.DeleteSession(ctx, "nope") }, nil},
		// A session refers to its account by id alone (AccountRowsWithoutUser).
		{"CreateSession without a users row", func() error {
			return s.CreateSession(ctx, &publicauth.Session{IDHash: "h", UserID: "nope", Kind: publicauth.SessionPublic, ExpiresAt: t0})
		}, nil},
		{"AuthRequestByIDHash", func() error { _, err := s.AuthRequestByIDHash(ctx, "nope", t0); return err }, storage.ErrNotFound},
		{"CompleteAuthRequestLogin", func() error { return s.CompleteAuthRequestLogin(ctx, "nope", "nope", "u", t0) }, storage.ErrNotFound},
		{"DeleteAuthRequest", func() error { return s.DeleteAuthRequest(ctx, "nope") }, nil},
		{"CreateAuthRequest unknown client", func() error {
			return s.CreateAuthRequest(ctx, &storage.AuthRequest{IDHash: "h", ClientID: "nope", ExpiresAt: t0})
		}, storage.ErrNotFound},
		{"ConsentFor", func() error { _, err := s.ConsentFor(ctx, "user-someone@example.com", "app"); return err }, storage.ErrNotFound},
		{"SaveConsent unknown client", func() error {
			return s.SaveConsent(ctx, &storage.Consent{UserID: "user-someone@example.com", ClientID: "nope"})
		}, storage.ErrNotFound},
		{"GetAuthorizeCodeSession", func() error { _, err := s.GetAuthorizeCodeSession(ctx, "nope", newSession()); return err }, fosite.ErrNotFound},
		{"InvalidateAuthorizeCodeSession", func() error { return s.InvalidateAuthorizeCodeSession(ctx, "nope") }, fosite.ErrNotFound},
		{"RevokeAccessToken", func() error { return s.RevokeAccessToken(ctx, "nope") }, nil},
		{"GetRefreshTokenSession", func() error { _, err := s.GetRefreshTokenSession(ctx, "nope", newSession()); return err }, fosite.ErrNotFound},
		{"RotateRefreshToken", func() error { return s.RotateRefreshToken(ctx, "nope", "nope") }, fosite.ErrNotFound},
		{"RevokeRefreshToken", func() error { return s.RevokeRefreshToken(ctx, "nope") }, nil},
		{"DeleteRefreshTokenSession", func() error { return s.DeleteRefreshTokenSession(ctx, "nope") }, nil},
		{"GetPKCERequestSession", func() error { _, err := s.GetPKCERequestSession(ctx, "nope", newSession()); return err }, fosite.ErrNotFound},
		{"GetOpenIDConnectSession", func() error {
			_, err := s.GetOpenIDConnectSession(ctx, "nope", &fosite.Request{Session: newSession()})
			return err
		}, fosite.ErrNotFound},
		{"ClientAssertionJWTValid", func() error { return s.ClientAssertionJWTValid(ctx, "nope") }, nil},
		{"RevokeTokensOf", func() error { return s.RevokeTokensOf(ctx, "nope", "nope") }, nil},
		{"RevokeUserGrants", func() error { return s.RevokeUserGrants(ctx, "nope") }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErr(t, c.name, c.call(), c.want)
		})
	}
}

func testUserEmailCaseInsensitive(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	alice := mustCreateUser(t, s, "Alice@Example.COM")
	for _, email := range []string{"alice@example.com", "ALICE@EXAMPLE.COM", "Alice@Example.COM"} {
		got, err := s.UserByEmail(ctx, email)
		if err != nil {
			t.Errorf("UserByEmail(%q): got error %v, want alice", email, err)
			continue
		}
		if got.ID != alice.ID || got.Email != "Alice@Example.COM" {
			t.Errorf("UserByEmail(%q): got %q <%s>, want %q <Alice@Example.COM>", email, got.ID, got.Email, alice.ID)
		}
	}
	dup := newUser("aLiCe@example.com")
	dup.ID = "another-id"
	checkErr(t, "CreateUser with the same email in other case", s.CreateUser(ctx, dup), publicauth.ErrEmailTaken)

	sameID := newUser("bob@example.com")
	sameID.ID = alice.ID
	checkErr(t, "CreateUser with an existing id", s.CreateUser(ctx, sameID), storage.ErrConflict)

	got, err := s.UserByID(ctx, alice.ID)
	mustNoErr(t, "UserByID", err)
	if !reflect.DeepEqual(got, alice) {
		t.Errorf("UserByID:\ngot  %+v\nwant %+v", got, alice)
	}
}

// testUserEmailLookAlikes pins the account takeover of issue 9: addresses that Unicode
// lower-casing made equal to an existing one (U+0130 "İ", the Kelvin sign) are other
// mailboxes, so they neither find the account nor count as taken; ASCII case still folds.
func testUserEmailLookAlikes(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	victim := mustCreateUser(t, s, "victim@gmail.com")
	kim := mustCreateUser(t, s, "kim@example.com")
	for _, email := range []string{"VICTIM@GMAIL.COM", "Victim@Gmail.com", " victim@gmail.com "} {
		got, err := s.UserByEmail(ctx, email)
		if err != nil || got.ID != victim.ID {
			t.Errorf("UserByEmail(%q): got %v, %v; want the victim", email, got, err)
		}
	}
	for _, email := range []string{"victim@gmaİl.com", "VICTIM@GMAİL.COM", "\u212Aim@example.com", "\u212AIM@EXAMPLE.COM"} {
		if got, err := s.UserByEmail(ctx, email); !errors.Is(err, publicauth.ErrUserNotFound) {
			t.Errorf("UserByEmail(%q): got %v, %v; want %v", email, got, err, publicauth.ErrUserNotFound)
		}
	}
	if got, err := s.UserByEmail(ctx, "KIM@example.com"); err != nil || got.ID != kim.ID {
		t.Errorf("UserByEmail(KIM@example.com): got %v, %v; want kim", got, err)
	}
	for _, email := range []string{"victim@gmaİl.com", "\u212Aim@example.com"} {
		u := newUser(email)
		mustNoErr(t, "CreateUser("+email+")", s.CreateUser(ctx, u))
		got, err := s.UserByEmail(ctx, email)
		if err != nil || got.ID != u.ID {
			t.Errorf("UserByEmail(%q): got %v, %v; want its own account %q", email, got, err, u.ID)
		}
	}
	got, err := s.UserByEmail(ctx, "victim@xn--gmail-bgd.com")
	if err != nil || got.Email != "victim@gmaİl.com" {
		t.Errorf("UserByEmail(A-label): got %v, %v; want the look-alike account by its IDNA key", got, err)
	}
	dup := newUser("VICTIM@XN--GMAIL-BGD.COM")
	dup.ID = "another-id"
	checkErr(t, "CreateUser(A-label of a taken U-label)", s.CreateUser(ctx, dup), publicauth.ErrEmailTaken)
	checkErr(t, "CreateUser(no key)", s.CreateUser(ctx, newUser("victim@gmail..com")), publicauth.ErrInvalidEmail)
	if _, err := s.UserByEmail(ctx, "victim@gmail..com"); !errors.Is(err, publicauth.ErrUserNotFound) {
		t.Errorf("UserByEmail(no key): got error %v, want %v", err, publicauth.ErrUserNotFound)
	}
}

// testTimeZones stores times given in a zone other than UTC and expects the same instants
// back, in UTC.
func testTimeZones(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	in := time.Date(2031, 5, 6, 7, 8, 9, 123456000, otherZone)
	user := mustCreateUser(t, s, "tz@example.com")
	cases := []struct {
		name string
		// roundTrip stores in and returns the times read back.
		roundTrip func(t *testing.T) []time.Time
	}{
		{"client", func(t *testing.T) []time.Time {
			c := newClient("tz")
			c.CreatedAt, c.UpdatedAt = in, in
			mustNoErr(t, "CreateClient", s.CreateClient(ctx, c))
			got, err := s.ClientByID(ctx, "tz")
			mustNoErr(t, "ClientByID", err)
			return []time.Time{got.CreatedAt, got.UpdatedAt}
		}},
		{"user", func(t *testing.T) []time.Time {
			u := newUser("tz2@example.com")
			u.CreatedAt, u.UpdatedAt = in, in
			mustNoErr(t, "CreateUser", s.CreateUser(ctx, u))
			got, err := s.UserByID(ctx, u.ID)
			mustNoErr(t, "UserByID", err)
			return []time.Time{got.CreatedAt, got.UpdatedAt}
		}},
		{"session", func(t *testing.T) []time.Time {
			sess := &publicauth.Session{IDHash: "tz", UserID: user.ID, Kind: publicauth.SessionPublic,
				Method: publicauth.MethodPassword, AuthTime: in, CreatedAt: in, ExpiresAt: in.Add(time.Hour)}
			mustNoErr(t, "CreateSession", s.CreateSession(ctx, sess))
			got, _, err := s.SessionByIDHash(ctx, "tz", in)
			mustNoErr(t, "SessionByIDHash", err)
			return []time.Time{got.AuthTime, got.CreatedAt, got.ExpiresAt.Add(-time.Hour)}
		}},
		{"auth request", func(t *testing.T) []time.Time {
			mustCreateClient(t, s, "tz-ar")
			r := &storage.AuthRequest{IDHash: "tz", ClientID: "tz-ar", Form: "a=b", RequestedAt: in, ExpiresAt: in.Add(time.Hour)}
			mustNoErr(t, "CreateAuthRequest", s.CreateAuthRequest(ctx, r))
			mustNoErr(t, "CompleteAuthRequestLogin", s.CompleteAuthRequestLogin(ctx, "tz", "tz", user.ID, in))
			got, err := s.AuthRequestByIDHash(ctx, "tz", in)
			mustNoErr(t, "AuthRequestByIDHash", err)
			if got.AuthTime == nil {
				t.Fatalf("got AuthTime nil, want %v", in)
			}
			return []time.Time{got.RequestedAt, got.ExpiresAt.Add(-time.Hour), *got.AuthTime}
		}},
		{"consent", func(t *testing.T) []time.Time {
			mustCreateClient(t, s, "tz-consent")
			mustNoErr(t, "SaveConsent", s.SaveConsent(ctx, &storage.Consent{UserID: user.ID, ClientID: "tz-consent", Scopes: []string{"openid"}, GrantedAt: in}))
			got, err := s.ConsentFor(ctx, user.ID, "tz-consent")
			mustNoErr(t, "ConsentFor", err)
			return []time.Time{got.GrantedAt}
		}},
		{"signing key", func(t *testing.T) []time.Time {
			mustNoErr(t, "AddSigningKey", s.AddSigningKey(ctx, &storage.SigningKey{KID: "tz-1", Algorithm: "RS256", Sealed: []byte("x"), CreatedAt: in.Add(-time.Hour)}))
			mustNoErr(t, "AddSigningKey", s.AddSigningKey(ctx, &storage.SigningKey{KID: "tz-2", Algorithm: "RS256", Sealed: []byte("y"), CreatedAt: in}))
			keys, err := s.SigningKeys(ctx)
			mustNoErr(t, "SigningKeys", err)
			if len(keys) != 2 || keys[0].RetiredAt == nil {
				t.Fatalf("got keys %+v, want tz-1 retired and tz-2", keys)
			}
			return []time.Time{keys[0].CreatedAt.Add(time.Hour), *keys[0].RetiredAt, keys[1].CreatedAt}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, got := range c.roundTrip(t) {
				if !got.Equal(in) || got.Location() != time.UTC {
					t.Errorf("time #%d: got %v (%v), want %v in UTC", i, got, got.Location(), in.UTC())
				}
			}
		})
	}
}

func testSessionExpiry(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "dave@example.com")
	owner, err := s.UserByID(ctx, u.ID)
	mustNoErr(t, "UserByID", err)
	want := &publicauth.Session{
		IDHash: "hash-1", UserID: u.ID, Kind: publicauth.SessionAdmin, Method: publicauth.MethodPassword,
		AuthTime: t0.Add(-time.Minute), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
	}
	mustNoErr(t, "CreateSession", s.CreateSession(ctx, want))
	checkErr(t, "CreateSession twice", s.CreateSession(ctx, want), storage.ErrConflict)
	for _, c := range []struct {
		name string
		now  time.Time
		want error
	}{
		{"before expiry", t0, nil},
		{"a microsecond before expiry", t0.Add(time.Hour - time.Microsecond), nil},
		{"at expiry", t0.Add(time.Hour), publicauth.ErrSessionNotFound},
		{"after expiry", t0.Add(2 * time.Hour), publicauth.ErrSessionNotFound},
	} {
		got, gotUser, err := s.SessionByIDHash(ctx, "hash-1", c.now)
		checkErr(t, "SessionByIDHash "+c.name, err, c.want)
		if c.want == nil && err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("SessionByIDHash %s:\ngot  %+v\nwant %+v", c.name, got, want)
		}
		if c.want == nil && err == nil && !reflect.DeepEqual(gotUser, owner) {
			t.Errorf("SessionByIDHash %s, its user:\ngot  %+v\nwant %+v", c.name, gotUser, owner)
		}
	}

	second := *want
	second.IDHash = "hash-2"
	second.SID = "" // a session's public id is unique: CreateSession draws one
	second.CreatedAt = time.Time{}
	mustNoErr(t, "CreateSession(second)", s.CreateSession(ctx, &second))
	if second.CreatedAt.IsZero() {
		t.Errorf("got CreatedAt zero, want it set by CreateSession")
	}
	mustNoErr(t, "DeleteSession", s.DeleteSession(ctx, "hash-1"))
	_, _, err = s.SessionByIDHash(ctx, "hash-1", t0)
	checkErr(t, "SessionByIDHash after DeleteSession", err, publicauth.ErrSessionNotFound)
	_, _, err = s.SessionByIDHash(ctx, "hash-2", t0)
	checkErr(t, "SessionByIDHash of the other session", err, nil)
	mustNoErr(t, "DeleteUserSessions", s.DeleteUserSessions(ctx, u.ID))
	_, _, err = s.SessionByIDHash(ctx, "hash-2", t0)
	checkErr(t, "SessionByIDHash after DeleteUserSessions", err, publicauth.ErrSessionNotFound)
}

func testAuthRequest(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	want := &storage.AuthRequest{
		IDHash: "ar-1", ClientID: "app", Form: "client_id=app&response_type=code&state=xyz",
		RequestedAt: t0, ExpiresAt: t0.Add(10 * time.Minute),
	}
	mustNoErr(t, "CreateAuthRequest", s.CreateAuthRequest(ctx, want))
	checkErr(t, "CreateAuthRequest twice", s.CreateAuthRequest(ctx, want), storage.ErrConflict)

	got, err := s.AuthRequestByIDHash(ctx, "ar-1", t0)
	mustNoErr(t, "AuthRequestByIDHash", err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AuthRequestByIDHash:\ngot  %+v\nwant %+v", got, want)
	}
	_, err = s.AuthRequestByIDHash(ctx, "ar-1", t0.Add(10*time.Minute))
	checkErr(t, "AuthRequestByIDHash at expiry", err, storage.ErrNotFound)

	authTime := t0.Add(time.Minute)
	// The login re-keys the request: the old key finds nothing, and a second login under
	// it (a concurrent one) gets ErrNotFound.
	mustNoErr(t, "CompleteAuthRequestLogin", s.CompleteAuthRequestLogin(ctx, "ar-1", "ar-1b", "user-1", authTime))
	_, err = s.AuthRequestByIDHash(ctx, "ar-1", t0)
	checkErr(t, "AuthRequestByIDHash of the old key", err, storage.ErrNotFound)
	checkErr(t, "CompleteAuthRequestLogin of the old key",
		s.CompleteAuthRequestLogin(ctx, "ar-1", "ar-1c", "user-2", authTime), storage.ErrNotFound)
	got, err = s.AuthRequestByIDHash(ctx, "ar-1b", t0)
	mustNoErr(t, "AuthRequestByIDHash after login", err)
	if got.UserID != "user-1" || got.AuthTime == nil || !got.AuthTime.Equal(authTime) {
		t.Errorf("got user %q auth time %v, want user-1 at %v", got.UserID, got.AuthTime, authTime)
	}
	mustNoErr(t, "DeleteAuthRequest", s.DeleteAuthRequest(ctx, "ar-1b"))
	_, err = s.AuthRequestByIDHash(ctx, "ar-1b", t0)
	checkErr(t, "AuthRequestByIDHash after delete", err, storage.ErrNotFound)
}

func testConsentUpsert(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	u := mustCreateUser(t, s, "erin@example.com")
	first := &storage.Consent{UserID: u.ID, ClientID: "app", Scopes: []string{"openid"}, GrantedAt: t0}
	mustNoErr(t, "SaveConsent", s.SaveConsent(ctx, first))
	second := &storage.Consent{UserID: u.ID, ClientID: "app", Scopes: []string{"openid", "email"}, GrantedAt: t0.Add(time.Hour)}
	mustNoErr(t, "SaveConsent again", s.SaveConsent(ctx, second))
	got, err := s.ConsentFor(ctx, u.ID, "app")
	mustNoErr(t, "ConsentFor", err)
	if !reflect.DeepEqual(got, second) {
		t.Errorf("ConsentFor:\ngot  %+v\nwant %+v", got, second)
	}
}

func testConcurrentSaveConsent(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	u := mustCreateUser(t, s, "frank@example.com")
	errs := runConcurrently(10, func(i int) error {
		return s.SaveConsent(ctx, &storage.Consent{
			UserID: u.ID, ClientID: "app", Scopes: []string{"openid", fmt.Sprintf("scope-%d", i)}, GrantedAt: t0,
		})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("SaveConsent #%d: got error %v, want none", i, err)
		}
	}
	got, err := s.ConsentFor(ctx, u.ID, "app")
	mustNoErr(t, "ConsentFor", err)
	if len(got.Scopes) != 2 || got.Scopes[0] != "openid" {
		t.Errorf("got scopes %q, want those of one of the saves", got.Scopes)
	}
}

func testConcurrentCreateUser(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	emails := []string{
		"race@example.com", "Race@example.com", "RACE@example.com", "race@Example.com", "race@EXAMPLE.COM",
		"rAce@example.com", "raCe@example.com", "racE@example.com", "RaCe@ExAmPlE.cOm", "rACE@example.COM",
	}
	errs := runConcurrently(len(emails), func(i int) error {
		u := newUser(emails[i])
		u.ID = fmt.Sprintf("racer-%d", i)
		return s.CreateUser(ctx, u)
	})
	checkOneWinner(t, "CreateUser", errs, publicauth.ErrEmailTaken)
}

func testSigningKeyRotation(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	add := func(kid, alg string, created time.Time) {
		t.Helper()
		mustNoErr(t, "AddSigningKey("+kid+")", s.AddSigningKey(ctx, &storage.SigningKey{
			KID: kid, Algorithm: alg, Sealed: []byte("sealed-" + kid), CreatedAt: created,
		}))
	}
	add("rsa-1", "RS256", t0)
	add("ec-1", "ES256", t0)
	add("rsa-2", "RS256", t0.Add(time.Hour))
	checkErr(t, "AddSigningKey with a known kid",
		s.AddSigningKey(ctx, &storage.SigningKey{KID: "rsa-2", Algorithm: "RS256", Sealed: []byte("z"), CreatedAt: t0.Add(2 * time.Hour)}),
		storage.ErrConflict)

	keys, err := s.SigningKeys(ctx)
	mustNoErr(t, "SigningKeys", err)
	retiredAt := t0.Add(time.Hour)
	want := []*storage.SigningKey{
		{KID: "ec-1", Algorithm: "ES256", Sealed: []byte("sealed-ec-1"), CreatedAt: t0},
		{KID: "rsa-1", Algorithm: "RS256", Sealed: []byte("sealed-rsa-1"), CreatedAt: t0, RetiredAt: &retiredAt},
		{KID: "rsa-2", Algorithm: "RS256", Sealed: []byte("sealed-rsa-2"), CreatedAt: t0.Add(time.Hour)},
	}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("SigningKeys:")
		for _, k := range keys {
			t.Errorf("got  %+v (retired %v)", k, k.RetiredAt)
		}
		for _, k := range want {
			t.Errorf("want %+v (retired %v)", k, k.RetiredAt)
		}
	}
}

// testClientCacheLocalWrites: a client served from the store's cache follows every write
// made through the same store at once, and what a caller does to the client it got never
// reaches the cache.
func testClientCacheLocalWrites(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	first, err := s.ClientByID(ctx, "app")
	mustNoErr(t, "ClientByID", err)
	first.Name, first.Scopes[0] = "changed by the caller", "changed"
	again, err := s.ClientByID(ctx, "app")
	mustNoErr(t, "ClientByID again", err)
	if again.Name == first.Name || again.Scopes[0] == "changed" {
		t.Errorf("ClientByID after the caller changed its copy: got %+v, want the stored client", again)
	}

	again.Name = "Renamed"
	mustNoErr(t, "UpdateClient", s.UpdateClient(ctx, again))
	got, err := s.ClientByID(ctx, "app")
	mustNoErr(t, "ClientByID after UpdateClient", err)
	if got.Name != "Renamed" {
		t.Errorf("ClientByID after UpdateClient: got name %q, want %q", got.Name, "Renamed")
	}

	mustNoErr(t, "SetClientSecretHash", s.SetClientSecretHash(ctx, "app", []byte("new-hash")))
	fc, err := s.GetClient(ctx, "app")
	mustNoErr(t, "GetClient after SetClientSecretHash", err)
	if string(fc.GetHashedSecret()) != "new-hash" {
		t.Errorf("GetClient after SetClientSecretHash: got hash %q, want the new one", fc.GetHashedSecret())
	}

	mustNoErr(t, "DeleteClient", s.DeleteClient(ctx, "app"))
	_, err = s.GetClient(ctx, "app")
	checkErr(t, "GetClient after DeleteClient", err, fosite.ErrNotFound)
	mustCreateClient(t, s, "app")
	_, err = s.GetClient(ctx, "app")
	checkErr(t, "GetClient after re-creating it", err, nil)
}

// testClientRequireDPoP: the DPoP requirement is stored, read back, listed and changed by
// UpdateClient; a client created without it has none.
func testClientRequireDPoP(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	spa := newClient("spa")
	spa.Public, spa.SecretHash, spa.RequireDPoP = true, nil, true
	mustNoErr(t, "CreateClient(spa)", s.CreateClient(ctx, spa))
	mustCreateClient(t, s, "app")
	for id, want := range map[string]bool{"spa": true, "app": false} {
		got, err := s.ClientByID(ctx, id)
		mustNoErr(t, "ClientByID("+id+")", err)
		if got.RequireDPoP != want {
			t.Errorf("ClientByID(%s).RequireDPoP: got %v, want %v", id, got.RequireDPoP, want)
		}
	}
	list, err := s.ListClients(ctx)
	mustNoErr(t, "ListClients", err)
	for _, c := range list {
		if c.RequireDPoP != (c.ID == "spa") {
			t.Errorf("ListClients: %s has RequireDPoP %v", c.ID, c.RequireDPoP)
		}
	}
	app, err := s.ClientByID(ctx, "app")
	mustNoErr(t, "ClientByID(app)", err)
	app.RequireDPoP = true
	mustNoErr(t, "UpdateClient(app)", s.UpdateClient(ctx, app))
	if got, err := s.ClientByID(ctx, "app"); err != nil || !got.RequireDPoP {
		t.Errorf("ClientByID(app) after UpdateClient: got RequireDPoP %v (%v), want true", got != nil && got.RequireDPoP, err)
	}
}
