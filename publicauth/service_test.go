package publicauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestNewRefusesBadConfig(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		store := b.Open(t)
		for _, tc := range []struct {
			name    string
			cfg     publicauth.Config
			wantErr string
		}{
			{"no secret", publicauth.Config{}, "Secret must be at least 32 bytes"},
			{"short secret", publicauth.Config{Secret: []byte("too short")}, "Secret must be at least 32 bytes"},
			{"negative session lifespan", publicauth.Config{Secret: testSecret, SessionLifespan: -time.Second}, "SessionLifespan must not be negative"},
			{"negative admin lifespan", publicauth.Config{Secret: testSecret, AdminSessionLifespan: -time.Second}, "AdminSessionLifespan must not be negative"},
			{"negative magic link lifespan", publicauth.Config{Secret: testSecret, MagicLinkLifespan: -time.Second}, "MagicLinkLifespan must not be negative"},
			{"negative PIN lifespan", publicauth.Config{Secret: testSecret, PINLifespan: -time.Second}, "PINLifespan must not be negative"},
			{"relative base URL", publicauth.Config{Secret: testSecret, BaseURL: "/auth"}, "BaseURL must be an absolute http(s) URL"},
			{"base URL with a query", publicauth.Config{Secret: testSecret, BaseURL: "https://id.example/?x=1"}, "BaseURL must be an absolute http(s) URL"},
			{"allowed origin with a path", publicauth.Config{Secret: testSecret, MagicLinkAllowedOrigins: []string{"https://app.example/cb"}}, `"https://app.example/cb" is not an origin`},
			{"allowed origin without scheme", publicauth.Config{Secret: testSecret, MagicLinkAllowedOrigins: []string{"app.example"}}, `"app.example" is not an origin`},
			{"rate without window", publicauth.Config{Secret: testSecret, Limits: publicauth.RateLimits{PerIP: publicauth.Rate{Limit: 5}}}, "Limits.PerIP.Window must be positive"},
			{"rate of zero attempts", publicauth.Config{Secret: testSecret, Limits: publicauth.RateLimits{Lockout: publicauth.Rate{Window: time.Minute}}}, "Limits.Lockout.Limit must be positive"},
			{"negative PIN attempts", publicauth.Config{Secret: testSecret, Limits: publicauth.RateLimits{PINAttempts: -1}}, "Limits.PINAttempts must not be negative"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := publicauth.New(tc.cfg, store, publicauth.WithLimiter(ratelimit.NewMemory()))
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("New error = %v, want one containing %q", err, tc.wantErr)
				}
			})
		}
		t.Run("no limiter", func(t *testing.T) {
			_, err := publicauth.New(publicauth.Config{Secret: testSecret}, store)
			if err == nil || !strings.Contains(err.Error(), "no Limiter") {
				t.Errorf("New error = %v, want one containing %q", err, "no Limiter")
			}
		})
		t.Run("zero config but the secret works", func(t *testing.T) {
			svc, err := publicauth.New(publicauth.Config{Secret: testSecret}, store, publicauth.WithLimiter(ratelimit.NewMemory()))
			if err != nil {
				t.Fatalf("New error = %v, want nil", err)
			}
			svc.Close()
		})
	})
}

