package publicauth_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestIdentityLoginDecisions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		ctx := context.Background()
		ids := e.svc.Identities(e.store)
		verified, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "v@example.com", Password: "correct horse battery", Name: "V", Verified: true})
		if err != nil {
			t.Fatal(err)
		}
		unverified, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "u@example.com", Password: "correct horse battery", Name: "U"})
		if err != nil {
			t.Fatal(err)
		}
		disabled, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "d@example.com", Password: "correct horse battery", Name: "D", Verified: true})
		if err != nil {
			t.Fatal(err)
		}
		off := publicauth.StatusDisabled
		if _, err := e.svc.ChangeAccount(ctx, disabled.ID, publicauth.AccountChange{Status: &off}); err != nil {
			t.Fatal(err)
		}
		id := func(sub, email string, ok bool) publicauth.Identity {
			return publicauth.Identity{Provider: "google", Subject: sub, Email: email, EmailVerified: ok, Name: "N " + sub}
		}
		tests := []struct {
			name     string
			identity publicauth.Identity
			signedIn *publicauth.User
			wantErr  error
			wantUser string // "" means a new user
			created  bool
			linked   bool
		}{
			{name: "unverified upstream email", identity: id("s1", "new@example.com", false), wantErr: publicauth.ErrEmailUnverifiedUpstream},
			{name: "no email", identity: id("s2", "", true), wantErr: publicauth.ErrEmailUnverifiedUpstream},
			{name: "unusable email", identity: id("s3", "not an address", true), wantErr: publicauth.ErrEmailUnverifiedUpstream},
			{name: "new email creates a social-only user", identity: id("s4", "new@example.com", true), created: true},
			{name: "known identity logs in to its user", identity: id("s4", "changed@example.com", true), wantUser: "s4"},
			{name: "verified account of the email is linked", identity: id("s5", "V@Example.com", true), wantUser: verified.ID, linked: true},
			{name: "unverified account of the email is refused", identity: id("s6", "u@example.com", true), wantErr: publicauth.ErrLinkRefused},
			{name: "signed in to that unverified account: linked", identity: id("s6", "u@example.com", true), signedIn: unverified, wantUser: unverified.ID, linked: true},
			{name: "disabled account of the email is refused, and not linked", identity: id("s8", "d@example.com", true), wantErr: publicauth.ErrAccountDisabled},
			{name: "signed in to another account: no link to it", identity: id("s7", "other@example.com", true), signedIn: verified, created: true},
		}
		bySubject := map[string]string{}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res, err := ids.Login(ctx, tt.identity, tt.signedIn)
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("got %v, want %v", err, tt.wantErr)
					}
					if _, err := e.store.UserByIdentity(ctx, "google", tt.identity.Subject); !errors.Is(err, publicauth.ErrIdentityNotFound) {
						t.Errorf("a refused login linked the identity (err %v)", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Login: %v", err)
				}
				want := tt.wantUser
				if id, ok := bySubject[want]; ok {
					want = id
				}
				if res.Created != tt.created || res.Linked != tt.linked || (want != "" && res.User.ID != want) {
					t.Errorf("got user %s created=%v linked=%v, want user %q created=%v linked=%v",
						res.User.ID, res.Created, res.Linked, want, tt.created, tt.linked)
				}
				if !slices.Contains(res.User.LoginMethods(), "google") {
					t.Errorf("loginMethods %v lack google", res.User.LoginMethods())
				}
				if res.Created && (res.User.PasswordHash != "" || !res.User.EmailVerified || res.User.Role != publicauth.RoleUser || res.User.Name != tt.identity.Name) {
					t.Errorf("created user: got %+v", res.User)
				}
				bySubject[tt.identity.Subject] = res.User.ID
			})
		}
	})
}

func TestIdentityLoginConcurrentFirstLogins(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		ids := e.svc.Identities(e.store)
		identity := publicauth.Identity{Provider: "oidc:corp", Subject: "race", Email: "race@example.com", EmailVerified: true, Name: "Racer"}
		const n = 8
		results := make([]publicauth.IdentityLogin, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = ids.Login(context.Background(), identity, nil)
			})
		}
		close(start)
		wg.Wait()
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("login %d: %v", i, errs[i])
			}
			if results[i].User.ID != results[0].User.ID {
				t.Errorf("login %d: got user %s, want %s like the others", i, results[i].User.ID, results[0].User.ID)
			}
			if results[i].Created {
				created++
			}
		}
		if created != 1 {
			t.Errorf("got %d logins that created the user, want 1", created)
		}
	})
}
