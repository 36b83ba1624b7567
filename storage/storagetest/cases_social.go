package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// socialCases are the cases of linked social identities.
func socialCases() []storageCase {
	return []storageCase{
		{"IdentityCreateAndLookup", testIdentityCreateAndLookup},
		{"IdentityCreateIsAllOrNothing", testIdentityCreateAllOrNothing},
		{"IdentityLink", testIdentityLink},
		{"IdentityConcurrentFirstLogin", testIdentityConcurrentFirstLogin},
		{"IdentityConcurrentLinksToOneUser", testIdentityConcurrentLinks},
	}
}

// newSocialUser is a social-only account (no password) whose one identity is at provider.
func newSocialUser(email, provider string) *publicauth.User {
	u := newUser(email)
	u.PasswordHash = ""
	u.SocialProviders = []string{provider}
	return u
}

func googleIdentity(subject, email string) publicauth.Identity {
	return publicauth.Identity{Provider: "google", Subject: subject, Email: email, EmailVerified: true, Name: "G " + subject}
}

func testIdentityCreateAndLookup(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := newSocialUser("ada@example.com", "google")
	mustNoErr(t, "CreateUserWithIdentity", s.CreateUserWithIdentity(ctx, u, googleIdentity("g-1", u.Email)))

	got, err := s.UserByIdentity(ctx, "google", "g-1")
	mustNoErr(t, "UserByIdentity", err)
	if got.ID != u.ID || got.PasswordHash != "" || !slices.Equal(got.SocialProviders, []string{"google"}) {
		t.Errorf("UserByIdentity: got %+v, want the social-only user %s with providers [google]", got, u.ID)
	}
	if got.LoginMethods()[0] != "google" {
		t.Errorf("LoginMethods: got %v, want [google]", got.LoginMethods())
	}
	for _, key := range [][2]string{{"google", "g-2"}, {"facebook", "g-1"}} {
		_, err := s.UserByIdentity(ctx, key[0], key[1])
		checkErr(t, fmt.Sprintf("UserByIdentity(%s, %s)", key[0], key[1]), err, publicauth.ErrIdentityNotFound)
	}
}

func testIdentityCreateAllOrNothing(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	existing := mustCreateUser(t, s, "taken@example.com")

	// The email collides: no identity may be left pointing nowhere.
	u := newSocialUser("TAKEN@example.com", "google")
	u.ID = "user-new-1"
	err := s.CreateUserWithIdentity(ctx, u, googleIdentity("g-1", u.Email))
	checkErr(t, "CreateUserWithIdentity with a taken email", err, publicauth.ErrEmailTaken)
	_, err = s.UserByIdentity(ctx, "google", "g-1")
	checkErr(t, "UserByIdentity after the failed create", err, publicauth.ErrIdentityNotFound)

	// The identity collides: no user may be left without it.
	mustNoErr(t, "CreateUserWithIdentity", s.CreateUserWithIdentity(ctx, newSocialUser("first@example.com", "google"), googleIdentity("g-2", "first@example.com")))
	second := newSocialUser("second@example.com", "google")
	err = s.CreateUserWithIdentity(ctx, second, googleIdentity("g-2", second.Email))
	checkErr(t, "CreateUserWithIdentity with a linked identity", err, publicauth.ErrIdentityTaken)
	_, err = s.UserByID(ctx, second.ID)
	checkErr(t, "UserByID of the refused user", err, publicauth.ErrUserNotFound)
	if _, err := s.UserByID(ctx, existing.ID); err != nil {
		t.Errorf("UserByID(existing): %v", err)
	}

	// Inside a caller's transaction the failure leaves that transaction usable.
	err = s.InTx(ctx, func(ctx context.Context) error {
		err := s.CreateUserWithIdentity(ctx, newSocialUser("third@example.com", "google"), googleIdentity("g-2", "third@example.com"))
		if !errors.Is(err, publicauth.ErrIdentityTaken) {
			return fmt.Errorf("got %v, want ErrIdentityTaken", err)
		}
		return s.CreateUserWithIdentity(ctx, newSocialUser("fourth@example.com", "google"), googleIdentity("g-4", "fourth@example.com"))
	})
	mustNoErr(t, "create after a collision in one transaction", err)
	if _, err := s.UserByIdentity(ctx, "google", "g-4"); err != nil {
		t.Errorf("UserByIdentity(g-4) after the transaction: %v", err)
	}
}

