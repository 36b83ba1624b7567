package publicauth_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// linkToken waits for the next mail to addr, checks that its link opens path under the
// env's base URL and returns the link's token.
func (e *env) linkToken(t *testing.T, addr, path string) string {
	t.Helper()
	link := smtptest.Link(t, e.smtp.WaitFor(t, addr))
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != publicauth.DefaultBaseURL+path {
		t.Fatalf("link %q opens %s, want %s", link, got, publicauth.DefaultBaseURL+path)
	}
	token := u.Query().Get("token")
	if token == "" {
		t.Fatalf("link %q has no token", link)
	}
	return token
}

// verifyLinkSentTo stores an email verification link of u as mailed to addr, as if u's
// address had been addr then, and returns the link's token.
func (e *env) verifyLinkSentTo(t *testing.T, u *publicauth.User, addr string) string {
	t.Helper()
	token := rand.Text()
	now := e.clock.Now()
	err := e.store.CreateOneTimeToken(context.Background(), &publicauth.OneTimeToken{
		IDHash: publicauth.HashToken(token), Purpose: publicauth.PurposeVerifyEmail,
		UserID: u.ID, Email: addr, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}, false)
	if err != nil {
		t.Fatalf("CreateOneTimeToken: %v", err)
	}
	return token
}

// pin waits for the next mail to addr and returns the PIN in it.
func (e *env) pin(t *testing.T, addr string) string {
	t.Helper()
	pin := smtptest.PIN(t, e.smtp.WaitFor(t, addr))
	if !regexp.MustCompile(`^[0-9]{6}$`).MatchString(pin) {
		t.Fatalf("PIN %q is not 6 digits", pin)
	}
	return pin
}

// wantMails fails the test unless want mails in all were sent to addr, once background mail
// is out.
func (e *env) wantMails(t *testing.T, addr string, want int) {
	t.Helper()
	e.svc.Wait()
	if n := e.smtp.Count(addr); n != want {
		t.Errorf("%d mails sent to %s, want %d", n, addr, want)
	}
}

// wantSessionOf fails the test unless GET path with c answers 200 for the user with email.
func (e *env) wantSessionOf(t *testing.T, path string, c *http.Cookie, email string) map[string]any {
	t.Helper()
	res := e.do(t, http.MethodGet, path, "", "", c)
	wantStatus(t, res, http.StatusOK)
	body := res.json(t)
	user, _ := body["user"].(map[string]any)
	if user["email"] != email {
		t.Errorf("session user = %v, want %s", user, email)
	}
	return body
}

const (
	magicLinkBody    = `{"success":true,"message":"If a verified account exists for this email, a sign-in link has been sent."}`
	verificationBody = `{"success":true,"message":"If an unverified account exists for this email, a verification link has been sent."}`
	resetBody        = `{"success":true,"message":"If an account exists for this email, a password reset link has been sent."}`
)

