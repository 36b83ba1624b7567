package publicauth_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// Every JSON endpoint that hashes or verifies a password answers 503 with Retry-After in the
// spec's error shape while the hashing pool is full, and does no work; once it frees up they
// work again.
func TestPasswordHashingBusy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{PasswordHashConcurrency: 1, PasswordHashQueue: 1})
		const password = "correct horse battery staple"
		e.register(t, "ann@example.com", password, "Ann")
		if _, err := e.svc.CreateUser(context.Background(), publicauth.UserInput{
			Email: "root@example.com", Password: password, Name: "Root", Role: publicauth.RoleAdmin, Verified: true,
		}); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		e.socialUser(t, "g-1", "sam@example.com", "Sam")
		wantLinkingAccepted(t, e.registerAs(t, "sam@example.com", password), "sam@example.com")
		linkToken := e.linkPasswordToken(t, "sam@example.com", password)
		// A reset checks its link before it hashes: a bad link is a 400 even when busy.
		reset := resetToken(t, e, "rita@example.com", password)

		release := e.svc.HoldPasswordHashing()
		released := false
		defer func() {
			if !released {
				release()
			}
		}()
		for _, c := range []struct {
			name, path string
			body       map[string]string
		}{
			{"login", "/api/public/login", map[string]string{"email": "ann@example.com", "password": "wrong password here"}},
			{"login of an unknown email", "/api/public/login", map[string]string{"email": "nobody@example.com", "password": password}},
			{"admin login", "/api/admin/login", map[string]string{"email": "root@example.com", "password": password}},
			{"register", "/api/public/register", map[string]string{"email": "new@example.com", "password": password, "name": "New"}},
			{"reset password", "/api/public/reset-password", map[string]string{"token": reset, "password": "a brand new passphrase"}},
			{"confirm password", "/api/public/confirm-password", map[string]string{"token": linkToken, "password": password}},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := e.postJSON(t, c.path, c.body)
				wantStatus(t, res, http.StatusServiceUnavailable)
				wantJSONHeaders(t, res)
				if got, want := res.header.Get("Retry-After"), strconv.Itoa(int(publicauth.BusyRetryAfter.Seconds())); got != want {
					t.Errorf("Retry-After = %q, want %q", got, want)
				}
				wantBody(t, res, `{"error":"Service Unavailable","message":"too many sign-ins are being checked at once, try again in a moment"}`)
			})
		}
		if _, err := e.store.UserByEmail(context.Background(), "new@example.com"); err == nil {
			t.Error("a registration refused as busy created the account")
		}

		release()
		released = true
		e.login(t, "ann@example.com", password)
		e.wantPassword(t, "ann@example.com", "wrong password here", http.StatusUnauthorized)
		// The refused confirmation left its link usable.
		res := e.postJSON(t, "/api/public/confirm-password", map[string]string{"token": linkToken, "password": password})
		wantStatus(t, res, http.StatusOK)
		// So did the refused reset.
		res = e.postJSON(t, "/api/public/reset-password", map[string]string{"token": reset, "password": "a brand new passphrase"})
		wantStatus(t, res, http.StatusOK)
	})
}
