package storagetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// publicAuthCases are the cases of one-time mail tokens, PIN challenges and the PIN gate.
func publicAuthCases() []storageCase {
	return []storageCase{
		{"OneTimeTokenConsume", testOneTimeTokenConsume},
		{"OneTimeTokenSupersede", testOneTimeTokenSupersede},
		{"ConcurrentOneTimeTokenConsume", testConcurrentOneTimeTokenConsume},
		{"PINChallengeAttempts", testPINChallengeAttempts},
		{"ConcurrentPINAttempts", testConcurrentPINAttempts},
		{"ConcurrentPINConsume", testConcurrentPINConsume},
		{"RequirePINRoundTrip", testRequirePINRoundTrip},
		{"ChangeUserWritesOnlyItsFields", testChangeUser},
		{"IsRegisteredRedirectURI", testIsRegisteredRedirectURI},
		{"DeleteExpiredTokensAndChallenges", testDeleteExpiredTokensAndChallenges},
	}
}

func newToken(hash, purpose, userID string, exp time.Time) *publicauth.OneTimeToken {
	return &publicauth.OneTimeToken{
		IDHash:        hash,
		Purpose:       purpose,
		UserID:        userID,
		Email:         "Sent@Example.com",
		RedirectURI:   "https://app.example/callback",
		Resume:        "/signed-in",
		PausedRequest: "hash-of-a-paused-request",
		Payload:       "payload of " + hash,
		CreatedAt:     t0.Add(-time.Minute),
		ExpiresAt:     exp,
	}
}

func mustCreateToken(t *testing.T, s *storage.Store, tok *publicauth.OneTimeToken, supersede bool) {
	t.Helper()
	mustNoErr(t, "CreateOneTimeToken("+tok.IDHash+")", s.CreateOneTimeToken(context.Background(), tok, supersede))
}

func testOneTimeTokenConsume(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "tok@example.com")
	want := newToken("live", publicauth.PurposeMagicLink, u.ID, t0.Add(time.Minute))
	mustCreateToken(t, s, want, false)
	mustCreateToken(t, s, newToken("expired", publicauth.PurposeMagicLink, u.ID, t0), false)

	checkErr(t, "CreateOneTimeToken with a taken hash",
		s.CreateOneTimeToken(ctx, newToken("live", publicauth.PurposeMagicLink, u.ID, t0), false), storage.ErrConflict)

	_, err := s.ConsumeOneTimeToken(ctx, "live", publicauth.PurposePasswordReset, t0)
	checkErr(t, "Consume for another purpose", err, publicauth.ErrInvalidToken)
	_, err = s.ConsumeOneTimeToken(ctx, "expired", publicauth.PurposeMagicLink, t0)
	checkErr(t, "Consume at its expiry", err, publicauth.ErrInvalidToken)
	_, err = s.ConsumeOneTimeToken(ctx, "nope", publicauth.PurposeMagicLink, t0)
	checkErr(t, "Consume unknown", err, publicauth.ErrInvalidToken)

	// Looking a token up spends nothing: the lookup of a link opened by a GET.
	for _, c := range []struct {
		name, hash, purpose string
		want                error
	}{
		{"another purpose", "live", publicauth.PurposePasswordReset, publicauth.ErrInvalidToken},
		{"at its expiry", "expired", publicauth.PurposeMagicLink, publicauth.ErrInvalidToken},
		{"unknown", "nope", publicauth.PurposeMagicLink, publicauth.ErrInvalidToken},
		{"live", "live", publicauth.PurposeMagicLink, nil},
		{"live again", "live", publicauth.PurposeMagicLink, nil},
	} {
		got, err := s.UsableOneTimeToken(ctx, c.hash, c.purpose, t0.In(otherZone))
		checkErr(t, "UsableOneTimeToken of "+c.name, err, c.want)
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("UsableOneTimeToken:\ngot  %+v\nwant %+v", got, want)
		}
	}

	got, err := s.ConsumeOneTimeToken(ctx, "live", publicauth.PurposeMagicLink, t0.In(otherZone))
	mustNoErr(t, "Consume", err)
	used := t0
	want.UsedAt = &used
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Consume:\ngot  %+v\nwant %+v", got, want)
	}
	_, err = s.ConsumeOneTimeToken(ctx, "live", publicauth.PurposeMagicLink, t0)
	checkErr(t, "Consume twice", err, publicauth.ErrInvalidToken)
	_, err = s.UsableOneTimeToken(ctx, "live", publicauth.PurposeMagicLink, t0)
	checkErr(t, "UsableOneTimeToken once consumed", err, publicauth.ErrInvalidToken)
}

