package publicauth_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// The abuse cases of issue 3, each with its answer.
func TestAbuse(t *testing.T) {
	const password = "correct horse battery"
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, tc := range []struct {
			name       string
			cfg        publicauth.Config
			run        func(t *testing.T, e *env) response
			wantStatus int
			wantBody   string
			// wantRetryAfter is the Retry-After header wanted; "" for none.
			wantRetryAfter string
		}{
			{
				name: "magic link for an unknown email: same body, no mail",
				run: func(t *testing.T, e *env) response {
					res := e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": "ghost@example.com", "redirect_uri": appRedirectURI})
					e.wantMails(t, "ghost@example.com", 0)
					return res
				},
				wantStatus: http.StatusOK, wantBody: magicLinkBody,
			},
			{
				name: "magic link for an unverified account: same body, no mail",
				run: func(t *testing.T, e *env) response {
					e.register(t, "new@example.com", password, "New")
					e.linkToken(t, "new@example.com", publicauth.PathVerifyEmail)
					res := e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": "new@example.com", "redirect_uri": appRedirectURI})
					e.wantMails(t, "new@example.com", 1) // the registration's verification only
					return res
				},
				wantStatus: http.StatusOK, wantBody: magicLinkBody,
			},
			{
				name: "magic link with a foreign redirect_uri: 400 before any lookup",
				run: func(t *testing.T, e *env) response {
					verified(t, e, "kim@example.com", password)
					res := e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": "kim@example.com", "redirect_uri": "https://evil.example/callback"})
					e.wantMails(t, "kim@example.com", 0)
					return res
				},
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"redirect_uri is not a registered redirect URI"}`,
			},
			{
				name: "magic link without redirect_uri: 400",
				run: func(t *testing.T, e *env) response {
					return e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": "kim@example.com"})
				},
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"redirect_uri is required"}`,
			},
			{
				name: "reused reset token: 400",
				run: func(t *testing.T, e *env) response {
					token := resetToken(t, e, "lee@example.com", password)
					wantStatus(t, e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "a brand new passphrase"}), http.StatusOK)
					return e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "another new passphrase"})
				},
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"the link is invalid or has expired"}`,
			},
			{
				name: "expired reset token: 400",
				run: func(t *testing.T, e *env) response {
					token := resetToken(t, e, "max@example.com", password)
					e.clock.Advance(publicauth.DefaultPasswordResetLifespan)
					return e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "a brand new passphrase"})
				},
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"the link is invalid or has expired"}`,
			},
			{
				name: "sixth PIN attempt: the challenge is dead, even with the right PIN",
				run: func(t *testing.T, e *env) response {
					u := verified(t, e, "ned@example.com", password)
					if _, err := e.svc.SetRequirePIN(context.Background(), u.ID, true); err != nil {
						t.Fatal(err)
					}
					res := e.postJSON(t, "/api/public/login", map[string]string{"email": u.Email, "password": password})
					id, _ := res.json(t)["challengeId"].(string)
					pin := e.pin(t, u.Email)
					wrong := "000000"
					if pin == wrong {
						wrong = "111111"
					}
					for i := 1; i <= publicauth.DefaultPINAttempts; i++ {
						res := e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": id, "pin": wrong})
						wantStatus(t, res, http.StatusUnauthorized)
						want := `{"error":"Unauthorized","message":"wrong PIN"}`
						if i == publicauth.DefaultPINAttempts {
							want = `{"error":"Unauthorized","message":"the PIN has expired or was entered wrong too often; log in again"}`
						}
						wantBody(t, res, want)
					}
					return e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": id, "pin": pin})
				},
				wantStatus: http.StatusUnauthorized,
				wantBody:   `{"error":"Unauthorized","message":"the PIN has expired or was entered wrong too often; log in again"}`,
			},
			{
				name: "expired PIN: 401",
				run: func(t *testing.T, e *env) response {
					u := verified(t, e, "oda@example.com", password)
					ch, err := e.svc.StartPINChallenge(context.Background(), u, publicauth.SessionPublic, publicauth.MethodPassword, publicauth.Destination{})
					if err != nil {
						t.Fatal(err)
					}
					pin := e.pin(t, u.Email)
					e.clock.Advance(publicauth.DefaultPINLifespan)
					return e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": ch.ID, "pin": pin})
				},
				wantStatus: http.StatusUnauthorized,
				wantBody:   `{"error":"Unauthorized","message":"the PIN has expired or was entered wrong too often; log in again"}`,
			},
			{
				name: "brute-force login: locked after 10 failures, even with the right password",
				run: func(t *testing.T, e *env) response {
					verified(t, e, "pam@example.com", password)
					for range publicauth.DefaultLockoutLimit {
						wantStatus(t, e.postJSON(t, "/api/public/login", map[string]string{"email": "pam@example.com", "password": "wrong password"}), http.StatusUnauthorized)
					}
					res := e.postJSON(t, "/api/public/login", map[string]string{"email": "pam@example.com", "password": "wrong password"})
					wantStatus(t, res, http.StatusTooManyRequests)
					e.clock.Advance(time.Minute)
					return e.postJSON(t, "/api/public/login", map[string]string{"email": "PAM@example.com", "password": password})
				},
				wantStatus:     http.StatusTooManyRequests,
				wantBody:       `{"error":"Too Many Requests","message":"too many attempts, try again later"}`,
				wantRetryAfter: "840",
			},
			{
				name: "brute-force login: unlocked once the window ends",
				run: func(t *testing.T, e *env) response {
					verified(t, e, "quinn@example.com", password)
					for range publicauth.DefaultLockoutLimit {
						e.postJSON(t, "/api/public/login", map[string]string{"email": "quinn@example.com", "password": "wrong password"})
					}
					wantStatus(t, e.postJSON(t, "/api/public/login", map[string]string{"email": "quinn@example.com", "password": password}), http.StatusTooManyRequests)
					e.clock.Advance(publicauth.DefaultLockoutWindow)
					return e.postJSON(t, "/api/public/login", map[string]string{"email": "quinn@example.com", "password": password})
				},
				wantStatus: http.StatusOK,
			},
			{
				name: "brute-force login of an unknown email: locked alike",
				run: func(t *testing.T, e *env) response {
					for range publicauth.DefaultLockoutLimit {
						e.postJSON(t, "/api/public/login", map[string]string{"email": "nobody@example.com", "password": "wrong password"})
					}
					return e.postJSON(t, "/api/public/login", map[string]string{"email": "nobody@example.com", "password": "wrong password"})
				},
				wantStatus:     http.StatusTooManyRequests,
				wantBody:       `{"error":"Too Many Requests","message":"too many attempts, try again later"}`,
				wantRetryAfter: "900",
			},
			{
				name: "per-IP limit: 429 with Retry-After",
				cfg:  publicauth.Config{Limits: publicauth.RateLimits{PerIP: publicauth.Rate{Limit: 3, Window: time.Minute}}},
				run: func(t *testing.T, e *env) response {
					for range 3 {
						wantStatus(t, e.postJSON(t, "/api/public/request-password-reset", map[string]string{"email": "x@example.com"}), http.StatusOK)
					}
					// Another endpoint has its own count.
					wantStatus(t, e.postJSON(t, "/api/public/resend-verification", map[string]string{"email": "x@example.com"}), http.StatusOK)
					e.clock.Advance(30 * time.Second)
					return e.postJSON(t, "/api/public/request-password-reset", map[string]string{"email": "x@example.com"})
				},
				wantStatus:     http.StatusTooManyRequests,
				wantBody:       `{"error":"Too Many Requests","message":"too many attempts, try again later"}`,
				wantRetryAfter: "30",
			},
			{
				name: "per-account mail limit: same answer, no more mail",
				run: func(t *testing.T, e *env) response {
					u := verified(t, e, "ray@example.com", password)
					for range publicauth.DefaultPerAccountLimit {
						wantStatus(t, e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": u.Email, "redirect_uri": appRedirectURI}), http.StatusOK)
					}
					res := e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": u.Email, "redirect_uri": appRedirectURI})
					e.wantMails(t, u.Email, publicauth.DefaultPerAccountLimit)
					return res
				},
				wantStatus: http.StatusOK, wantBody: magicLinkBody,
			},
			{
				name: "weak password: 400 with the reason",
				run: func(t *testing.T, e *env) response {
					return e.postJSON(t, "/api/public/register", map[string]string{"email": "sam@example.com", "password": "short", "name": "Sam"})
				},
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"password must be at least 8 characters"}`,
			},
			{
				name: "breached password on reset: 400 with the reason, the link still usable",
				run: func(t *testing.T, e *env) response {
					token := resetToken(t, e, "sue@example.com", password)
					res := e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "password123"})
					wantStatus(t, e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "a brand new passphrase"}), http.StatusOK)
					return res
				},
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"password is too common: it appears in lists of breached passwords"}`,
			},
			{
				name: "password containing the address on reset: 400, the link still usable",
				run: func(t *testing.T, e *env) response {
					token := resetToken(t, e, "sue@example.com", password)
					res := e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "my sue@example.com pw"})
					wantStatus(t, e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "a brand new passphrase"}), http.StatusOK)
					return res
				},
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"password must not be or contain your email address"}`,
			},
			{
				name: "non-admin on admin login: 403",
				run: func(t *testing.T, e *env) response {
					verified(t, e, "tom@example.com", password)
					return e.postJSON(t, "/api/admin/login", map[string]string{"email": "tom@example.com", "password": password})
				},
				wantStatus: http.StatusForbidden,
				wantBody:   `{"error":"Forbidden","message":"admin role required"}`,
			},
			{
				name: "wrong password on admin login: 401 as on login",
				run: func(t *testing.T, e *env) response {
					verified(t, e, "uma@example.com", password)
					return e.postJSON(t, "/api/admin/login", map[string]string{"email": "uma@example.com", "password": "wrong password"})
				},
				wantStatus: http.StatusUnauthorized,
				wantBody:   `{"error":"Unauthorized","message":"invalid email or password"}`,
			},
			{
				name: "logged-out session reused: 401",
				run: func(t *testing.T, e *env) response {
					verified(t, e, "val@example.com", password)
					c := e.login(t, "val@example.com", password)
					wantStatus(t, e.do(t, http.MethodPost, "/api/public/logout", "", "", c), http.StatusOK)
					return e.do(t, http.MethodGet, "/api/public/session", "", "", c)
				},
				wantStatus: http.StatusUnauthorized,
				wantBody:   `{"isValid":false,"error":"Unauthorized","message":"no valid session"}`,
			},
			{
				name: "verify-pin without a PIN: 400",
				run: func(t *testing.T, e *env) response {
					return e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": "abc"})
				},
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"pin is required"}`,
			},
			{
				name: "verify-pin of an unknown challenge: 401",
				run: func(t *testing.T, e *env) response {
					return e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": "abc", "pin": "123456"})
				},
				wantStatus: http.StatusUnauthorized,
				wantBody:   `{"error":"Unauthorized","message":"the PIN has expired or was entered wrong too often; log in again"}`,
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, tc.cfg)
				res := tc.run(t, e)
				wantStatus(t, res, tc.wantStatus)
				wantJSONHeaders(t, res)
				if tc.wantBody != "" {
					wantBody(t, res, tc.wantBody)
				}
				if got := res.header.Get("Retry-After"); got != tc.wantRetryAfter {
					t.Errorf("Retry-After = %q, want %q", got, tc.wantRetryAfter)
				}
			})
		}
	})
}

