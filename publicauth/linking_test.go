package publicauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// Registering with the email of a social-only account (isAccountLinking): the password is
// added at once when the request carries that account's session, else only once the mailed
// link is opened.

const (
	linkPasswordSubject = "Confirm adding a password to your account at Gatehouse"
	addedBody           = "password added to your account"
	confirmBody         = "check your email to confirm adding a password to your account"
)

// socialUser creates a social-only account through a first Google login, as the social
// package does after the upstream proved the address.
func (e *env) socialUser(t *testing.T, subject, email, name string) *publicauth.User {
	t.Helper()
	res, err := e.svc.Identities(e.store).Login(context.Background(), publicauth.Identity{
		Provider: "google", Subject: subject, Email: email, EmailVerified: true, Name: name,
	}, nil)
	if err != nil || !res.Created {
		t.Fatalf("social login of %s: %+v, %v; want a new account", email, res, err)
	}
	return res.User
}

// registerAs posts the registration form with the given password and cookies.
func (e *env) registerAs(t *testing.T, email, password string, cookies ...*http.Cookie) response {
	t.Helper()
	return e.postJSON(t, "/api/public/register", map[string]string{
		"email": email, "password": password, "name": "Somebody Else",
	}, cookies...)
}

// wantLinkingResponse fails the test unless res is the registration response of a linking
// to u with status, message and login methods.
func wantLinkingResponse(t *testing.T, res response, status int, message string, u *publicauth.User, methods ...any) {
	t.Helper()
	wantStatus(t, res, status)
	wantJSONHeaders(t, res)
	want := map[string]any{
		"success":          true,
		"message":          message,
		"isAccountLinking": true,
		"loginMethods":     methods,
		"user": map[string]any{
			"id": u.ID, "email": u.Email, "name": u.Name, "role": "user",
			"createdAt": u.CreatedAt.UTC().Format(time.RFC3339),
		},
	}

	if got := res.json(t); !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v\nwant   %v", got, want)
	}
}

// wantLinkingAccepted fails the test unless res is the 202 of a registration that mailed a
// password link: it shows nothing of the account beyond the email and name sent.
func wantLinkingAccepted(t *testing.T, res response, sentEmail string) {
	t.Helper()
	wantStatus(t, res, http.StatusAccepted)
	wantJSONHeaders(t, res)
	want := map[string]any{
		"success": true, "message": confirmBody, "isAccountLinking": true, "loginMethods": []any{},
		"user": map[string]any{"email": sentEmail, "name": "Somebody Else"},
	}
	if got := res.json(t); !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v\nwant   %v", got, want)
	}
}

// linkPasswordToken waits for the next mail to addr, checks it is the password linking mail
// (with no password in it) and returns its token.
func (e *env) linkPasswordToken(t *testing.T, addr, password string) string {
	t.Helper()
	m := e.smtp.WaitFor(t, addr)
	if m.Subject != linkPasswordSubject {
		t.Errorf("subject = %q, want %q", m.Subject, linkPasswordSubject)
	}
	if strings.Contains(m.Text, password) || strings.Contains(m.HTML, password) {
		t.Errorf("the mail contains the password")
	}
	link, err := url.Parse(smtptest.Link(t, m))
	if err != nil {
		t.Fatal(err)
	}
	if got := link.Scheme + "://" + link.Host + link.Path; got != publicauth.DefaultBaseURL+publicauth.PathConfirmPassword {
		t.Fatalf("link %s, want one to %s", link, publicauth.PathConfirmPassword)
	}
	return link.Query().Get("token")
}

// wantPassword fails the test unless a password login of email with password answers
// status.
func (e *env) wantPassword(t *testing.T, email, password string, status int) {
	t.Helper()
	res := e.postJSON(t, "/api/public/login", map[string]string{"email": email, "password": password})
	if res.status != status {
		t.Errorf("login of %s with that password: status %d, want %d (body %s)", email, res.status, status, res.body)
	}
}

// wantSessionMethods logs email in with password and fails the test unless its session
// shows exactly methods.
func (e *env) wantSessionMethods(t *testing.T, email, password string, methods ...any) {
	t.Helper()
	body := e.wantSessionOf(t, "/api/public/session", e.login(t, email, password), email)
	user, _ := body["user"].(map[string]any)
	if got := user["loginMethods"]; !reflect.DeepEqual(got, methods) {
		t.Errorf("session loginMethods = %v, want %v", got, methods)
	}
}