func testOneTimeTokenSupersede(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	alice := mustCreateUser(t, s, "alice@example.com")
	bob := mustCreateUser(t, s, "bob@example.com")
	exp := t0.Add(time.Hour)
	mustCreateToken(t, s, newToken("old-1", publicauth.PurposePasswordReset, alice.ID, exp), false)
	mustCreateToken(t, s, newToken("old-2", publicauth.PurposePasswordReset, alice.ID, exp), false)
	mustCreateToken(t, s, newToken("verify", publicauth.PurposeVerifyEmail, alice.ID, exp), false)
	mustCreateToken(t, s, newToken("bobs", publicauth.PurposePasswordReset, bob.ID, exp), false)
	mustCreateToken(t, s, newToken("new", publicauth.PurposePasswordReset, alice.ID, exp), true)

	for _, c := range []struct {
		hash, purpose string
		want          error
	}{
		{"old-1", publicauth.PurposePasswordReset, publicauth.ErrInvalidToken},
		{"old-2", publicauth.PurposePasswordReset, publicauth.ErrInvalidToken},
		{"new", publicauth.PurposePasswordReset, nil},
		{"verify", publicauth.PurposeVerifyEmail, nil},
		{"bobs", publicauth.PurposePasswordReset, nil},
	} {
		_, err := s.ConsumeOneTimeToken(ctx, c.hash, c.purpose, t0)
		checkErr(t, "Consume("+c.hash+")", err, c.want)
	}
}

func testConcurrentOneTimeTokenConsume(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "race@example.com")
	mustCreateToken(t, s, newToken("once", publicauth.PurposeMagicLink, u.ID, t0.Add(time.Hour)), false)
	errs := runConcurrently(10, func(int) error {
		_, err := s.ConsumeOneTimeToken(ctx, "once", publicauth.PurposeMagicLink, t0)
		return err
	})
	checkOneWinner(t, "ConsumeOneTimeToken", errs, publicauth.ErrInvalidToken)
}

func newChallenge(id, userID string, exp time.Time) *publicauth.PINChallenge {
	return &publicauth.PINChallenge{
		ID:      id,
		UserID:  userID,
		PINHash: "hmac-of-" + id,
		Kind:    publicauth.SessionAdmin,
		Method:  publicauth.MethodPassword,
		Destination: publicauth.Destination{
			RedirectURI: "https://app.example/callback", Resume: "/signed-in", PausedRequest: "hash-of-a-paused-request",
		},
		CreatedAt: t0.Add(-time.Minute),
		ExpiresAt: exp,
	}
}

func mustCreateChallenge(t *testing.T, s *storage.Store, c *publicauth.PINChallenge) {
	t.Helper()
	mustNoErr(t, "CreatePINChallenge("+c.ID+")", s.CreatePINChallenge(context.Background(), c))
}