// verified creates an active user with a verified email.
func verified(t *testing.T, e *env, email, password string) *publicauth.User {
	t.Helper()
	u, err := e.svc.CreateUser(context.Background(), publicauth.UserInput{Email: email, Password: password, Name: "User", Verified: true})
	if err != nil {
		t.Fatalf("CreateUser(%q): %v", email, err)
	}
	return u
}

// resetToken creates a verified user and returns the token of a reset link mailed to them.
func resetToken(t *testing.T, e *env, email, password string) string {
	t.Helper()
	verified(t, e, email, password)
	wantStatus(t, e.postJSON(t, "/api/public/request-password-reset", map[string]string{"email": email}), http.StatusOK)
	return e.linkToken(t, email, publicauth.PathResetPassword)
}

// A login of an unknown email and one with a wrong password answer alike, and take about as
// long: both cost one argon2id verification.
func TestLoginUnknownEmailLikeWrongPassword(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{Limits: publicauth.RateLimits{Lockout: publicauth.Rate{Limit: -1}, PerIP: publicauth.Rate{Limit: -1}}})
		verified(t, e, "known@example.com", "correct horse battery")
		unknown := e.postJSON(t, "/api/public/login", map[string]string{"email": "unknown@example.com", "password": "wrong password"})
		wrong := e.postJSON(t, "/api/public/login", map[string]string{"email": "known@example.com", "password": "wrong password"})
		if unknown.status != wrong.status || string(unknown.body) != string(wrong.body) {
			t.Errorf("unknown email: %d %s; wrong password: %d %s; want the same", unknown.status, unknown.body, wrong.status, wrong.body)
		}
		wantStatus(t, wrong, http.StatusUnauthorized)

		if testing.Short() {
			t.Skip("timing comparison skipped in -short mode")
		}
		const rounds = 15
		var unknownTimes, wrongTimes []time.Duration
		timeLogin := func(email string) time.Duration {
			start := time.Now()
			e.postJSON(t, "/api/public/login", map[string]string{"email": email, "password": "wrong password"})
			return time.Since(start)
		}
		for range rounds {
			unknownTimes = append(unknownTimes, timeLogin("unknown@example.com"))
			wrongTimes = append(wrongTimes, timeLogin("known@example.com"))
		}
		mu, mw := median(unknownTimes), median(wrongTimes)
		diff, larger := mu-mw, max(mu, mw)
		if diff < 0 {
			diff = -diff
		}
		if diff*2 >= larger {
			t.Errorf("median login time: unknown email %v, wrong password %v; want them within 50%% of the larger", mu, mw)
		}
	})
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