func TestRegisterAddsPasswordToSocialOnlyAccount(t *testing.T) {
	const pw, other = "correct horse battery", "another fine passphrase"
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		ctx := context.Background()

		t.Run("without a session: 202, nothing changes until the mailed link is opened", func(t *testing.T) {
			ada := e.socialUser(t, "g-ada", "ada@example.com", "Ada")
			wantLinkingAccepted(t, e.registerAs(t, "  ADA@example.com ", pw), "ADA@example.com")
			e.wantPassword(t, "ada@example.com", pw, http.StatusUnauthorized)
			token := e.linkPasswordToken(t, "ada@example.com", pw)
			e.wantMails(t, "ada@example.com", 1) // no verification mail besides

			// The link is no email verification link, and the owner must type the password
			// the registration chose: the wrong one leaves the link usable.
			if _, err := e.svc.VerifyEmail(ctx, token, pw); !errors.Is(err, publicauth.ErrInvalidToken) {
				t.Errorf("VerifyEmail of a password link = %v, want ErrInvalidToken", err)
			}
			res := e.postJSON(t, "/api/public/confirm-password", map[string]string{"token": token, "password": other})
			wantStatus(t, res, http.StatusUnauthorized)
			wantBody(t, res, `{"error":"Unauthorized","message":"the password is not the one chosen when registering"}`)
			e.wantPassword(t, "ada@example.com", other, http.StatusUnauthorized)
			res = e.postJSON(t, "/api/public/confirm-password", map[string]string{"token": token, "password": pw})
			wantLinkingResponse(t, res, http.StatusOK, addedBody, ada, "password", "google")
			e.wantSessionMethods(t, "ada@example.com", pw, "password", "google")
			stored, err := e.svc.UserByID(ctx, ada.ID)
			if err != nil || stored.Name != "Ada" || !stored.EmailVerified {
				t.Errorf("stored = %+v, %v; want the name kept and the address verified", stored, err)
			}
			if _, err := e.svc.ConfirmPassword(ctx, token, pw); !errors.Is(err, publicauth.ErrInvalidToken) {
				t.Errorf("ConfirmPassword again = %v, want ErrInvalidToken", err)
			}
		})

		t.Run("with a session of that account: 200, the password is added at once", func(t *testing.T) {
			bea := e.socialUser(t, "g-bea", "bea@example.com", "Bea")
			c := startSession(t, e.svc, bea, publicauth.SessionPublic)
			wantLinkingResponse(t, e.registerAs(t, "bea@example.com", pw, c), http.StatusOK, addedBody, bea, "password", "google")
			e.wantSessionMethods(t, "bea@example.com", pw, "password", "google")
			e.wantMails(t, "bea@example.com", 0)
			// The password is there now: the email is taken like any other.
			wantStatus(t, e.registerAs(t, "bea@example.com", other, c), http.StatusConflict)
		})

		t.Run("with a session of another account: as without one", func(t *testing.T) {
			e.socialUser(t, "g-cy", "cy@example.com", "Cy")
			dan, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "dan@example.com", Password: other, Name: "Dan", Verified: true})
			if err != nil {
				t.Fatal(err)
			}
			c := startSession(t, e.svc, dan, publicauth.SessionPublic)
			wantLinkingAccepted(t, e.registerAs(t, "cy@example.com", pw, c), "cy@example.com")
			e.wantPassword(t, "cy@example.com", pw, http.StatusUnauthorized)
			// The token keeps the password's argon2id hash, never the password.
			token := e.linkPasswordToken(t, "cy@example.com", pw)
			sum := sha256.Sum256([]byte(token))
			stored, err := e.store.ConsumeOneTimeToken(ctx, hex.EncodeToString(sum[:]), publicauth.PurposeLinkPassword, e.clock.Now())
			if err != nil {
				t.Fatalf("ConsumeOneTimeToken: %v", err)
			}
			if ok, err := publicauth.VerifyPassword(pw, stored.Payload); !ok || err != nil || strings.Contains(stored.Payload, pw) {
				t.Errorf("payload %q: verifies %v (%v); want the argon2id hash of the password", stored.Payload, ok, err)
			}
		})

		t.Run("a newer registration supersedes the older link", func(t *testing.T) {
			e.socialUser(t, "g-eve", "eve@example.com", "Eve")
			wantStatus(t, e.registerAs(t, "eve@example.com", pw), http.StatusAccepted)
			first := e.linkPasswordToken(t, "eve@example.com", pw)
			wantStatus(t, e.registerAs(t, "eve@example.com", other), http.StatusAccepted)
			second := e.linkPasswordToken(t, "eve@example.com", other)
			if _, err := e.svc.ConfirmPassword(ctx, first, pw); !errors.Is(err, publicauth.ErrInvalidToken) {
				t.Errorf("ConfirmPassword(first) = %v, want ErrInvalidToken", err)
			}
			if u, err := e.svc.ConfirmPassword(ctx, second, other); err != nil || u.PasswordHash == "" {
				t.Fatalf("ConfirmPassword(second) = %+v, %v; want the password added", u, err)
			}
			e.wantPassword(t, "eve@example.com", pw, http.StatusUnauthorized)
			e.wantSessionMethods(t, "eve@example.com", other, "password", "google")
		})

		t.Run("an account that got a password meanwhile refuses the link", func(t *testing.T) {
			fay := e.socialUser(t, "g-fay", "fay@example.com", "Fay")
			wantStatus(t, e.registerAs(t, "fay@example.com", pw), http.StatusAccepted)
			token := e.linkPasswordToken(t, "fay@example.com", pw)
			c := startSession(t, e.svc, fay, publicauth.SessionPublic)
			wantStatus(t, e.registerAs(t, "fay@example.com", other, c), http.StatusOK)
			if _, err := e.svc.ConfirmPassword(ctx, token, pw); !errors.Is(err, publicauth.ErrInvalidToken) {
				t.Errorf("ConfirmPassword = %v, want ErrInvalidToken", err)
			}
			e.wantPassword(t, "fay@example.com", pw, http.StatusUnauthorized)
			e.wantPassword(t, "fay@example.com", other, http.StatusOK)
		})

		t.Run("an email that has a password, or a disabled account's, stays taken", func(t *testing.T) {
			gus, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "gus@example.com", Password: other, Name: "Gus", Verified: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Identities(e.store).Login(ctx, publicauth.Identity{
				Provider: "google", Subject: "g-gus", Email: "gus@example.com", EmailVerified: true,
			}, nil); err != nil {
				t.Fatal(err)
			}
			hal := e.socialUser(t, "g-hal", "hal@example.com", "Hal")
			disable(t, e, hal)
			for _, email := range []string{"gus@example.com", "hal@example.com"} {
				res := e.registerAs(t, email, pw, startSession(t, e.svc, gus, publicauth.SessionPublic))
				wantStatus(t, res, http.StatusConflict)
				wantBody(t, res, `{"error":"Conflict","message":"email already registered"}`)
				e.wantMails(t, email, 0)
			}
		})

		t.Run("a refused password is refused before any mail", func(t *testing.T) {
			e.socialUser(t, "g-ivy", "ivy@example.com", "Ivy")
			wantStatus(t, e.registerAs(t, "ivy@example.com", "short"), http.StatusBadRequest)
			wantStatus(t, e.registerAs(t, "ivy@example.com", "ivy@example.com!"), http.StatusBadRequest)
			e.wantMails(t, "ivy@example.com", 0)
		})
	})
}

func TestRegisterLinkingMailLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{Limits: publicauth.RateLimits{PerAccount: publicauth.Rate{Limit: 1, Window: time.Hour}}})
		e.socialUser(t, "g-joy", "joy@example.com", "Joy")
		wantStatus(t, e.registerAs(t, "joy@example.com", "correct horse battery"), http.StatusAccepted)
		res := e.registerAs(t, "joy@example.com", "correct horse battery")
		wantStatus(t, res, http.StatusTooManyRequests)
		if res.header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
		e.wantMails(t, "joy@example.com", 1)
		e.clock.Advance(time.Hour)
		wantStatus(t, e.registerAs(t, "joy@example.com", "correct horse battery"), http.StatusAccepted)
		e.wantMails(t, "joy@example.com", 2)
	})
}