func TestRegisterVerifyAndMagicLink(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		ctx := context.Background()
		res := e.postJSON(t, "/api/public/register", map[string]string{
			"email": "Alice@Example.com", "password": "correct horse battery", "name": "Alice",
		})
		wantStatus(t, res, http.StatusCreated)

		// Before verification a magic link sends nothing, with the same answer.
		res = e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": "alice@example.com", "redirect_uri": appRedirectURI})
		wantStatus(t, res, http.StatusOK)
		wantBody(t, res, magicLinkBody)

		token := e.linkToken(t, "Alice@Example.com", publicauth.PathVerifyEmail)
		// The link alone verifies nothing: a stranger may have registered the address, so
		// its owner must also know the password. A wrong one leaves the link usable.
		if _, err := e.svc.VerifyEmail(ctx, token, "not the password at all"); !errors.Is(err, publicauth.ErrPasswordMismatch) {
			t.Fatalf("VerifyEmail with a wrong password = %v, want ErrPasswordMismatch", err)
		}
		if u, err := e.store.UserByEmail(ctx, "alice@example.com"); err != nil || u.EmailVerified {
			t.Fatalf("after a wrong password: %+v, %v; want the address unverified", u, err)
		}
		v, err := e.svc.VerifyEmail(ctx, token, "correct horse battery")
		if err != nil {
			t.Fatalf("VerifyEmail: %v", err)
		}
		if !v.EmailVerified {
			t.Errorf("VerifyEmail = %+v, want a verified user", v)
		}
		if _, err := e.svc.VerifyEmail(ctx, token, "correct horse battery"); !errors.Is(err, publicauth.ErrInvalidToken) {
			t.Errorf("VerifyEmail again = %v, want ErrInvalidToken", err)
		}
		e.wantMails(t, "Alice@Example.com", 1) // the verification only

		res = e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": "ALICE@example.com", "redirect_uri": appRedirectURI})
		wantStatus(t, res, http.StatusOK)
		wantJSONHeaders(t, res)
		wantBody(t, res, magicLinkBody)
		token = e.linkToken(t, "Alice@Example.com", publicauth.PathMagicLogin)
		u, dest, err := e.svc.ConsumeMagicLink(ctx, token)
		if err != nil {
			t.Fatalf("ConsumeMagicLink: %v", err)
		}
		if dest != (publicauth.Destination{RedirectURI: appRedirectURI}) {
			t.Errorf("destination = %+v, want the redirect URI", dest)
		}
		if e.svc.PINRequired(u) {
			t.Errorf("PINRequired = true for a user without the PIN gate")
		}
		c := startSession(t, e.svc, u, publicauth.SessionPublic)
		e.wantSessionOf(t, "/api/public/session", c, "Alice@Example.com")
		if _, _, err := e.svc.ConsumeMagicLink(ctx, token); !errors.Is(err, publicauth.ErrInvalidToken) {
			t.Errorf("ConsumeMagicLink again = %v, want ErrInvalidToken", err)
		}
	})
}

// CheckMagicLink, what opening the link (a GET) does, spends nothing and answers as
// ConsumeMagicLink would.
func TestCheckMagicLink(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		ctx := context.Background()
		u, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "cara@example.com", Password: "correct horse battery", Name: "Cara", Verified: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"", "not-a-token", strings.Repeat("A", 200)} {
			if err := e.svc.CheckMagicLink(ctx, bad); !errors.Is(err, publicauth.ErrInvalidToken) {
				t.Errorf("CheckMagicLink(%q) = %v, want ErrInvalidToken", bad, err)
			}
		}
		wantStatus(t, e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": u.Email, "redirect_uri": appRedirectURI}), http.StatusOK)
		token := e.linkToken(t, u.Email, publicauth.PathMagicLogin)
		for range 2 {
			if err := e.svc.CheckMagicLink(ctx, token); err != nil {
				t.Fatalf("CheckMagicLink of a fresh link = %v, want nil", err)
			}
		}
		disable(t, e, u)
		if err := e.svc.CheckMagicLink(ctx, token); !errors.Is(err, publicauth.ErrAccountDisabled) {
			t.Errorf("CheckMagicLink of a disabled account = %v, want ErrAccountDisabled", err)
		}
		setStatus(t, e, u, publicauth.StatusActive)
		if _, _, err := e.svc.ConsumeMagicLink(ctx, token); err != nil {
			t.Fatalf("ConsumeMagicLink after checks = %v, want the login", err)
		}
		if err := e.svc.CheckMagicLink(ctx, token); !errors.Is(err, publicauth.ErrInvalidToken) {
			t.Errorf("CheckMagicLink of a used link = %v, want ErrInvalidToken", err)
		}
	})
}

