package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// revokeEnv is a provider that mails through a test SMTP server and logs in through a fake
// Google, with a third-party client (one that asks for consent).
type revokeEnv struct {
	*env
	mail   *smtptest.Server
	google *fakeUpstream
	third  provider.ClientInfo
	rp     *relyingParty
}

func newRevokeEnv(t *testing.T, b storagetest.Backend) *revokeEnv {
	t.Helper()
	google := newFakeUpstream(t, "google")
	mail := smtptest.Start(t)
	e := newEnv(t, b, provider.Config{
		PublicAuth: provider.PublicAuthConfig{SMTPURL: mail.URL(), MailFrom: "Gatehouse <no-reply@example.com>"},
		Social:     provider.SocialConfig{Google: google.config()},
	})
	third := e.client(t, provider.ClientSpec{ID: "third-party", Name: "Third Party App"})
	return &revokeEnv{env: e, mail: mail, google: google, third: third, rp: e.relyingParty(t, third)}
}

// sendJSON sends method path with body as application/json from b, with b's cookies.
func (e *revokeEnv) sendJSON(t *testing.T, b *browser, method, path, body string) page {
	t.Helper()
	req, err := http.NewRequest(method, e.issuer+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return b.do(t, req)
}

// wantJSON sends method path with body from b and fails unless the answer has status.
func (e *revokeEnv) wantJSON(t *testing.T, b *browser, method, path, body string, status int) {
	t.Helper()
	if p := e.sendJSON(t, b, method, path, body); p.status != status {
		t.Fatalf("%s %s: got %s, want %d", method, path, p, status)
	}
}

// linkToken waits for the next mail to addr, whose link must open path, and returns its token.
func (e *revokeEnv) linkToken(t *testing.T, addr, path string) string {
	t.Helper()
	u, err := url.Parse(e.mailedLink(t, e.mail, addr, path))
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}

// socialOnlyUser signs email in through Google in a new browser, creating a social-only
// account, and returns its id and the browser.
func (e *revokeEnv) socialOnlyUser(t *testing.T, email string) (string, *browser) {
	t.Helper()
	e.google.signIn(fakeProfile{Sub: "g-" + email, Email: email, Name: "Social User", Verified: true})
	br := socialBrowser(t, e.env, e.google.srv.URL)
	if p := br.get(t, e.issuer+"/api/auth/google/login"); p.status != http.StatusOK {
		t.Fatalf("Google login: got %s, want the signed-in page", p)
	}
	u, err := e.store.UserByIdentity(context.Background(), "google", "g-"+email)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID, br
}

// passwordUser creates a verified user with testPassword and returns its id and a new
// browser, not yet signed in (the relying party's sign-in logs it in).
func (e *revokeEnv) passwordUser(t *testing.T, email string) (string, *browser) {
	t.Helper()
	return e.user(t, email, "Password User").ID, e.browser(t)
}

// TestCredentialChangesRevokeGrants: a password reset, a password added to an account, the
// first verification of an address and an admin disabling the account each revoke every
// token and consent of the user and end its sessions, so whoever held the account before
// (an attacker who pre-registered the address, say) keeps nothing. Other users keep theirs.
func TestCredentialChangesRevokeGrants(t *testing.T) {
	const email, newPassword = "victim@example.com", "a brand new passphrase for gatehouse"
	for _, tc := range []struct {
		name string
		// account creates the account and returns its id and a browser that holds (or,
		// through the relying party's sign-in, gets) a session of it.
		account func(t *testing.T, e *revokeEnv) (string, *browser)
		// change is the change that must revoke everything.
		change func(t *testing.T, e *revokeEnv, holder *browser)
	}{
		{
			name:    "password reset",
			account: func(t *testing.T, e *revokeEnv) (string, *browser) { return e.passwordUser(t, email) },
			change: func(t *testing.T, e *revokeEnv, _ *browser) {
				owner := e.browser(t)
				e.wantJSON(t, owner, http.MethodPost, "/api/public/request-password-reset", fmt.Sprintf(`{"email": %q}`, email), http.StatusOK)
				token := e.linkToken(t, email, publicauth.PathResetPassword)
				e.wantJSON(t, owner, http.MethodPost, "/api/public/reset-password",
					fmt.Sprintf(`{"token": %q, "password": %q}`, token, newPassword), http.StatusOK)
			},
		},
		{
			name:    "password added through the mailed link",
			account: func(t *testing.T, e *revokeEnv) (string, *browser) { return e.socialOnlyUser(t, email) },
			change: func(t *testing.T, e *revokeEnv, _ *browser) {
				owner := e.browser(t)
				e.wantJSON(t, owner, http.MethodPost, "/api/public/register",
					fmt.Sprintf(`{"email": %q, "password": %q, "name": "Owner"}`, email, newPassword), http.StatusAccepted)
				token := e.linkToken(t, email, publicauth.PathConfirmPassword)
				e.wantJSON(t, owner, http.MethodPost, "/api/public/confirm-password",
					fmt.Sprintf(`{"token": %q, "password": %q}`, token, newPassword), http.StatusOK)
			},
		},
		{
			name:    "password added while signed in",
			account: func(t *testing.T, e *revokeEnv) (string, *browser) { return e.socialOnlyUser(t, email) },
			change: func(t *testing.T, e *revokeEnv, holder *browser) {
				e.wantJSON(t, holder, http.MethodPost, "/api/public/register",
					fmt.Sprintf(`{"email": %q, "password": %q, "name": "Owner"}`, email, newPassword), http.StatusOK)
			},
		},
		{
			name: "first verification of the address",
			account: func(t *testing.T, e *revokeEnv) (string, *browser) {
				// Anyone can register an address; registering signs the browser in.
				br := e.browser(t)
				if p := registerForm(t, e.env, br, email, "Registrant"); p.status != http.StatusOK {
					t.Fatalf("register: got %s, want the signed-in page", p)
				}
				u, err := e.store.UserByEmail(context.Background(), email)
				if err != nil {
					t.Fatal(err)
				}
				return u.ID, br
			},
			change: func(t *testing.T, e *revokeEnv, _ *browser) {
				link := e.mailedLink(t, e.mail, email, publicauth.PathVerifyEmail)
				owner := e.browser(t)
				f := owner.get(t, link).form(t)
				f.fields.Set("password", testPassword)
				if p := owner.post(t, f.action, f.fields); p.status != http.StatusOK || !strings.Contains(p.body, "Email verified") {
					t.Fatalf("verification link: got %s, want the email-verified page", p)
				}
			},
		},
		{
			name:    "an admin disables the user",
			account: func(t *testing.T, e *revokeEnv) (string, *browser) { return e.passwordUser(t, email) },
			change: func(t *testing.T, e *revokeEnv, _ *browser) {
				if _, err := e.p.CreateUser(context.Background(), provider.UserSpec{
					Email: "root@example.com", Password: testPassword, Name: "Root", Role: "admin", Verified: true,
				}); err != nil {
					t.Fatal(err)
				}
				admin := e.browser(t)
				e.wantJSON(t, admin, http.MethodPost, "/api/admin/login",
					fmt.Sprintf(`{"email": "root@example.com", "password": %q}`, testPassword), http.StatusOK)
				u, err := e.store.UserByEmail(context.Background(), email)
				if err != nil {
					t.Fatal(err)
				}
				p := e.sendJSON(t, admin, http.MethodPatch, "/api/admin/users/"+u.ID, `{"status": "disabled"}`)
				if p.status != http.StatusOK || !strings.Contains(p.body, `"status":"disabled"`) {
					t.Fatalf("PATCH status disabled: got %s, want 200 with the disabled user", p)
				}
			},
		},
		{
			name:    "an operator disables the user (provider.DisableUser)",
			account: func(t *testing.T, e *revokeEnv) (string, *browser) { return e.passwordUser(t, email) },
			change: func(t *testing.T, e *revokeEnv, _ *browser) {
				u, err := e.p.DisableUser(context.Background(), email)
				if err != nil || u.Status != publicauth.StatusDisabled {
					t.Fatalf("DisableUser: %+v, %v; want a disabled user", u, err)
				}
			},
		},
		{
			name:    "an operator deletes the user (provider.DeleteUser)",
			account: func(t *testing.T, e *revokeEnv) (string, *browser) { return e.passwordUser(t, email) },
			change: func(t *testing.T, e *revokeEnv, _ *browser) {
				if err := e.p.DeleteUser(context.Background(), email); err != nil {
					t.Fatalf("DeleteUser: %v", err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
				e := newRevokeEnv(t, b)
				userID, holder := tc.account(t, e)
				_, tok := e.rp.signIn(t, e.env, holder, email)
				if tok.idToken.Subject != userID {
					t.Fatalf("signed in as %s, want %s", tok.idToken.Subject, userID)
				}
				bystander := e.user(t, "bystander@example.com", "Bystander")
				bystanderBrowser := e.browser(t)
				_, bystanderTok := e.rp.signIn(t, e.env, bystanderBrowser, bystander.Email)

				tc.change(t, e, holder)

				wantOAuthError(t, e.refresh(t, e.third, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
				wantRefused(t, e.env, e.third, tok.AccessToken)
				if _, err := e.store.ConsentFor(context.Background(), userID, e.third.ClientID); !errors.Is(err, storage.ErrNotFound) {
					t.Errorf("consent after the change: error %v, want storage.ErrNotFound", err)
				}
				wantNoSession(t, e.env, holder)

				// The bystander keeps everything.
				if got := e.introspect(t, e.third, bystanderTok.AccessToken)["active"]; got != true {
					t.Errorf("bystander's access token: active %v, want true", got)
				}
				if r := e.refresh(t, e.third, bystanderTok.RefreshToken); r.status != http.StatusOK {
					t.Errorf("bystander's refresh: got %s, want 200", r)
				}
				if s := e.publicSession(t, bystanderBrowser); s["isValid"] != true {
					t.Errorf("bystander's session: got %v, want it valid", s)
				}
				if _, err := e.store.ConsentFor(context.Background(), bystander.ID, e.third.ClientID); err != nil {
					t.Errorf("bystander's consent: %v, want it kept", err)
				}
			})
		})
	}
}
