package provider_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	redislimit "github.com/gatehouse-id/gatehouse/ratelimit/redis"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// The hosted pages of public authentication, end to end: a real provider mailing through a
// real SMTP server in the test, a browser walking the pages, and a relying party verifying
// the tokens of flows that went through a magic link or the PIN gate.

// mailEnv starts a provider on backend b that mails through a fresh SMTP test server;
// change adjusts the public authentication config.
func mailEnv(t *testing.T, b storagetest.Backend, change func(*provider.PublicAuthConfig)) (*env, *smtptest.Server) {
	t.Helper()
	mail := smtptest.Start(t)
	pc := provider.PublicAuthConfig{SMTPURL: mail.URL(), MailFrom: "Gatehouse <no-reply@example.com>"}
	if change != nil {
		change(&pc)
	}
	return newEnv(t, b, provider.Config{PublicAuth: pc}), mail
}

// pinUser creates a verified user with the PIN gate on and testPassword.
func (e *env) pinUser(t *testing.T, email string) provider.UserInfo {
	t.Helper()
	u, err := e.p.CreateUser(context.Background(), provider.UserSpec{
		Email: email, Password: testPassword, Name: "PIN User", Verified: true, RequirePIN: true,
	})
	if err != nil {
		t.Fatalf("CreateUser(%s): %v", email, err)
	}
	return u
}

// mailedLink waits for the next mail to addr and returns its link, checked to open path on
// the provider.
func (e *env) mailedLink(t *testing.T, mail *smtptest.Server, addr, path string) string {
	t.Helper()
	link := smtptest.Link(t, mail.WaitFor(t, addr))
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != e.issuer+path {
		t.Fatalf("mailed link %q opens %s, want %s", link, got, e.issuer+path)
	}
	return link
}

// wantPINPage asserts that p is the PIN page and returns its form.
func wantPINPage(t *testing.T, p page, status int) htmlForm {
	t.Helper()
	if p.status != status {
		t.Fatalf("got %s, want the PIN page with %d", p, status)
	}
	f := p.form(t)
	if f.action != strings.TrimSuffix(p.url.Scheme+"://"+p.url.Host, "/")+"/pin" || f.fields.Get("challenge") == "" || f.fields.Get("csrf_token") == "" {
		t.Fatalf("got a form to %s with %v, want the PIN form with a challenge and a CSRF token:\n%s", f.action, f.fields, p)
	}
	return f
}

// submitPIN posts pin on the PIN form f.
func (b *browser) submitPIN(t *testing.T, f htmlForm, pin string) page {
	t.Helper()
	fields := url.Values{}
	for k, v := range f.fields {
		fields[k] = v
	}
	fields.Set("pin", pin)
	return b.post(t, f.action, fields)
}

// wrongPIN returns a 6-digit PIN other than pin.
func wrongPIN(pin string) string {
	n, _ := strconv.Atoi(pin)
	return strconv.Itoa(100000 + (n+1)%900000)
}

// wantErrorPage asserts an HTML error page of status that redirects nowhere.
func wantErrorPage(t *testing.T, p page, status int, text string) {
	t.Helper()
	if p.status != status || p.header.Get("Location") != "" || !strings.Contains(p.body, text) {
		t.Fatalf("got %s, want a %d page saying %q and no redirect", p, status, text)
	}
	if ct := p.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q, want text/html", ct)
	}
}

// finishFlow asserts that p is the redirect to the relying party with a code for ar,
// exchanges it and checks that the ID token names user.
func finishFlow(t *testing.T, e *env, rp *relyingParty, ar *authRequest, p page, user provider.UserInfo) tokens {
	t.Helper()
	code := wantCode(t, e, ar, callback(t, p, rp.config.RedirectURL))
	tok := rp.exchange(t, ar, code)
	if tok.idToken.Subject != user.ID {
		t.Errorf("ID token sub %q, want %q", tok.idToken.Subject, user.ID)
	}
	return tok
}

