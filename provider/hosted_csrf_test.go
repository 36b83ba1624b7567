package provider_test

import (
	"net/http"
	"net/url"
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