func TestCreateUser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		t.Run("admin with verified email", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			u, err := e.svc.CreateUser(context.Background(), publicauth.UserInput{
				Email: "root@example.com", Password: "correct horse", Name: "Root", Role: publicauth.RoleAdmin, Verified: true,
			})
			if err != nil {
				t.Fatalf("CreateUser: %v", err)
			}
			got, err := e.svc.UserByID(context.Background(), u.ID)
			if err != nil {
				t.Fatalf("UserByID: %v", err)
			}
			if got.Role != publicauth.RoleAdmin || !got.EmailVerified || got.Status != publicauth.StatusActive {
				t.Errorf("user role %q, verified %v, status %q; want admin, true, active", got.Role, got.EmailVerified, got.Status)
			}
			if _, err := e.svc.Authenticate(context.Background(), "ROOT@example.com", "correct horse"); err != nil {
				t.Errorf("Authenticate: %v, want nil", err)
			}
		})
		for _, tc := range []struct {
			name      string
			in        publicauth.UserInput
			wantField string
		}{
			{"unknown role refused", publicauth.UserInput{Email: "a@example.com", Password: "correct horse", Name: "A", Role: "owner"}, "role"},
			{"short password refused", publicauth.UserInput{Email: "a@example.com", Password: "short", Name: "A"}, "password"},
			{"bad email refused", publicauth.UserInput{Email: "a@", Password: "correct horse", Name: "A"}, "email"},
			{"control character in name refused", publicauth.UserInput{Email: "a@example.com", Password: "correct horse", Name: "A\nB"}, "name"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, publicauth.Config{})
				_, err := e.svc.CreateUser(context.Background(), tc.in)
				var inErr *publicauth.InputError
				if !errors.As(err, &inErr) || inErr.Field != tc.wantField {
					t.Errorf("CreateUser error = %v, want *InputError for field %q", err, tc.wantField)
				}
			})
		}
		t.Run("taken email refused", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			e.register(t, "a@example.com", "correct horse", "A")
			_, err := e.svc.CreateUser(context.Background(), publicauth.UserInput{Email: "A@Example.com", Password: "correct horse", Name: "A"})
			if !errors.Is(err, publicauth.ErrEmailTaken) {
				t.Errorf("CreateUser error = %v, want ErrEmailTaken", err)
			}
		})
		t.Run("unknown id is ErrUserNotFound", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			if _, err := e.svc.UserByID(context.Background(), "00000000-0000-4000-8000-000000000000"); !errors.Is(err, publicauth.ErrUserNotFound) {
				t.Errorf("UserByID error = %v, want ErrUserNotFound", err)
			}
		})
	})
}

func TestAdminSession(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b, publicauth.Config{})
		admin, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "root@example.com", Password: "correct horse", Name: "Root", Role: publicauth.RoleAdmin})
		if err != nil {
			t.Fatal(err)
		}
		user := e.register(t, "alice@example.com", "correct horse", "Alice")

		t.Run("cookie is Strict and lives 8 hours", func(t *testing.T) {
			w := httptest.NewRecorder()
			sess, err := e.svc.StartSession(ctx, w, admin, publicauth.SessionAdmin, publicauth.MethodPassword)
			if err != nil {
				t.Fatalf("StartSession: %v", err)
			}
			if !sess.AuthTime.Equal(t0) || !sess.ExpiresAt.Equal(t0.Add(8*time.Hour)) || sess.Kind != publicauth.SessionAdmin {
				t.Errorf("session auth %v, expires %v, kind %q; want %v, %v, admin", sess.AuthTime, sess.ExpiresAt, sess.Kind, t0, t0.Add(8*time.Hour))
			}
			c := cookieNamed(w.Result(), publicauth.CookieAdmin)
			if c == nil || !c.HttpOnly || c.Path != "/" || c.SameSite != http.SameSiteStrictMode || c.MaxAge != 8*3600 {
				t.Fatalf("cookie = %+v, want HttpOnly, Path=/, SameSite=Strict, Max-Age=28800", c)
			}
			_, got, err := e.svc.CurrentSession(requestWith(c), publicauth.SessionAdmin)
			if err != nil || got.ID != admin.ID {
				t.Errorf("CurrentSession(admin) = %v, %v; want the admin", got, err)
			}
			if _, _, err := e.svc.CurrentSession(requestWith(&http.Cookie{Name: publicauth.CookiePublic, Value: c.Value}), publicauth.SessionPublic); !errors.Is(err, publicauth.ErrSessionNotFound) {
				t.Errorf("admin value as public-session: error = %v, want ErrSessionNotFound", err)
			}
		})

		t.Run("public value is not accepted as admin-session", func(t *testing.T) {
			c := startSession(t, e.svc, admin, publicauth.SessionPublic)
			if _, _, err := e.svc.CurrentSession(requestWith(&http.Cookie{Name: publicauth.CookieAdmin, Value: c.Value}), publicauth.SessionAdmin); !errors.Is(err, publicauth.ErrSessionNotFound) {
				t.Errorf("error = %v, want ErrSessionNotFound", err)
			}
		})

		t.Run("non-admin refused", func(t *testing.T) {
			_, err := e.svc.StartSession(ctx, httptest.NewRecorder(), user, publicauth.SessionAdmin, publicauth.MethodPassword)
			if !errors.Is(err, publicauth.ErrNotAdmin) {
				t.Errorf("StartSession error = %v, want ErrNotAdmin", err)
			}
		})

		t.Run("EndAllSessions ends public and admin sessions", func(t *testing.T) {
			pub := startSession(t, e.svc, admin, publicauth.SessionPublic)
			adm := startSession(t, e.svc, admin, publicauth.SessionAdmin)
			if err := e.svc.EndAllSessions(ctx, admin.ID); err != nil {
				t.Fatalf("EndAllSessions: %v", err)
			}
			for kind, c := range map[string]*http.Cookie{publicauth.SessionPublic: pub, publicauth.SessionAdmin: adm} {
				if _, _, err := e.svc.CurrentSession(requestWith(c), kind); !errors.Is(err, publicauth.ErrSessionNotFound) {
					t.Errorf("%s session after EndAllSessions: error = %v, want ErrSessionNotFound", kind, err)
				}
			}
		})
	})
}

