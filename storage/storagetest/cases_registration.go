package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
)

// registrationCases are the cases of dynamic client registration (RFC 7591, RFC 7592):
// initial access tokens and what a client keeps of its registration.
func registrationCases() []storageCase {
	return []storageCase{
		{"RegistrationTokenUses", testRegistrationTokenUses},
		{"ConcurrentRegistrationTokenUses", testConcurrentRegistrationTokenUses},
		{"ClientRegistrationRoundTrip", testClientRegistrationRoundTrip},
	}
}

func testRegistrationTokenUses(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	for _, tok := range []*storage.RegistrationToken{
		{Hash: "once", ExpiresAt: now.Add(time.Hour), MaxUses: 1},
		{Hash: "any", ExpiresAt: now.Add(time.Hour)},
		{Hash: "expired", ExpiresAt: now.Add(-time.Second), MaxUses: 5},
	} {
		mustNoErr(t, "CreateRegistrationToken "+tok.Hash, s.CreateRegistrationToken(ctx, tok))
	}
	checkErr(t, "CreateRegistrationToken twice", s.CreateRegistrationToken(ctx,
		&storage.RegistrationToken{Hash: "once", ExpiresAt: now.Add(time.Hour)}), storage.ErrConflict)
	checkErr(t, "first use of a one-use token", s.UseRegistrationToken(ctx, "once"), nil)
	checkErr(t, "second use of a one-use token", s.UseRegistrationToken(ctx, "once"), storage.ErrNotFound)
	for range 3 {
		checkErr(t, "use of an unlimited token", s.UseRegistrationToken(ctx, "any"), nil)
	}
	checkErr(t, "use of an expired token", s.UseRegistrationToken(ctx, "expired"), storage.ErrNotFound)
	checkErr(t, "use of an unknown token", s.UseRegistrationToken(ctx, "unknown"), storage.ErrNotFound)
	// The janitor deletes the expired token, and only it.
	n, err := s.DeleteExpired(ctx, time.Now(), 0)
	mustNoErr(t, "DeleteExpired", err)
	if n != 1 {
		t.Errorf("DeleteExpired: got %d rows deleted, want 1 (the expired token)", n)
	}
	checkErr(t, "use of an unlimited token after DeleteExpired", s.UseRegistrationToken(ctx, "any"), nil)

	// A use inside a transaction that rolls back is not counted.
	mustNoErr(t, "CreateRegistrationToken", s.CreateRegistrationToken(ctx,
		&storage.RegistrationToken{Hash: "rolled-back", ExpiresAt: now.Add(time.Hour), MaxUses: 1}))
	_ = s.InTx(ctx, func(ctx context.Context) error {
		checkErr(t, "use in a transaction", s.UseRegistrationToken(ctx, "rolled-back"), nil)
		return storage.ErrConflict
	})
	checkErr(t, "use after the rolled-back use", s.UseRegistrationToken(ctx, "rolled-back"), nil)
}

// testConcurrentRegistrationTokenUses: of concurrent uses of a token allowing three, exactly
// three succeed.
func testConcurrentRegistrationTokenUses(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustNoErr(t, "CreateRegistrationToken", s.CreateRegistrationToken(ctx,
		&storage.RegistrationToken{Hash: "three", ExpiresAt: time.Now().Add(time.Hour), MaxUses: 3}))
	errs := runConcurrently(12, func(int) error {
		return s.InTx(ctx, func(ctx context.Context) error { return s.UseRegistrationToken(ctx, "three") })
	})
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, storage.ErrNotFound):
			t.Errorf("concurrent use #%d: got error %v, want nil or ErrNotFound", i, err)
		}
	}
	if ok != 3 {
		t.Errorf("concurrent uses of a three-use token: got %d successes, want 3", ok)
	}
}

func testClientRegistrationRoundTrip(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	c := newClient("registered")
	c.ClientRegistration = storage.ClientRegistration{
		RegistrationTokenHash: "hash-1", LogoURI: "https://app.example/logo.png",
		PolicyURI: "https://app.example/policy", TOSURI: "https://app.example/tos",
	}
	mustNoErr(t, "CreateClient", s.CreateClient(ctx, c))
	got, err := s.ClientByID(ctx, "registered")
	mustNoErr(t, "ClientByID", err)
	if got.ClientRegistration != c.ClientRegistration {
		t.Errorf("ClientRegistration: got %+v, want %+v", got.ClientRegistration, c.ClientRegistration)
	}
	// UpdateClient writes the URIs but never the registration access token hash.
	c.LogoURI, c.RegistrationTokenHash = "https://app.example/logo2.png", "ignored"
	mustNoErr(t, "UpdateClient", s.UpdateClient(ctx, c))
	mustNoErr(t, "SetClientRegistrationToken", s.SetClientRegistrationToken(ctx, "registered", "hash-2"))
	got, err = s.ClientByID(ctx, "registered")
	mustNoErr(t, "ClientByID after update", err)
	want := storage.ClientRegistration{RegistrationTokenHash: "hash-2", LogoURI: "https://app.example/logo2.png",
		PolicyURI: "https://app.example/policy", TOSURI: "https://app.example/tos"}
	if got.ClientRegistration != want {
		t.Errorf("ClientRegistration after update: got %+v, want %+v", got.ClientRegistration, want)
	}
	checkErr(t, "SetClientRegistrationToken of an unknown client",
		s.SetClientRegistrationToken(ctx, "unknown", "h"), storage.ErrNotFound)
}
