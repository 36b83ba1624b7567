package ui

import (
	"crypto/hmac"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzCSRF feeds arbitrary Cookie headers and csrf_token form fields to the hosted forms'
// double-submit check. Properties: verify accepts only a cookie of at least 32 bytes whose
// HMAC is the field (under the other cookie name it never does); a field minted for one
// cookie never verifies with another; token, for a request whose cookie qualifies, answers
// that cookie's HMAC and sets no new cookie.
func FuzzCSRF(f *testing.F) {
	key := []byte("fuzz csrf key, 32 bytes or more...")
	guards := []csrfGuard{
		newCSRFGuard("http://127.0.0.1:8080/auth", false, key, randomValue),
		newCSRFGuard("https://id.example", true, key, randomValue),
	}
	value := strings.Repeat("v", 43)
	for _, seed := range []struct{ cookie, field string }{
		{csrfCookie + "=" + value, guards[0].mac(value)},
		{csrfHostCookie + "=" + value, guards[1].mac(value)},
		{csrfCookie + "=" + value, guards[0].mac(value) + "x"},
		{csrfCookie + "=short", guards[0].mac("short")},
		{csrfCookie + "=" + value + "; " + csrfCookie + "=" + value + "x", guards[0].mac(value + "x")},
		{csrfCookie + `="` + value + `"`, guards[0].mac(value)},
		{"", ""},
	} {
		f.Add(seed.cookie, seed.field)
	}
	f.Fuzz(func(t *testing.T, cookieHeader, field string) {
		for i, g := range guards {
			form := url.Values{csrfField: {field}}.Encode()
			r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Cookie", cookieHeader)
			ok := g.verify(r)
			c, err := r.Cookie(g.name)
			qualifies := err == nil && len(c.Value) >= 32
			if ok && (!qualifies || !hmac.Equal([]byte(field), []byte(g.mac(c.Value)))) {
				t.Fatalf("guard %d verified cookie %q with field %q", i, cookieHeader, field)
			}
			if qualifies && !ok && field == g.mac(c.Value) {
				t.Fatalf("guard %d refused cookie %q with its own field", i, cookieHeader)
			}
			if qualifies && field != "" {
				other := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{csrfField: {g.mac(c.Value + "x")}}.Encode()))
				other.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				other.Header.Set("Cookie", cookieHeader)
				if g.verify(other) {
					t.Fatalf("guard %d verified cookie %q with another cookie's field", i, cookieHeader)
				}
			}
			w := httptest.NewRecorder()
			get := httptest.NewRequest(http.MethodGet, "/login", nil)
			get.Header.Set("Cookie", cookieHeader)
			token, err := g.token(w, get)
			if err != nil {
				t.Fatal(err)
			}
			if qualifies && (token != g.mac(c.Value) || len(w.Result().Cookies()) != 0) {
				t.Fatalf("guard %d: token for cookie %q = %q (new cookies %v)", i, cookieHeader, token, w.Result().Cookies())
			}
			if !qualifies && len(w.Result().Cookies()) != 1 {
				t.Fatalf("guard %d: no new cookie for %q", i, cookieHeader)
			}
		}
	})
}