// A magic link within an authorization request. Opening the link spends nothing: mail
// scanners open links before people do, and a link an attacker mailed to a victim must not
// sign the victim into the attacker's account on a mere GET. Only the CSRF-checked POST of
// the page's button logs in.
func TestHostedMagicLinkInCodeFlow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e, mail := mailEnv(t, b, nil)
		user := e.user(t, "magic@example.com", "Magic User")
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		br := e.browser(t)

		ar := rp.start()
		link, _ := br.magicLinkInFlow(t, e, mail, ar, user.Email)

		scanner := e.browser(t)
		for range 2 {
			p := scanner.get(t, link)
			if p.status != http.StatusOK || p.header.Get("Location") != "" || !strings.Contains(p.body, "<button") {
				t.Fatalf("GET of the link: got %s, want the page with a button", p)
			}
			for name, want := range map[string]string{
				"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
				"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
			} {
				if got := p.header.Get(name); got != want {
					t.Errorf("magic-login page %s = %q, want %q", name, got, want)
				}
			}
			if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("magic-login page CSP %q, want frame-ancestors 'none'", csp)
			}
		}
		if s := e.publicSession(t, scanner); s["isValid"] != false {
			t.Errorf("session after opening the link: got %v, want none", s)
		}
		// The button's POST without the page's CSRF token is refused and spends nothing.
		if p := scanner.post(t, e.issuer+publicauth.PathMagicLogin, url.Values{"token": {tokenOf(t, link)}}); p.status != http.StatusForbidden {
			t.Errorf("POST without a CSRF token: got %s, want 403", p)
		}

		finishFlow(t, e, rp, ar, br.openMagicLink(t, e, link), user)
		if s := e.publicSession(t, scanner); s["isValid"] != false {
			t.Errorf("scanner session after the login: got %v, want none", s)
		}

		// The link works once; a second use gets the error page and goes nowhere.
		wantErrorPage(t, br.get(t, link), http.StatusBadRequest, "sign-in link is invalid")
	})
}

// magicLinkInFlow asks the login page of authorization request ar for a magic link to
// email and returns the mailed link and the paused request's token.
func (b *browser) magicLinkInFlow(t *testing.T, e *env, mail *smtptest.Server, ar *authRequest, email string) (link, paused string) {
	t.Helper()
	login := b.get(t, ar.String())
	if login.status != http.StatusOK || login.url.Path != e.base+"/login" {
		t.Fatalf("got %s, want the login page", login)
	}
	f := login.form(t)
	sent := b.post(t, e.issuer+"/magic-link", url.Values{
		"csrf_token": {f.fields.Get("csrf_token")}, "request": {f.fields.Get("request")}, "email": {email},
	})
	if sent.status != http.StatusOK || !strings.Contains(sent.body, "Check your email") || !strings.Contains(sent.body, "15 minutes") {
		t.Fatalf("got %s, want the check-your-email page naming 15 minutes", sent)
	}
	return e.mailedLink(t, mail, email, publicauth.PathMagicLogin), f.fields.Get("request")
}

// openMagicLink opens a mailed magic link as a person does: the GET shows a page with one
// button, and the button's POST logs in. It returns the answer to the POST.
func (b *browser) openMagicLink(t *testing.T, e *env, link string) page {
	t.Helper()
	p := b.get(t, link)
	if p.status != http.StatusOK || p.url.Path != e.base+publicauth.PathMagicLogin {
		t.Fatalf("got %s, want the magic-login page", p)
	}
	f := p.form(t)
	if f.method != http.MethodPost || f.action != e.issuer+publicauth.PathMagicLogin ||
		f.fields.Get("csrf_token") == "" || f.fields.Get("token") == "" {
		t.Fatalf("magic-login form %+v, want a POST to %s with a CSRF token and the link's token", f, publicauth.PathMagicLogin)
	}
	return b.post(t, f.action, f.fields)
}

// wantNoToken asserts that the stored row holds the paused request's token nowhere.
func wantNoToken(t *testing.T, what string, row any, token string) {
	t.Helper()
	if dump := fmt.Sprintf("%+v", row); token == "" || strings.Contains(dump, token) {
		t.Errorf("%s holds the paused request's token %q in clear: %s", what, token, dump)
	}
}

// sha256Hex is how the store keys a token: its hex SHA-256.
func sha256Hex(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokenOf returns the token parameter of a mailed link.
func tokenOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("link %q has no token: %v", link, err)
	}
	return u.Query().Get("token")
}