func TestMagicLinkDestinations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{MagicLinkAllowedOrigins: []string{"https://spa.example"}})
		ctx := context.Background()
		u, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "bob@example.com", Password: "correct horse battery", Name: "Bob", Verified: true})
		if err != nil {
			t.Fatal(err)
		}
		resume := "/api/oauth/authorize/resume?request=abc"
		if err := e.svc.RequestMagicLink(ctx, publicauth.MagicLinkRequest{Email: u.Email, Resume: resume}); err != nil {
			t.Fatalf("RequestMagicLink with Resume: %v", err)
		}
		_, dest, err := e.svc.ConsumeMagicLink(ctx, e.linkToken(t, u.Email, publicauth.PathMagicLogin))
		if err != nil || dest != (publicauth.Destination{Resume: resume}) {
			t.Errorf("ConsumeMagicLink = %+v, %v; want the resume path", dest, err)
		}

		res := e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": u.Email, "redirect_uri": "https://spa.example/after/login"})
		wantStatus(t, res, http.StatusOK)
		first := e.linkToken(t, u.Email, publicauth.PathMagicLogin)
		res = e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": u.Email, "redirect_uri": "https://spa.example/after/login"})
		wantStatus(t, res, http.StatusOK)
		second := e.linkToken(t, u.Email, publicauth.PathMagicLogin)
		if _, _, err := e.svc.ConsumeMagicLink(ctx, first); !errors.Is(err, publicauth.ErrInvalidToken) {
			t.Errorf("ConsumeMagicLink of a superseded link = %v, want ErrInvalidToken", err)
		}
		if _, dest, err := e.svc.ConsumeMagicLink(ctx, second); err != nil || dest.RedirectURI != "https://spa.example/after/login" {
			t.Errorf("ConsumeMagicLink = %+v, %v; want the allow-listed URL", dest, err)
		}
	})
}

func TestPINLogin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, tc := range []struct {
			name       string
			cfg        publicauth.Config
			requirePIN bool
		}{
			{"user flag", publicauth.Config{}, true},
			{"deployment switch", publicauth.Config{RequirePIN: true}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, tc.cfg)
				ctx := context.Background()
				u, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "carol@example.com", Password: "correct horse battery", Name: "Carol", RequirePIN: tc.requirePIN})
				if err != nil {
					t.Fatal(err)
				}
				res := e.postJSON(t, "/api/public/login", map[string]string{"email": u.Email, "password": "correct horse battery"})
				wantStatus(t, res, http.StatusOK)
				if c := res.cookie(publicauth.CookiePublic); c != nil {
					t.Errorf("login behind the PIN gate set %s", c.Name)
				}
				body := res.json(t)
				id, _ := body["challengeId"].(string)
				if body["success"] != true || body["pinRequired"] != true || len(id) != 43 || len(body) != 3 {
					t.Fatalf("body = %v, want {success, pinRequired: true, challengeId}", body)
				}
				pin := e.pin(t, u.Email)

				wrong := "000000"
				if pin == wrong {
					wrong = "111111"
				}
				res = e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": id, "pin": wrong})
				wantStatus(t, res, http.StatusUnauthorized)
				wantBody(t, res, `{"error":"Unauthorized","message":"wrong PIN"}`)

				res = e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": id, "pin": pin})
				wantStatus(t, res, http.StatusOK)
				body = res.json(t)
				if body["success"] != true || body["loginMethods"] == nil {
					t.Errorf("verify-pin body = %v, want the login response", body)
				}
				c := res.cookie(publicauth.CookiePublic)
				if c == nil {
					t.Fatalf("verify-pin set no %s", publicauth.CookiePublic)
				}
				e.wantSessionOf(t, "/api/public/session", c, u.Email)

				res = e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": id, "pin": pin})
				wantStatus(t, res, http.StatusUnauthorized)
				wantBody(t, res, `{"error":"Unauthorized","message":"the PIN has expired or was entered wrong too often; log in again"}`)
			})
		}

		t.Run("magic link then PIN", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			ctx := context.Background()
			u, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "dan@example.com", Password: "correct horse battery", Name: "Dan", Verified: true, RequirePIN: true})
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, e.postJSON(t, "/api/public/request-magic-link", map[string]string{"email": u.Email, "redirect_uri": appRedirectURI}), http.StatusOK)
			u, dest, err := e.svc.ConsumeMagicLink(ctx, e.linkToken(t, u.Email, publicauth.PathMagicLogin))
			if err != nil || !e.svc.PINRequired(u) {
				t.Fatalf("ConsumeMagicLink = %v, PINRequired %v; want a PIN-gated user", err, e.svc.PINRequired(u))
			}
			ch, err := e.svc.StartPINChallenge(ctx, u, publicauth.SessionPublic, publicauth.MethodMagicLink, dest)
			if err != nil {
				t.Fatalf("StartPINChallenge: %v", err)
			}
			if ch.ExpiresAt != t0.Add(publicauth.DefaultPINLifespan) {
				t.Errorf("challenge expires at %v, want %v", ch.ExpiresAt, t0.Add(publicauth.DefaultPINLifespan))
			}
			u2, got, err := e.svc.VerifyPIN(ctx, ch.ID, e.pin(t, u.Email))
			if err != nil {
				t.Fatalf("VerifyPIN: %v", err)
			}
			if u2.ID != u.ID || got.Kind != publicauth.SessionPublic || got.Method != publicauth.MethodMagicLink || got.Destination != dest {
				t.Errorf("VerifyPIN = %+v, want the challenge of the magic link", got)
			}
		})
	})
}

