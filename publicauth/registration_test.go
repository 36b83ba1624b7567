package publicauth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// With registration closed, or refused by the hook, a first social login creates no
// account; an identity whose email names an existing verified account still links to it.
func TestSocialLoginFollowsRegistrationMode(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		refuse := func(_ context.Context, r publicauth.RegisterRequest) error {
			if r.Password != "" {
				t.Errorf("hook got a password for a social login")
			}
			return publicauth.RefuseRegistration("invitation only")
		}
		for _, c := range []struct {
			name string
			cfg  publicauth.Config
			opts []publicauth.Option
			want error
		}{
			{"closed", publicauth.Config{Registration: publicauth.RegistrationClosed}, nil, publicauth.ErrRegistrationClosed},
			{"hook refuses", publicauth.Config{Registration: publicauth.RegistrationHook},
				[]publicauth.Option{publicauth.WithBeforeRegister(refuse)}, &publicauth.RefusedError{Message: "invitation only"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := newEnv(t, b, c.cfg, c.opts...)
				ctx := context.Background()
				ids := e.svc.Identities(e.store)
				_, err := ids.Login(ctx, publicauth.Identity{
					Provider: "google", Subject: "g-new", Email: "new@example.com", EmailVerified: true, Name: "New",
				}, nil)
				var refused *publicauth.RefusedError
				if !errors.Is(err, c.want) && !(errors.As(err, &refused) && refused.Message == "invitation only") {
					t.Errorf("first social login: got %v, want %v", err, c.want)
				}
				if _, err := e.store.UserByEmail(ctx, "new@example.com"); !errors.Is(err, publicauth.ErrUserNotFound) {
					t.Errorf("the refused social login created an account: %v", err)
				}

				existing, err := e.svc.CreateUser(ctx, publicauth.UserInput{
					Email: "ann@example.com", Password: "correct horse battery staple", Name: "Ann", Verified: true,
				})
				if err != nil {
					t.Fatal(err)
				}
				res, err := ids.Login(ctx, publicauth.Identity{
					Provider: "google", Subject: "g-ann", Email: "ann@example.com", EmailVerified: true,
				}, nil)
				if err != nil || !res.Linked || res.User.ID != existing.ID {
					t.Errorf("social login of an existing account: got %+v, %v; want it linked", res, err)
				}
			})
		}
	})
}