func TestHostedMagicLinkRefusals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e, mail := mailEnv(t, b, nil)
		br := e.browser(t)
		for _, token := range []string{"", "not-a-token", strings.Repeat("A", 43)} {
			wantErrorPage(t, br.get(t, e.issuer+publicauth.PathMagicLogin+"?token="+url.QueryEscape(token)),
				http.StatusBadRequest, "sign-in link is invalid")
		}

		// Without the login page's CSRF token the form is refused and nothing is mailed.
		e.user(t, "csrf@example.com", "CSRF User")
		p := br.post(t, e.issuer+"/magic-link", url.Values{"email": {"csrf@example.com"}})
		if p.status != http.StatusForbidden {
			t.Errorf("magic link without CSRF: got %s, want 403", p)
		}
		// An unknown address gets the same answer as a known one, and no mail.
		f := br.get(t, e.issuer+"/login").form(t)
		p = br.post(t, e.issuer+"/magic-link", url.Values{"csrf_token": {f.fields.Get("csrf_token")}, "email": {"nobody@example.com"}})
		if p.status != http.StatusOK || !strings.Contains(p.body, "Check your email") {
			t.Errorf("magic link for an unknown address: got %s, want the check-your-email page", p)
		}
		if n := mail.Count("nobody@example.com") + mail.Count("csrf@example.com"); n != 0 {
			t.Errorf("got %d mails, want none", n)
		}
	})
}

func TestHostedPINGateInCodeFlow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e, mail := mailEnv(t, b, nil)
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))

		t.Run("password then PIN", func(t *testing.T) {
			user := e.pinUser(t, "pin@example.com")
			br := e.browser(t)
			ar := rp.start()
			f := wantPINPage(t, br.login(t, br.get(t, ar.String()), user.Email), http.StatusOK)
			pin := smtptest.PIN(t, mail.WaitFor(t, user.Email))

			// A wrong PIN shows the PIN page again with 401; the right one then passes.
			wrong := br.submitPIN(t, f, wrongPIN(pin))
			wantPINPage(t, wrong, http.StatusUnauthorized)
			if !strings.Contains(wrong.body, "PIN is not right") || !strings.Contains(wrong.body, "We sent you a 6-digit PIN by email") {
				t.Errorf("wrong PIN page does not say so:\n%s", wrong)
			}
			finishFlow(t, e, rp, ar, br.submitPIN(t, f, pin), user)
			// The challenge is spent.
			wantErrorPage(t, br.submitPIN(t, f, pin), http.StatusUnauthorized, "Sign in again")

			// With the gate turned off the password alone signs in.
			if _, err := e.p.SetUserRequirePIN(context.Background(), user.Email, false); err != nil {
				t.Fatal(err)
			}
			fresh := e.browser(t)
			ar = rp.start()
			finishFlow(t, e, rp, ar, fresh.login(t, fresh.get(t, ar.String()), user.Email), user)
		})

		t.Run("five wrong PINs end the challenge", func(t *testing.T) {
			user := e.pinUser(t, "pin-wrong@example.com")
			br := e.browser(t)
			ar := rp.start()
			f := wantPINPage(t, br.login(t, br.get(t, ar.String()), user.Email), http.StatusOK)
			pin := smtptest.PIN(t, mail.WaitFor(t, user.Email))
			for i := 1; i <= 4; i++ {
				wantPINPage(t, br.submitPIN(t, f, wrongPIN(pin)), http.StatusUnauthorized)
			}
			fifth := br.submitPIN(t, f, wrongPIN(pin))
			wantErrorPage(t, fifth, http.StatusUnauthorized, "entered wrong too many times")
			// Even the right PIN no longer opens it, and no session was started.
			wantErrorPage(t, br.submitPIN(t, f, pin), http.StatusUnauthorized, "Sign in again")
			if s := e.publicSession(t, br); s["isValid"] != false {
				t.Errorf("session after a killed challenge: got %v, want none", s)
			}

			// The notice's link signs in again within the same authorization request.
			again := regexp.MustCompile(`href="(/login\?request=[^"]+)"`).FindStringSubmatch(fifth.body)
			if again == nil {
				t.Fatalf("the notice has no link back to the login page of the request:\n%s", fifth)
			}
			f = wantPINPage(t, br.login(t, br.get(t, e.issuer+html.UnescapeString(again[1])), user.Email), http.StatusOK)
			pin = smtptest.PIN(t, mail.WaitFor(t, user.Email))
			finishFlow(t, e, rp, ar, br.submitPIN(t, f, pin), user)
		})

		t.Run("magic link then PIN", func(t *testing.T) {
			user := e.pinUser(t, "pin-magic@example.com")
			br := e.browser(t)
			ar := rp.start()
			link, paused := br.magicLinkInFlow(t, e, mail, ar, user.Email)
			// The rows of the link and of the PIN challenge refer to the paused request by
			// reference only: its token, which drives the flow, is nowhere in them.
			ctx := context.Background()
			linkRow, err := e.store.UsableOneTimeToken(ctx, sha256Hex(tokenOf(t, link)), publicauth.PurposeMagicLink, time.Now())
			if err != nil {
				t.Fatalf("the link's row: %v", err)
			}
			wantNoToken(t, "the magic link's row", linkRow, paused)
			pf := wantPINPage(t, br.openMagicLink(t, e, link), http.StatusOK)
			pin := smtptest.PIN(t, mail.WaitFor(t, user.Email))
			challenge, err := e.store.ReservePINAttempt(ctx, pf.fields.Get("challenge"), 100, time.Now())
			if err != nil {
				t.Fatalf("the PIN challenge's row: %v", err)
			}
			wantNoToken(t, "the PIN challenge's row", challenge, paused)
			finishFlow(t, e, rp, ar, br.submitPIN(t, pf, pin), user)
		})

		t.Run("PIN form without CSRF", func(t *testing.T) {
			user := e.pinUser(t, "pin-csrf@example.com")
			br := e.browser(t)
			f := wantPINPage(t, br.login(t, br.get(t, rp.start().String()), user.Email), http.StatusOK)
			pin := smtptest.PIN(t, mail.WaitFor(t, user.Email))
			p := br.post(t, f.action, url.Values{"challenge": f.fields["challenge"], "pin": {pin}})
			if p.status != http.StatusForbidden {
				t.Errorf("PIN without CSRF token: got %s, want 403", p)
			}
		})
	})
}