func testPINChallengeAttempts(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "pin@example.com")
	want := newChallenge("c1", u.ID, t0.Add(time.Minute))
	mustCreateChallenge(t, s, want)
	mustCreateChallenge(t, s, newChallenge("expired", u.ID, t0))
	checkErr(t, "CreatePINChallenge with a taken id", s.CreatePINChallenge(ctx, newChallenge("c1", u.ID, t0)), storage.ErrConflict)

	for i := 1; i <= 3; i++ {
		got, err := s.ReservePINAttempt(ctx, "c1", 3, t0)
		mustNoErr(t, "ReservePINAttempt", err)
		want.Attempts = i
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ReservePINAttempt #%d:\ngot  %+v\nwant %+v", i, got, want)
		}
	}
	_, err := s.ReservePINAttempt(ctx, "c1", 3, t0)
	checkErr(t, "ReservePINAttempt past the limit", err, publicauth.ErrChallengeInvalid)
	_, err = s.ReservePINAttempt(ctx, "expired", 3, t0)
	checkErr(t, "ReservePINAttempt at expiry", err, publicauth.ErrChallengeInvalid)
	_, err = s.ReservePINAttempt(ctx, "nope", 3, t0)
	checkErr(t, "ReservePINAttempt unknown", err, publicauth.ErrChallengeInvalid)
	checkErr(t, "ConsumePINChallenge expired", s.ConsumePINChallenge(ctx, "expired", t0), publicauth.ErrChallengeInvalid)
	checkErr(t, "ConsumePINChallenge unknown", s.ConsumePINChallenge(ctx, "nope", t0), publicauth.ErrChallengeInvalid)

	// The attempt that found the right PIN consumes the challenge; nothing more works then.
	checkErr(t, "ConsumePINChallenge", s.ConsumePINChallenge(ctx, "c1", t0), nil)
	checkErr(t, "ConsumePINChallenge twice", s.ConsumePINChallenge(ctx, "c1", t0), publicauth.ErrChallengeInvalid)
	mustCreateChallenge(t, s, newChallenge("c3", u.ID, t0.Add(time.Minute)))
	mustNoErr(t, "ConsumePINChallenge(c3)", s.ConsumePINChallenge(ctx, "c3", t0))
	_, err = s.ReservePINAttempt(ctx, "c3", 3, t0)
	checkErr(t, "ReservePINAttempt after use", err, publicauth.ErrChallengeInvalid)
}

func testConcurrentPINAttempts(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "pinrace@example.com")
	mustCreateChallenge(t, s, newChallenge("c", u.ID, t0.Add(time.Hour)))
	const maxAttempts = 3
	errs := runConcurrently(10, func(int) error {
		_, err := s.ReservePINAttempt(ctx, "c", maxAttempts, t0)
		return err
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, publicauth.ErrChallengeInvalid):
			t.Errorf("ReservePINAttempt #%d: got error %v, want nil or %v", i, err, publicauth.ErrChallengeInvalid)
		}
	}
	if won != maxAttempts {
		t.Errorf("ReservePINAttempt: got %d attempts granted, want exactly %d", won, maxAttempts)
	}
}

func testConcurrentPINConsume(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "pinconsume@example.com")
	mustCreateChallenge(t, s, newChallenge("c", u.ID, t0.Add(time.Hour)))
	errs := runConcurrently(10, func(int) error { return s.ConsumePINChallenge(ctx, "c", t0) })
	checkOneWinner(t, "ConsumePINChallenge", errs, publicauth.ErrChallengeInvalid)
}

func testRequirePINRoundTrip(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := newUser("gated@example.com")
	u.RequirePIN = true
	mustNoErr(t, "CreateUser", s.CreateUser(ctx, u))
	got, err := s.UserByEmail(ctx, "gated@example.com")
	mustNoErr(t, "UserByEmail", err)
	if !got.RequirePIN {
		t.Errorf("got RequirePIN false after create, want true")
	}
	off := false
	_, err = s.ChangeUser(ctx, u.ID, publicauth.UserChange{RequirePIN: &off})
	mustNoErr(t, "ChangeUser", err)
	got, err = s.UserByID(ctx, u.ID)
	mustNoErr(t, "UserByID", err)
	if got.RequirePIN {
		t.Errorf("got RequirePIN true after update, want false")
	}
}

