package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// signedInBrowser is a browser with user email's public session, from the hosted login
// page.
func signedInBrowser(t *testing.T, e *env, email string) *browser {
	t.Helper()
	b := e.browser(t)
	f := b.get(t, e.issuer+"/login").form(t)
	f.fields.Set("email", email)
	f.fields.Set("password", testPassword)
	p := b.post(t, f.action, f.fields)
	if p.status != http.StatusOK || !strings.Contains(p.body, "<h1>Signed in</h1>") {
		t.Fatalf("login: got %s, want the signed-in page", p)
	}
	return b
}

// me sends method /api/public/me from browser b with body as JSON (none when ""), with
// header set, and decodes the answer.
func (b *browser) me(t *testing.T, e *env, method, body string, header map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, e.issuer+"/api/public/me", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	p := b.do(t, req)
	var out map[string]any
	if err := json.Unmarshal([]byte(p.body), &out); err != nil {
		t.Fatalf("%s /api/public/me: decode %q: %v", method, p.body, err)
	}
	return p.status, out
}

// TestPublicMe: GET and PATCH /api/public/me read and edit the signed-in user's profile;
// an edit shows in the next userinfo answer, a new phone number is unverified until an
// administrator verifies it, and each bad value is refused with 400 naming its field.
func TestPublicMe(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		client := e.client(t, provider.ClientSpec{ID: "me-rp", FirstParty: true,
			Scopes: []string{"openid", "profile", "email", "phone", "address"}})
		br := signedInBrowser(t, e, alice.Email)

		t.Run("GET shows the signed-in user", func(t *testing.T) {
			status, body := br.me(t, e, http.MethodGet, "", nil)
			if status != http.StatusOK || body["id"] != alice.ID || body["email"] != alice.Email ||
				body["name"] != "Alice Example" || body["emailVerified"] != true || body["givenName"] != "" {
				t.Errorf("GET /api/public/me: got %d %v", status, body)
			}
		})

		t.Run("without a session: 401 in the spec's shape", func(t *testing.T) {
			for _, method := range []string{http.MethodGet, http.MethodPatch} {
				status, body := e.browser(t).me(t, e, method, `{"givenName":"Mallory"}`, nil)
				if status != http.StatusUnauthorized || body["error"] != "Unauthorized" || body["message"] == "" {
					t.Errorf("%s without a session: got %d %v, want 401 Unauthorized", method, status, body)
				}
			}
		})

		t.Run("a cross-site PATCH is refused", func(t *testing.T) {
			status, body := br.me(t, e, http.MethodPatch, `{"givenName":"Mallory"}`, map[string]string{"Origin": "https://evil.example.net"})
			if status != http.StatusForbidden || body["error"] != "Forbidden" {
				t.Errorf("cross-site PATCH: got %d %v, want 403", status, body)
			}
		})

		rp := e.relyingParty(t, client, "openid", "profile", "phone", "address")
		_, tok := rp.signIn(t, e, br, alice.Email)
		before := e.userinfo(t, tok.AccessToken)
		if before.status != http.StatusOK || before.body["given_name"] != nil || before.body["phone_number"] != nil {
			t.Fatalf("userinfo before the edit: got %s", before)
		}

		t.Run("an edit shows up in the next userinfo", func(t *testing.T) {
			status, body := br.me(t, e, http.MethodPatch, `{"name":"Alicia Example","givenName":"Alicia",
				"zoneinfo":"America/New_York","locale":"en-US","birthdate":"1985","website":"https://alicia.example/",
				"phoneNumber":"+14155550100","address":{"locality":"Springfield","country":"US"}}`, nil)
			if status != http.StatusOK || body["givenName"] != "Alicia" || body["phoneNumberVerified"] != false {
				t.Fatalf("PATCH: got %d %v", status, body)
			}
			ui := e.userinfo(t, tok.AccessToken)
			want := map[string]any{"name": "Alicia Example", "given_name": "Alicia", "zoneinfo": "America/New_York",
				"locale": "en-US", "birthdate": "1985", "website": "https://alicia.example/",
				"phone_number": "+14155550100", "phone_number_verified": false}
			for name, v := range want {
				if ui.body[name] != v {
					t.Errorf("userinfo %s: got %v, want %v", name, ui.body[name], v)
				}
			}
			if a, _ := ui.body["address"].(map[string]any); a["locality"] != "Springfield" || a["country"] != "US" || len(a) != 2 {
				t.Errorf("userinfo address: got %v", ui.body["address"])
			}
			// A field left out stays; "" clears one.
			status, body = br.me(t, e, http.MethodPatch, `{"website":""}`, nil)
			if status != http.StatusOK || body["website"] != "" || body["givenName"] != "Alicia" {
				t.Errorf("PATCH clearing website: got %d %v", status, body)
			}
		})

		t.Run("only an administrator verifies the phone number, and a new number is unverified", func(t *testing.T) {
			if _, err := e.p.UpdateUser(context.Background(), alice.ID, provider.UserUpdate{
				Profile: provider.ProfileChange{PhoneNumberVerified: ptr(true)}}); err != nil {
				t.Fatal(err)
			}
			if got := e.userinfo(t, tok.AccessToken).body["phone_number_verified"]; got != true {
				t.Errorf("after the administrator verified it: phone_number_verified %v", got)
			}
			if status, _ := br.me(t, e, http.MethodPatch, `{"phoneNumber":"+14155550199"}`, nil); status != http.StatusOK {
				t.Fatalf("PATCH phone: got %d", status)
			}
			if got := e.userinfo(t, tok.AccessToken).body["phone_number_verified"]; got != false {
				t.Errorf("after a new number: phone_number_verified %v, want false", got)
			}
		})

		t.Run("bad values are refused, each naming its field", func(t *testing.T) {
			for _, c := range []struct{ name, body, field string }{
				{"email is not editable here", `{"email":"other@example.com"}`, "email"},
				{"phone_number_verified is not the user's", `{"phoneNumberVerified":true}`, "phoneNumberVerified"},
				{"an empty name", `{"name":"  "}`, "name"},
				{"a javascript URL", `{"website":"javascript:alert(1)"}`, "website"},
				{"a relative URL", `{"picture":"/me.png"}`, "picture"},
				{"an ftp URL", `{"profile":"ftp://example.com/me"}`, "profile"},
				{"a URL with credentials", `{"website":"https://user:pw@example.com/"}`, "website"},
				{"a birthdate of another shape", `{"birthdate":"28/02/1990"}`, "birthdate"},
				{"a month 13", `{"birthdate":"1990-13-01"}`, "birthdate"},
				{"a birthdate in the future", `{"birthdate":"2999-01-01"}`, "birthdate"},
				{"an unknown zone", `{"zoneinfo":"Mars/Olympus_Mons"}`, "zoneinfo"},
				{"the host's Local zone", `{"zoneinfo":"Local"}`, "zoneinfo"},
				{"a path as zone", `{"zoneinfo":"../../etc/passwd"}`, "zoneinfo"},
				{"a locale with a space", `{"locale":"en US"}`, "locale"},
				{"a one-letter locale", `{"locale":"e"}`, "locale"},
				{"a national phone number", `{"phoneNumber":"0123456789"}`, "phoneNumber"},
				{"a phone number with spaces", `{"phoneNumber":"+1 415 555 0100"}`, "phoneNumber"},
				{"a phone number too long", `{"phoneNumber":"+1234567890123456"}`, "phoneNumber"},
				{"a control character", `{"givenName":"A\u0007"}`, "givenName"},
				{"a name too long", `{"nickname":"` + strings.Repeat("n", 257) + `"}`, "nickname"},
				{"an address part too long", `{"address":{"locality":"` + strings.Repeat("l", 257) + `"}}`, "address.locality"},
				{"a field of the wrong type", `{"givenName":5}`, "givenName"},
				{"nothing to change", `{}`, "body"},
			} {
				t.Run(c.name, func(t *testing.T) {
					status, body := br.me(t, e, http.MethodPatch, c.body, nil)
					msg, _ := body["message"].(string)
					if status != http.StatusBadRequest || body["error"] != "Bad Request" || !strings.HasPrefix(msg, c.field+" ") {
						t.Errorf("got %d %v, want 400 with a message about %s", status, body, c.field)
					}
				})
			}
			// Nothing of the refused bodies was stored.
			_, body := br.me(t, e, http.MethodGet, "", nil)
			if body["email"] != alice.Email || body["name"] != "Alicia Example" || body["zoneinfo"] != "America/New_York" {
				t.Errorf("after the refusals: got %v", body)
			}
		})
	})
}