func TestAdminLoginAndSSOValidate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		newAdmin := func(t *testing.T, e *env, pin bool) *publicauth.User {
			t.Helper()
			u, err := e.svc.CreateUser(context.Background(), publicauth.UserInput{
				Email: "root@example.com", Password: "correct horse battery", Name: "Root", Role: publicauth.RoleAdmin, Verified: true, RequirePIN: pin,
			})
			if err != nil {
				t.Fatal(err)
			}
			return u
		}

		t.Run("login, validate, logout", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			u := newAdmin(t, e, false)
			res := e.postJSON(t, "/api/admin/login", map[string]string{"email": u.Email, "password": "correct horse battery"})
			wantStatus(t, res, http.StatusOK)
			wantJSONHeaders(t, res)
			body := res.json(t)
			if body["success"] != true || len(body) != 2 {
				t.Errorf("body = %v, want {success, user}", body)
			}
			c := res.cookie(publicauth.CookieAdmin)
			if c == nil || c.SameSite != http.SameSiteStrictMode || !c.HttpOnly || c.MaxAge != 8*3600 {
				t.Fatalf("cookie = %+v, want an HttpOnly, SameSite=Strict admin-session of 8 hours", c)
			}
			if res.cookie(publicauth.CookiePublic) != nil {
				t.Errorf("admin login set a public-session too")
			}
			body = e.wantSessionOf(t, "/api/sso/validate", c, u.Email)
			if body["isValid"] != true || body["sessionType"] != "admin" {
				t.Errorf("sso/validate = %v, want a valid admin session", body)
			}
			res = e.do(t, http.MethodPost, "/api/admin/logout", "", "", c)
			wantStatus(t, res, http.StatusOK)
			wantBody(t, res, `{"success":true}`)
			if cleared := res.cookie(publicauth.CookieAdmin); cleared == nil || cleared.MaxAge >= 0 {
				t.Errorf("admin logout cookie = %+v, want it cleared", cleared)
			}
			res = e.do(t, http.MethodGet, "/api/sso/validate", "", "", c)
			wantStatus(t, res, http.StatusUnauthorized)
			wantBody(t, res, `{"isValid":false}`)
		})

		t.Run("PIN-gated admin", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			u := newAdmin(t, e, true)
			res := e.postJSON(t, "/api/admin/login", map[string]string{"email": u.Email, "password": "correct horse battery"})
			wantStatus(t, res, http.StatusOK)
			if res.cookie(publicauth.CookieAdmin) != nil {
				t.Errorf("PIN-gated admin login set %s", publicauth.CookieAdmin)
			}
			id, _ := res.json(t)["challengeId"].(string)
			res = e.postJSON(t, "/api/public/verify-pin", map[string]string{"challengeId": id, "pin": e.pin(t, u.Email)})
			wantStatus(t, res, http.StatusOK)
			c := res.cookie(publicauth.CookieAdmin)
			if c == nil || res.cookie(publicauth.CookiePublic) != nil {
				t.Fatalf("verify-pin of an admin challenge set %v, want only %s", res.header.Values("Set-Cookie"), publicauth.CookieAdmin)
			}
			if body := e.wantSessionOf(t, "/api/sso/validate", c, u.Email); body["sessionType"] != "admin" {
				t.Errorf("sso/validate = %v, want an admin session", body)
			}
		})

		t.Run("sso/validate prefers admin-session, then public-session", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			admin := newAdmin(t, e, false)
			e.register(t, "pat@example.com", "correct horse battery", "Pat")
			pub := e.login(t, "pat@example.com", "correct horse battery")
			adm := startSession(t, e.svc, admin, publicauth.SessionAdmin)
			res := e.do(t, http.MethodGet, "/api/sso/validate", "", "", pub, adm)
			wantStatus(t, res, http.StatusOK)
			if body := res.json(t); body["sessionType"] != "admin" {
				t.Errorf("sso/validate with both = %v, want the admin session", body)
			}
			body := e.wantSessionOf(t, "/api/sso/validate", pub, "pat@example.com")
			if body["sessionType"] != "public" || len(body) != 3 {
				t.Errorf("sso/validate = %v, want {isValid, sessionType: public, user}", body)
			}
			res = e.do(t, http.MethodGet, "/api/sso/validate", "", "")
			wantStatus(t, res, http.StatusUnauthorized)
			wantBody(t, res, `{"isValid":false}`)
		})
	})
}