// startSession starts a session of kind for u through svc and returns its cookie.
func startSession(t *testing.T, svc *publicauth.Service, u *publicauth.User, kind string) *http.Cookie {
	t.Helper()
	w := httptest.NewRecorder()
	if _, err := svc.StartSession(context.Background(), w, u, kind, publicauth.MethodPassword); err != nil {
		t.Fatalf("StartSession(%s): %v", kind, err)
	}
	name := publicauth.CookiePublic
	if kind == publicauth.SessionAdmin {
		name = publicauth.CookieAdmin
	}
	c := cookieNamed(w.Result(), name)
	if c == nil {
		t.Fatalf("StartSession(%s) set no %s cookie", kind, name)
	}
	return c
}

func cookieNamed(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// requestWith is a request carrying the cookie.
func requestWith(c *http.Cookie) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	return r
}

// TestAuthenticateUnusableHashCostsAVerification: an account whose stored hash cannot be
// verified (say, a bcrypt hash imported from another system) must answer a login as slowly
// as an unknown email does, or the timing tells such accounts apart.
func TestAuthenticateUnusableHashCostsAVerification(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b, publicauth.Config{})
		u := e.register(t, "alice@example.com", "correct horse", "Alice")
		bcrypt := "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"
		if _, err := e.store.ChangeUser(ctx, u.ID, publicauth.UserChange{PasswordHash: &bcrypt}); err != nil {
			t.Fatalf("ChangeUser: %v", err)
		}
		// fastest returns the least time of a few failed logins, so that load on the test
		// machine only ever lengthens what is compared.
		fastest := func(email string) time.Duration {
			t.Helper()
			least := time.Duration(1<<63 - 1)
			for range 3 {
				start := time.Now()
				_, err := e.svc.Authenticate(ctx, email, "correct horse")
				least = min(least, time.Since(start))
				if !errors.Is(err, publicauth.ErrInvalidCredentials) {
					t.Fatalf("Authenticate(%q) error = %v, want ErrInvalidCredentials", email, err)
				}
			}
			return least
		}
		unknown := fastest("nobody@example.com")
		unusable := fastest("alice@example.com")
		if unusable < unknown/2 {
			t.Errorf("login with an unusable stored hash took %v, unknown email %v; want about the same", unusable, unknown)
		}
	})
}