func TestHostedPasswordReset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e, mail := mailEnv(t, b, nil)
		user := e.user(t, "reset@example.com", "Reset User")
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))

		// An existing session, which the reset must end.
		old := e.browser(t)
		rp.signIn(t, e, old, user.Email)
		if s := e.publicSession(t, old); s["isValid"] != true {
			t.Fatalf("session before the reset: %v", s)
		}

		br := e.browser(t)
		forgot := br.get(t, e.issuer+"/forgot-password")
		if forgot.status != http.StatusOK {
			t.Fatalf("got %s, want the forgot-password page", forgot)
		}
		f := forgot.form(t)
		f.fields.Set("email", user.Email)
		sent := br.post(t, f.action, f.fields)
		if sent.status != http.StatusOK || !strings.Contains(sent.body, "Check your email") {
			t.Fatalf("got %s, want the check-your-email page", sent)
		}
		link := e.mailedLink(t, mail, user.Email, publicauth.PathResetPassword)

		// A link cut short (no token) says so at once, not after a password was typed.
		if p := br.get(t, e.issuer+publicauth.PathResetPassword); p.status != http.StatusBadRequest || !strings.Contains(p.body, "Link incomplete") {
			t.Errorf("reset page without a token: got %s, want the 400 error page", p)
		}

		form := br.get(t, link)
		if form.status != http.StatusOK {
			t.Fatalf("got %s, want the reset form", form)
		}
		rf := form.form(t)
		if rf.fields.Get("token") == "" || rf.fields.Get("csrf_token") == "" {
			t.Fatalf("reset form fields %v, want a token and a CSRF token", rf.fields)
		}

		// A weak password shows the form again, and the link stays usable.
		rf.fields.Set("password", "short")
		weak := br.post(t, rf.action, rf.fields)
		if weak.status != http.StatusBadRequest || weak.form(t).fields.Get("token") != rf.fields.Get("token") {
			t.Fatalf("weak password: got %s, want the form again with 400", weak)
		}

		const newPassword = "a brand new passphrase for gatehouse"
		rf.fields.Set("password", newPassword)
		done := br.post(t, rf.action, rf.fields)
		if done.status != http.StatusOK || !strings.Contains(done.body, "Password changed") {
			t.Fatalf("got %s, want the password-changed page", done)
		}
		if s := e.publicSession(t, old); s["isValid"] != false {
			t.Errorf("old session after the reset: got %v, want it ended", s)
		}

		// The old password no longer works; the new one does.
		fresh := e.browser(t)
		login := fresh.get(t, rp.start().String())
		if p := fresh.login(t, login, user.Email); p.status != http.StatusUnauthorized {
			t.Errorf("old password: got %s, want 401", p)
		}
		ar := rp.start()
		lf := fresh.get(t, ar.String()).form(t)
		lf.fields.Set("email", user.Email)
		lf.fields.Set("password", newPassword)
		finishFlow(t, e, rp, ar, fresh.post(t, lf.action, lf.fields), user)

		// The link works once.
		wantErrorPage(t, br.post(t, rf.action, rf.fields), http.StatusBadRequest, "password-reset link is invalid")
	})
}