func TestPasswordReset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		e.register(t, "fay@example.com", "correct horse battery", "Fay")
		e.linkToken(t, "fay@example.com", publicauth.PathVerifyEmail) // the registration's mail
		first := e.login(t, "fay@example.com", "correct horse battery")
		second := e.login(t, "fay@example.com", "correct horse battery")

		res := e.postJSON(t, "/api/public/request-password-reset", map[string]string{"email": "FAY@example.com"})
		wantStatus(t, res, http.StatusOK)
		wantBody(t, res, resetBody)
		token := e.linkToken(t, "fay@example.com", publicauth.PathResetPassword)

		res = e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "short"})
		wantStatus(t, res, http.StatusBadRequest)
		wantBody(t, res, `{"error":"Bad Request","message":"password must be at least 8 characters"}`)

		res = e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "a brand new passphrase"})
		wantStatus(t, res, http.StatusOK)
		wantBody(t, res, `{"success":true,"message":"Your password has been changed. Log in with the new password."}`)
		for _, c := range []*http.Cookie{first, second} {
			wantStatus(t, e.do(t, http.MethodGet, "/api/public/session", "", "", c), http.StatusUnauthorized)
		}
		wantStatus(t, e.postJSON(t, "/api/public/login", map[string]string{"email": "fay@example.com", "password": "correct horse battery"}), http.StatusUnauthorized)
		e.login(t, "fay@example.com", "a brand new passphrase")
		u, err := e.store.UserByEmail(context.Background(), "fay@example.com")
		if err != nil || !u.EmailVerified {
			t.Errorf("after reset: %+v, %v; want the email verified", u, err)
		}

		res = e.postJSON(t, "/api/public/reset-password", map[string]string{"token": token, "password": "yet another passphrase"})
		wantStatus(t, res, http.StatusBadRequest)
		wantBody(t, res, `{"error":"Bad Request","message":"the link is invalid or has expired"}`)
	})
}

