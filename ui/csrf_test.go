package ui

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// randomValue draws a cookie value as the provider does: 256 random bits.
func randomValue() (string, error) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b), err
}

// issueCSRF has guard g give a fresh browser its cookie and token.
func issueCSRF(t *testing.T, g csrfGuard) (*http.Cookie, string) {
	t.Helper()
	w := httptest.NewRecorder()
	token, err := g.token(w, httptest.NewRequest(http.MethodGet, "/login", nil))
	if err != nil {
		t.Fatal(err)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("got %d cookies, want 1", len(cookies))
	}
	return cookies[0], token
}

// csrfPost is a form POST carrying cookie (when not nil) and field as the token.
func csrfPost(cookie *http.Cookie, field string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{csrfField: {field}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		r.AddCookie(cookie)
	}
	return r
}

func TestCSRFTokenIsBoundToTheBrowser(t *testing.T) {
	secret := []byte("csrf unit test secret of 32+ bytes...")
	g := newCSRFGuard("http://127.0.0.1:8080", false, secret, randomValue)
	cookieA, tokenA := issueCSRF(t, g)
	cookieB, tokenB := issueCSRF(t, g)
	other := newCSRFGuard("http://127.0.0.1:8080", false, []byte("another deployment's secret, 32+ bytes"), randomValue)
	for _, c := range []struct {
		name   string
		guard  csrfGuard
		cookie *http.Cookie
		field  string
		want   bool
	}{
		{"own cookie and token", g, cookieA, tokenA, true},
		{"second browser, own pair", g, cookieB, tokenB, true},
		{"token of browser A with cookie of browser B", g, cookieB, tokenA, false},
		{"field equal to the raw cookie value (unsigned double submit)", g, cookieA, cookieA.Value, false},
		{"no cookie", g, nil, tokenA, false},
		{"no field", g, cookieA, "", false},
		{"token under another secret", other, cookieA, tokenA, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.guard.verify(csrfPost(c.cookie, c.field)); got != c.want {
				t.Errorf("verify: got %v, want %v", got, c.want)
			}
		})
	}
	// The same browser keeps its token across pages.
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/register", nil)
	r.AddCookie(cookieA)
	if again, err := g.token(w, r); err != nil || again != tokenA || len(w.Result().Cookies()) != 0 {
		t.Errorf("second page: got token %q (err %v) and %d new cookies, want %q and none", again, err, len(w.Result().Cookies()), tokenA)
	}
}

func TestCSRFCookieName(t *testing.T) {
	for _, c := range []struct {
		issuer, name string
		secure       bool
	}{
		{"https://id.example.com", "__Host-gatehouse-csrf", true},
		{"http://127.0.0.1:8080", "gatehouse-csrf", false},
		{"http://id.internal", "gatehouse-csrf", true},
	} {
		t.Run(c.issuer, func(t *testing.T) {
			cookie, _ := issueCSRF(t, newCSRFGuard(c.issuer, c.secure, []byte("csrf unit test secret of 32+ bytes..."), randomValue))
			if cookie.Name != c.name || cookie.Secure != c.secure || cookie.Path != "/" || cookie.Domain != "" || !cookie.HttpOnly {
				t.Errorf("got cookie %s (Secure=%v Path=%q Domain=%q HttpOnly=%v), want %s Secure=%v Path=/ no Domain HttpOnly",
					cookie.Name, cookie.Secure, cookie.Path, cookie.Domain, cookie.HttpOnly, c.name, c.secure)
			}
		})
	}
}