// TestAccountPage: the hosted "Your account" page shows the signed-in user's profile with
// the pages' security headers, saves a change made through its form (which the next
// userinfo shows), refuses a bad value on the page, and refuses a POST without the
// form's CSRF token.
func TestAccountPage(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		bob := e.user(t, "bob@example.com", "Bob Example")

		t.Run("without a session it leads to the login page", func(t *testing.T) {
			p := e.browser(t).get(t, e.issuer+"/account")
			if p.status != http.StatusOK || p.url.Path != "/login" {
				t.Errorf("got %s, want the login page", p)
			}
		})

		br := signedInBrowser(t, e, bob.Email)
		p := br.get(t, e.issuer+"/account")
		if p.status != http.StatusOK {
			t.Fatalf("account page: got %s", p)
		}
		for name, want := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store",
			"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
			if got := p.header.Get(name); got != want {
				t.Errorf("%s: got %q, want %q", name, got, want)
			}
		}
		if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("Content-Security-Policy: got %q", csp)
		}
		f := p.form(t)
		if f.fields.Get("csrf_token") == "" || f.fields.Get("name") != "Bob Example" || !strings.Contains(p.body, bob.Email) {
			t.Fatalf("account form: got %v", f.fields)
		}

		t.Run("a saved change shows in the next userinfo", func(t *testing.T) {
			form := f.fields
			form.Set("givenName", "Robert")
			form.Set("zoneinfo", "Asia/Tokyo")
			form.Set("address.streetAddress", "1 Main St\r\nApt 2")
			form.Set("address.country", "JP")
			saved := br.post(t, f.action, form)
			if saved.status != http.StatusOK || !strings.Contains(saved.body, "Your profile is saved") {
				t.Fatalf("submit: got %s", saved)
			}
			client := e.client(t, provider.ClientSpec{ID: "acct-rp", FirstParty: true,
				Scopes: []string{"openid", "profile", "address"}})
			_, tok := e.relyingParty(t, client, "openid", "profile", "address").signIn(t, e, br, bob.Email)
			ui := e.userinfo(t, tok.AccessToken)
			a, _ := ui.body["address"].(map[string]any)
			if ui.body["given_name"] != "Robert" || ui.body["zoneinfo"] != "Asia/Tokyo" ||
				a["street_address"] != "1 Main St\nApt 2" || a["country"] != "JP" {
				t.Errorf("userinfo after the form: got %v", ui.body)
			}
		})

		t.Run("a bad value is shown on the page and not stored", func(t *testing.T) {
			form := br.get(t, e.issuer+"/account").form(t)
			form.fields.Set("zoneinfo", "Nowhere/Town")
			refused := br.post(t, form.action, form.fields)
			if refused.status != http.StatusBadRequest || !strings.Contains(refused.body, "Zoneinfo must be an IANA time zone") ||
				!strings.Contains(refused.body, `value="Nowhere/Town"`) {
				t.Errorf("bad zone: got %s", refused)
			}
			if _, body := br.me(t, e, http.MethodGet, "", nil); body["zoneinfo"] != "Asia/Tokyo" {
				t.Errorf("zoneinfo after the refusal: got %v", body["zoneinfo"])
			}
		})

		t.Run("a POST without the form's CSRF token is refused", func(t *testing.T) {
			for _, token := range []string{"", "forged-token-forged-token-forged-token"} {
				form := url.Values{"csrf_token": {token}, "name": {"Mallory"}, "givenName": {"Mallory"}}
				refused := br.post(t, e.issuer+"/account", form)
				if refused.status != http.StatusForbidden {
					t.Errorf("CSRF token %q: got %s, want 403", token, refused)
				}
			}
			if _, body := br.me(t, e, http.MethodGet, "", nil); body["givenName"] != "Robert" || body["name"] != "Bob Example" {
				t.Errorf("after the refused POSTs: got %v", body)
			}
		})
	})
}