func TestResendVerification(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		ctx := context.Background()
		e.register(t, "gus@example.com", "correct horse battery", "Gus")
		first := e.linkToken(t, "gus@example.com", publicauth.PathVerifyEmail)
		if _, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "hal@example.com", Password: "correct horse battery", Name: "Hal", Verified: true}); err != nil {
			t.Fatal(err)
		}
		for _, email := range []string{"gus@example.com", "hal@example.com", "nobody@example.com"} {
			res := e.postJSON(t, "/api/public/resend-verification", map[string]string{"email": email})
			wantStatus(t, res, http.StatusOK)
			wantBody(t, res, verificationBody)
		}
		second := e.linkToken(t, "gus@example.com", publicauth.PathVerifyEmail)
		e.wantMails(t, "hal@example.com", 0)
		e.wantMails(t, "nobody@example.com", 0)
		// Both links work until one is used (a resend supersedes nothing): the earlier one
		// still verifies. The first verification then spends the account's other mailed
		// links, the later verification link with them.
		if _, err := e.svc.VerifyEmail(ctx, first, "correct horse battery"); err != nil {
			t.Fatalf("VerifyEmail(first): %v, want the earlier link still valid", err)
		}
		if _, err := e.svc.VerifyEmail(ctx, second, "correct horse battery"); !errors.Is(err, publicauth.ErrInvalidToken) {
			t.Errorf("VerifyEmail(second) = %v, want ErrInvalidToken once the address is verified", err)
		}

		t.Run("a link to an address the account no longer has", func(t *testing.T) {
			u := e.register(t, "ivy.new@example.com", "correct horse battery", "Ivy")
			token := e.verifyLinkSentTo(t, u, "ivy@example.com")
			if _, err := e.svc.VerifyEmail(ctx, token, "correct horse battery"); !errors.Is(err, publicauth.ErrInvalidToken) {
				t.Errorf("VerifyEmail = %v, want ErrInvalidToken", err)
			}
		})

		// An address Unicode case folding equals (the Kelvin sign) is another mailbox; one
		// that differs in ASCII case is the same.
		for _, c := range []struct {
			original, changed string
			want              error
		}{
			{"kip@example.com", "\u212Aip@example.com", publicauth.ErrInvalidToken},
			{"kay@example.com", "KAY@Example.com", nil},
		} {
			t.Run(fmt.Sprintf("a link after the address became %+q", c.changed), func(t *testing.T) {
				u := e.register(t, c.changed, "correct horse battery", "Kip")
				token := e.verifyLinkSentTo(t, u, c.original)
				if _, err := e.svc.VerifyEmail(ctx, token, "correct horse battery"); !errors.Is(err, c.want) {
					t.Errorf("VerifyEmail = %v, want %v", err, c.want)
				}
			})
		}
	})
}

func TestSetRequirePIN(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		u := e.register(t, "jo@example.com", "correct horse battery", "Jo")
		got, err := e.svc.SetRequirePIN(context.Background(), u.ID, true)
		if err != nil || !got.RequirePIN {
			t.Fatalf("SetRequirePIN = %+v, %v; want the gate on", got, err)
		}
		res := e.postJSON(t, "/api/public/login", map[string]string{"email": u.Email, "password": "correct horse battery"})
		wantStatus(t, res, http.StatusOK)
		if res.json(t)["pinRequired"] != true {
			t.Errorf("login after SetRequirePIN(true) did not ask for a PIN")
		}
		if _, err := e.svc.SetRequirePIN(context.Background(), u.ID, false); err != nil {
			t.Fatal(err)
		}
		e.login(t, u.Email, "correct horse battery")
		if _, err := e.svc.SetRequirePIN(context.Background(), "no-such-user", true); !errors.Is(err, publicauth.ErrUserNotFound) {
			t.Errorf("SetRequirePIN of an unknown user = %v, want ErrUserNotFound", err)
		}
	})
}

// TestPasswordResetRace: resets racing on one link are one reset. The one that spends the
// link sets its password, in the transaction that also revokes the account's grants; the
// others change nothing, so the password that works is the winner's, never a loser's.
func TestPasswordResetRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		ctx := context.Background()
		e.register(t, "gil@example.com", "correct horse battery", "Gil")
		e.linkToken(t, "gil@example.com", publicauth.PathVerifyEmail) // the registration's mail
		if err := e.svc.RequestPasswordReset(ctx, "gil@example.com"); err != nil {
			t.Fatal(err)
		}
		token := e.linkToken(t, "gil@example.com", publicauth.PathResetPassword)

		const racers = 6
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.svc.ResetPassword(ctx, token, fmt.Sprintf("racing passphrase number %d", i))
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("resets %d and %d both succeeded on one link", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, publicauth.ErrInvalidToken):
				t.Fatalf("reset %d: %v, want success or ErrInvalidToken", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no reset succeeded")
		}
		for i := range racers {
			_, err := e.svc.Authenticate(ctx, "gil@example.com", fmt.Sprintf("racing passphrase number %d", i))
			if works := err == nil; works != (i == winner) {
				t.Errorf("password of reset %d works: %v (err %v); only the winner's (%d) may", i, works, err, winner)
			}
		}
	})
}
