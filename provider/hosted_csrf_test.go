package provider_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestCSRFFieldMustBeSigned: the hosted forms refuse a csrf_token equal to the CSRF
// cookie's own value (the unsigned double submit a planted cookie would defeat) and a
// token another browser was given, and take the token the page shows.
func TestCSRFFieldMustBeSigned(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true}))
		other := e.browser(t)
		otherForm := other.get(t, rp.start().String()).form(t)
		for _, c := range []struct {
			name  string
			token func(br *browser, f htmlForm) string
			ok    bool
		}{
			{"the cookie's raw value", func(br *browser, _ htmlForm) string { return csrfCookieValue(t, e, br) }, false},
			{"another browser's token", func(*browser, htmlForm) string { return otherForm.fields.Get("csrf_token") }, false},
			{"the token the page shows", func(_ *browser, f htmlForm) string { return f.fields.Get("csrf_token") }, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				br := e.browser(t)
				f := br.get(t, rp.start().String()).form(t)
				f.fields.Set("csrf_token", c.token(br, f))
				f.fields.Set("email", alice.Email)
				f.fields.Set("password", testPassword)
				p := br.post(t, f.action, f.fields)
				if refused := p.status == http.StatusForbidden; refused == c.ok {
					t.Errorf("got %s, want refused=%v", p, !c.ok)
				}
			})
		}
	})
}

// csrfCookieValue is the value of br's CSRF cookie.
func csrfCookieValue(t *testing.T, e *env, br *browser) string {
	t.Helper()
	u, _ := url.Parse(e.srv.URL)
	for _, c := range br.client.Jar.Cookies(u) {
		if c.Name == "gatehouse-csrf" {
			return c.Value
		}
	}
	t.Fatal("the browser has no gatehouse-csrf cookie")
	return ""
}

// TestHostedFormsRefuseCrossSitePosts: Go's http.CrossOriginProtection stands in front of
// the hosted forms beside the CSRF token. A login form sent with a valid token and cookie
// but from another site (Sec-Fetch-Site cross-site or same-site, or, from an older browser,
// an Origin of another host) is refused with the page's 403 before anything is read; the
// same form sent from the provider's own page, or by a client that sends neither header,
// signs in.
func TestHostedFormsRefuseCrossSitePosts(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true}))
		for _, c := range []struct {
			name, origin, fetchSite string
			refused                 bool
		}{
			{"cross-site", "https://evil.example.net", "cross-site", true},
			{"cross-site, no Origin", "", "cross-site", true},
			{"sibling subdomain", "", "same-site", true},
			{"older browser, Origin of another host", "https://evil.example.net", "", true},
			{"the provider's own page", e.issuer, "same-origin", false},
			{"the provider's origin, older browser", e.issuer, "", false},
			{"neither header", "", "", false},
		} {
			t.Run(c.name, func(t *testing.T) {
				br := e.browser(t)
				f := br.get(t, rp.start().String()).form(t)
				f.fields.Set("email", alice.Email)
				f.fields.Set("password", testPassword)
				req, err := http.NewRequest(http.MethodPost, f.action, strings.NewReader(f.fields.Encode()))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for name, v := range map[string]string{"Origin": c.origin, "Sec-Fetch-Site": c.fetchSite} {
					if v != "" {
						req.Header.Set(name, v)
					}
				}
				p := br.do(t, req)
				if refused := p.status == http.StatusForbidden && strings.Contains(p.body, "sent from another site"); refused != c.refused {
					t.Fatalf("got %s, want refused=%v", p, c.refused)
				}
				u, _ := url.Parse(e.srv.URL)
				signedIn := slices.ContainsFunc(br.client.Jar.Cookies(u), func(ck *http.Cookie) bool { return ck.Name == "public-session" })
				if signedIn == c.refused {
					t.Errorf("the browser has a public-session cookie: %v, want %v", signedIn, !c.refused)
				}
			})
		}
	})
}