// Registering a taken address offers a way forward: sign in, or reset the password, with
// the typed address prefilled and within the same authorization request.
func TestHostedRegisterTakenAddress(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e, _ := mailEnv(t, b, nil)
		const addr = "taken+me@example.com"
		e.user(t, addr, "Taken User")
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		for _, inFlow := range []bool{false, true} {
			br := e.browser(t)
			token := ""
			if inFlow {
				token = br.get(t, rp.start().String()).url.Query().Get("request")
				if token == "" {
					t.Fatal("the authorization request did not pause on the login page")
				}
			}
			f := br.get(t, e.issuer+formPath("/register", url.Values{"request": {token}})).form(t)
			f.fields.Set("email", addr)
			f.fields.Set("name", "Someone")
			f.fields.Set("password", testPassword)
			p := br.post(t, f.action, f.fields)
			if p.status != http.StatusConflict || !strings.Contains(p.body, "Email already registered.") {
				t.Fatalf("register a taken address: got %s, want the 409 form", p)
			}
			for _, page := range []string{"/login", "/forgot-password"} {
				m := regexp.MustCompile(`href="(` + page + `\?[^"]*email=[^"]*)"`).FindStringSubmatch(p.body)
				if m == nil {
					t.Errorf("in flow %v: the page has no link to %s with the address:\n%s", inFlow, page, p.body)
					continue
				}
				next := br.get(t, e.issuer+html.UnescapeString(m[1]))
				if next.status != http.StatusOK || next.url.Path != page {
					t.Fatalf("following %s: got %s", m[1], next)
				}
				nf := next.form(t)
				if nf.fields.Get("email") != addr || nf.fields.Get("request") != token {
					t.Errorf("in flow %v: %s prefilled email %q request %q, want %q and %q",
						inFlow, page, nf.fields.Get("email"), nf.fields.Get("request"), addr, token)
				}
			}
		}
	})
}

// formPath is path with the non-empty values of q as its query.
func formPath(path string, q url.Values) string {
	for k, v := range q {
		if len(v) == 0 || v[0] == "" {
			delete(q, k)
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func TestHostedVerifyEmail(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e, mail := mailEnv(t, b, nil)
		const addr = "new@example.com"
		br := e.browser(t)
		reg := br.get(t, e.issuer+"/register")
		f := reg.form(t)
		f.fields.Set("email", addr)
		f.fields.Set("name", "New User")
		f.fields.Set("password", testPassword)
		if p := br.post(t, f.action, f.fields); p.status != http.StatusOK {
			t.Fatalf("register: got %s, want the signed-in page", p)
		}
		if s := e.publicSession(t, br); s["user"].(map[string]any)["emailVerified"] != false {
			t.Fatalf("session before verification: %v, want emailVerified false", s)
		}
		link := e.mailedLink(t, mail, addr, publicauth.PathVerifyEmail)

		// A mail scanner, or the owner of an address a stranger registered, opens the link:
		// it shows a form and verifies nothing without the account's password.
		scanner := e.browser(t)
		for range 2 {
			form := scanner.get(t, link)
			if form.status != http.StatusOK || !strings.Contains(form.body, `name="password"`) {
				t.Fatalf("opening the link: got %s, want the verification form", form)
			}
			wantHostedPageHeaders(t, form)
		}
		// The form's POST needs its CSRF token, even with the right password.
		forged := scanner.get(t, link).form(t)
		forged.fields.Set("password", testPassword)
		forged.fields.Del("csrf_token")
		if p := scanner.post(t, forged.action, forged.fields); p.status != http.StatusForbidden {
			t.Fatalf("POST without the CSRF token: got %s, want 403", p)
		}
		wrong := scanner.get(t, link).form(t)
		wrong.fields.Set("password", "not the password at all")
		if p := scanner.post(t, wrong.action, wrong.fields); p.status != http.StatusUnauthorized || !strings.Contains(p.body, `name="password"`) {
			t.Fatalf("wrong password: got %s, want the form again with 401", p)
		}
		if u, err := e.store.UserByEmail(context.Background(), addr); err != nil || u.EmailVerified {
			t.Fatalf("after the scanner: %+v, %v; want the address still unverified", u, err)
		}

		f = br.get(t, link).form(t)
		f.fields.Set("password", testPassword)
		p := br.post(t, f.action, f.fields)
		if p.status != http.StatusOK || !strings.Contains(p.body, "Email verified") {
			t.Fatalf("got %s, want the email-verified page", p)
		}
		// A first verification ends the sessions begun before it: whoever registered the
		// address may not be its owner.
		wantNoSession(t, e, br)
		if u, err := e.store.UserByEmail(context.Background(), addr); err != nil || !u.EmailVerified {
			t.Errorf("user after verification: %+v, %v; want emailVerified true", u, err)
		}
		spent := br.get(t, link).form(t)
		spent.fields.Set("password", testPassword)
		wantErrorPage(t, br.post(t, spent.action, spent.fields), http.StatusBadRequest, "verification link is invalid")
		if p := br.get(t, e.issuer+publicauth.PathVerifyEmail); p.status != http.StatusBadRequest {
			t.Errorf("the page without a token: got %s, want 400", p)
		}
	})
}

func TestHostedLoginRateLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e, _ := mailEnv(t, b, func(c *provider.PublicAuthConfig) {
			c.LoginRateLimit = provider.RateLimit{Limit: 2, Window: time.Minute}
		})
		e.user(t, "limited@example.com", "Limited User")
		br := e.browser(t)
		f := br.get(t, e.issuer+"/login").form(t)
		f.fields.Set("email", "limited@example.com")
		f.fields.Set("password", "not the password")
		for i := 0; i < 2; i++ {
			if p := br.post(t, f.action, f.fields); p.status != http.StatusUnauthorized {
				t.Fatalf("attempt %d: got %s, want 401", i+1, p)
			}
		}
		f.fields.Set("password", testPassword)
		p := br.post(t, f.action, f.fields)
		wantErrorPage(t, p, http.StatusTooManyRequests, "Too many attempts")
		if s, err := strconv.Atoi(p.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Errorf("Retry-After %q, want 1 to 60 seconds", p.header.Get("Retry-After"))
		}
	})
}