func testIdentityLink(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "ada@example.com")

	got, err := s.LinkIdentity(ctx, u.ID, googleIdentity("g-1", u.Email))
	mustNoErr(t, "LinkIdentity(google)", err)
	if !slices.Equal(got.SocialProviders, []string{"google"}) || got.PasswordHash != u.PasswordHash {
		t.Errorf("after linking google: got providers %v, hash kept %v", got.SocialProviders, got.PasswordHash == u.PasswordHash)
	}
	if m := got.LoginMethods(); !slices.Equal(m, []string{"password", "google"}) {
		t.Errorf("LoginMethods: got %v, want [password google]", m)
	}
	fb := publicauth.Identity{Provider: "facebook", Subject: "f-1", Email: u.Email, EmailVerified: true}
	got, err = s.LinkIdentity(ctx, u.ID, fb)
	mustNoErr(t, "LinkIdentity(facebook)", err)
	if !slices.Equal(got.SocialProviders, []string{"facebook", "google"}) {
		t.Errorf("after linking facebook: got providers %v, want [facebook google]", got.SocialProviders)
	}
	// A second Google account of the same user keeps the list free of duplicates.
	got, err = s.LinkIdentity(ctx, u.ID, googleIdentity("g-2", u.Email))
	mustNoErr(t, "LinkIdentity(second google)", err)
	if !slices.Equal(got.SocialProviders, []string{"facebook", "google"}) {
		t.Errorf("after a second google identity: got providers %v, want [facebook google]", got.SocialProviders)
	}
	stored, err := s.UserByID(ctx, u.ID)
	mustNoErr(t, "UserByID", err)
	if !slices.Equal(stored.SocialProviders, []string{"facebook", "google"}) {
		t.Errorf("stored providers: got %v", stored.SocialProviders)
	}

	other := mustCreateUser(t, s, "other@example.com")
	_, err = s.LinkIdentity(ctx, other.ID, googleIdentity("g-1", other.Email))
	checkErr(t, "LinkIdentity of an identity linked to another user", err, publicauth.ErrIdentityTaken)
	if o, _ := s.UserByID(ctx, other.ID); len(o.SocialProviders) != 0 {
		t.Errorf("refused link changed the other user's providers: %v", o.SocialProviders)
	}
	_, err = s.LinkIdentity(ctx, "no-such-user", googleIdentity("g-9", "x@example.com"))
	checkErr(t, "LinkIdentity to a missing user", err, publicauth.ErrUserNotFound)
}

func testIdentityConcurrentFirstLogin(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	const n = 8
	users := make([]*publicauth.User, n)
	for i := range users {
		users[i] = newSocialUser(fmt.Sprintf("racer%d@example.com", i), "google")
	}
	errs := runConcurrently(n, func(i int) error {
		return s.CreateUserWithIdentity(ctx, users[i], googleIdentity("g-race", users[i].Email))
	})
	checkOneWinner(t, "CreateUserWithIdentity", errs, publicauth.ErrIdentityTaken)
	linked, err := s.UserByIdentity(ctx, "google", "g-race")
	mustNoErr(t, "UserByIdentity", err)
	existing := 0
	for i, u := range users {
		_, err := s.UserByID(ctx, u.ID)
		switch {
		case err == nil:
			existing++
			if u.ID != linked.ID || errs[i] != nil {
				t.Errorf("user %d exists but is not the linked winner %s", i, linked.ID)
			}
		case !errors.Is(err, publicauth.ErrUserNotFound):
			t.Errorf("UserByID(%d): %v", i, err)
		}
	}
	if existing != 1 {
		t.Errorf("got %d users after concurrent first logins, want 1", existing)
	}
}

func testIdentityConcurrentLinks(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "ada@example.com")
	providers := []string{"facebook", "google", "oidc:corp", "oidc:lab"}
	errs := runConcurrently(len(providers), func(i int) error {
		_, err := s.LinkIdentity(ctx, u.ID, publicauth.Identity{Provider: providers[i], Subject: "s", Email: u.Email, EmailVerified: true})
		return err
	})
	for i, err := range errs {
		mustNoErr(t, "LinkIdentity("+providers[i]+")", err)
	}
	got, err := s.UserByID(ctx, u.ID)
	mustNoErr(t, "UserByID", err)
	if !slices.Equal(got.SocialProviders, providers) {
		t.Errorf("providers after concurrent links: got %v, want %v", got.SocialProviders, providers)
	}
}