func testIsRegisteredRedirectURI(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	mustCreateClient(t, s, "other")
	mustNoErr(t, "CreateClient(bare)", s.CreateClient(ctx, &storage.Client{ID: "bare"}))
	for _, c := range []struct {
		uri  string
		want bool
	}{
		{"https://app.example/callback", true},
		{"https://other.example/callback", true},
		{"http://127.0.0.1/cb", true},
		{"https://app.example/callback/", false},
		{"https://APP.example/callback", false},
		{"https://app.example/callback?x=1", false},
		{"https://app.example", false},
		{"", false},
	} {
		got, err := s.IsRegisteredRedirectURI(ctx, c.uri)
		mustNoErr(t, "IsRegisteredRedirectURI", err)
		if got != c.want {
			t.Errorf("IsRegisteredRedirectURI(%q) = %v, want %v", c.uri, got, c.want)
		}
	}
}

func testDeleteExpiredTokensAndChallenges(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "sweep@example.com")
	mustCreateToken(t, s, newToken("tok-expired", publicauth.PurposeVerifyEmail, u.ID, t0.Add(-time.Second)), false)
	mustCreateToken(t, s, newToken("tok-used", publicauth.PurposeVerifyEmail, u.ID, t0.Add(time.Hour)), false)
	mustCreateToken(t, s, newToken("tok-live", publicauth.PurposeVerifyEmail, u.ID, t0.Add(time.Hour)), false)
	_, err := s.ConsumeOneTimeToken(ctx, "tok-used", publicauth.PurposeVerifyEmail, t0)
	mustNoErr(t, "ConsumeOneTimeToken", err)
	mustCreateChallenge(t, s, newChallenge("pin-expired", u.ID, t0.Add(-time.Second)))
	mustCreateChallenge(t, s, newChallenge("pin-used", u.ID, t0.Add(time.Hour)))
	mustCreateChallenge(t, s, newChallenge("pin-live", u.ID, t0.Add(time.Hour)))
	mustNoErr(t, "ConsumePINChallenge", s.ConsumePINChallenge(ctx, "pin-used", t0))

	n, err := s.DeleteExpired(ctx, t0, 0)
	mustNoErr(t, "DeleteExpired", err)
	if n != 4 {
		t.Errorf("DeleteExpired: got %d rows deleted, want 4", n)
	}
	// A deleted row's key can be inserted again; a kept one conflicts.
	for _, c := range []struct {
		key  string
		kept bool
	}{{"tok-expired", false}, {"tok-used", false}, {"tok-live", true}} {
		err := s.CreateOneTimeToken(ctx, newToken(c.key, publicauth.PurposeVerifyEmail, u.ID, t0), false)
		checkErr(t, "re-create token "+c.key, err, map[bool]error{true: storage.ErrConflict, false: nil}[c.kept])
	}
	for _, c := range []struct {
		key  string
		kept bool
	}{{"pin-expired", false}, {"pin-used", false}, {"pin-live", true}} {
		err := s.CreatePINChallenge(ctx, newChallenge(c.key, u.ID, t0))
		checkErr(t, "re-create challenge "+c.key, err, map[bool]error{true: storage.ErrConflict, false: nil}[c.kept])
	}
}

// testChangeUser: ChangeUser writes only the fields it is given, so a change made meanwhile
// through another field survives.
func testChangeUser(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "zoe@example.com")
	stale := *u
	on := true
	if _, err := s.ChangeUser(ctx, u.ID, publicauth.UserChange{RequirePIN: &on}); err != nil {
		t.Fatalf("ChangeUser(RequirePIN): %v", err)
	}
	// A change from a copy read before the PIN switch must not switch it back off.
	hash, verified := "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5", true
	got, err := s.ChangeUser(ctx, stale.ID, publicauth.UserChange{PasswordHash: &hash, EmailVerified: &verified})
	if err != nil {
		t.Fatalf("ChangeUser(PasswordHash): %v", err)
	}
	if !got.RequirePIN || got.PasswordHash != hash || !got.EmailVerified || got.Email != u.Email || got.Name != u.Name {
		t.Errorf("after two changes: %+v; want the PIN gate on, the new hash, verified, the rest unchanged", got)
	}
	_, err = s.ChangeUser(ctx, "no-such-user", publicauth.UserChange{RequirePIN: &on})
	checkErr(t, "ChangeUser of an unknown user", err, publicauth.ErrUserNotFound)
}