// redisURL is the Redis the shared-limit test uses; the test skips when it does not answer,
// unless GATEHOUSE_REQUIRE_REDIS=1.
const redisURL = "redis://127.0.0.1:6379/0"

func requireRedis(t *testing.T) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:6379", time.Second)
	if err != nil {
		if os.Getenv("GATEHOUSE_REQUIRE_REDIS") == "1" {
			t.Fatalf("Redis at 127.0.0.1:6379 is required: %v", err)
		}
		t.Skipf("no Redis at 127.0.0.1:6379: %v", err)
	}
	conn.Close()
}

// redisLimiter is a limiter on the test Redis, closed when t ends.
func redisLimiter(t *testing.T) *redislimit.Limiter {
	t.Helper()
	l, err := redislimit.New(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestHostedLockoutSharedThroughRedis(t *testing.T) {
	requireRedis(t)
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		cfg := provider.Config{PublicAuth: provider.PublicAuthConfig{
			LockoutLimit: provider.RateLimit{Limit: 3, Window: time.Minute},
		}}
		// Two providers that share nothing but Redis: the lockout of an address follows it.
		a, other := newEnv(t, b, cfg, provider.WithLimiter(redisLimiter(t))), newEnv(t, b, cfg, provider.WithLimiter(redisLimiter(t)))

		// Keys are per email hash: a fresh address per run keeps reruns apart.
		email := "lockout-" + strings.ToLower(rand.Text()[:12]) + "@example.com"
		a.user(t, email, "Locked User")
		other.user(t, email, "Locked User")

		br := a.browser(t)
		f := br.get(t, a.issuer+"/login").form(t)
		f.fields.Set("email", email)
		f.fields.Set("password", "not the password")
		for i := 0; i < 3; i++ {
			if p := br.post(t, f.action, f.fields); p.status != http.StatusUnauthorized {
				t.Fatalf("failed login %d at A: got %s, want 401", i+1, p)
			}
		}

		// At B, even the right password is refused while the account is locked.
		ob := other.browser(t)
		bf := ob.get(t, other.issuer+"/login").form(t)
		bf.fields.Set("email", email)
		bf.fields.Set("password", testPassword)
		got := ob.post(t, bf.action, bf.fields)
		wantErrorPage(t, got, http.StatusTooManyRequests, "Too many attempts")
		if s, err := strconv.Atoi(got.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Errorf("Retry-After %q, want 1 to 60 seconds", got.header.Get("Retry-After"))
		}
	})
}