// TestSocialLoginFillsProfile: a first Google login creates the account with the profile
// Google reports (a value failing the rules is dropped); linking Google to an existing
// account fills only the fields the user left empty; later logins change nothing.
func TestSocialLoginFillsProfile(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		g := newFakeUpstream(t, "google")
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{Google: g.config()}})
		client := e.client(t, provider.ClientSpec{ID: "social-rp", FirstParty: true, Scopes: []string{"openid", "profile"}})
		rp := e.relyingParty(t, client, "openid", "profile")
		login := func(t *testing.T) map[string]any {
			t.Helper()
			br := socialBrowser(t, e, g.srv.URL)
			ar := rp.start(oauth2.SetAuthURLParam("provider", "google"))
			tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI)))
			ui := e.userinfo(t, tok.AccessToken)
			if ui.status != http.StatusOK {
				t.Fatalf("userinfo: got %s", ui)
			}
			return ui.body
		}

		t.Run("a first login creates the account with the upstream profile", func(t *testing.T) {
			g.signIn(fakeProfile{Sub: "g-ada", Email: "ada@example.com", Name: "Ada Lovelace", Verified: true,
				Given: "Ada", Family: "Lovelace", Picture: "https://example.com/ada.png", Locale: "not a locale!"})
			got := login(t)
			if got["given_name"] != "Ada" || got["family_name"] != "Lovelace" || got["picture"] != "https://example.com/ada.png" {
				t.Errorf("userinfo: got %v, want Google's profile", got)
			}
			if _, ok := got["locale"]; ok {
				t.Errorf("an invalid upstream locale was kept: %v", got["locale"])
			}
		})

		t.Run("linking fills only what the user left empty", func(t *testing.T) {
			grace := e.user(t, "grace@example.com", "Grace Hopper")
			if _, err := e.p.UpdateUser(context.Background(), grace.ID, provider.UserUpdate{
				Profile: provider.ProfileChange{GivenName: ptr("Amazing Grace")}}); err != nil {
				t.Fatal(err)
			}
			g.signIn(fakeProfile{Sub: "g-grace", Email: "grace@example.com", Name: "G. H.", Verified: true,
				Given: "G.", Family: "Hopper", Locale: "en-US"})
			got := login(t)
			if got["sub"] != grace.ID || got["name"] != "Grace Hopper" || got["given_name"] != "Amazing Grace" ||
				got["family_name"] != "Hopper" || got["locale"] != "en-US" {
				t.Errorf("userinfo after linking: got %v", got)
			}
			// A later login with another upstream profile changes nothing.
			g.signIn(fakeProfile{Sub: "g-grace", Email: "grace@example.com", Name: "G. H.", Verified: true,
				Given: "Other", Family: "Other", Picture: "https://example.com/other.png", Locale: "fr"})
			again := login(t)
			if again["family_name"] != "Hopper" || again["locale"] != "en-US" || again["picture"] != nil {
				t.Errorf("userinfo after a later login: got %v", again)
			}
		})
	})
}
