package bearer_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/bearer"
)

func TestBearer(t *testing.T) {
	cases := []struct {
		name         string
		method, auth string
		body         string
		header       string
		headerOK     bool
		request      string
	}{
		{"bearer header", http.MethodGet, "Bearer abc", "", "abc", true, "abc"},
		{"scheme in any case, token trimmed", http.MethodGet, "bEaReR  abc ", "", "abc", true, "abc"},
		{"another scheme", http.MethodGet, "Basic abc", "", "", false, ""},
		{"scheme without token", http.MethodGet, "Bearer", "", "", false, ""},
		{"no header", http.MethodGet, "", "", "", false, ""},
		{"form body of a POST", http.MethodPost, "", "access_token=xyz", "", false, "xyz"},
		{"header wins over the form body", http.MethodPost, "Bearer abc", "access_token=xyz", "abc", true, "abc"},
		{"query string is ignored", http.MethodGet, "", "", "", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newRequest := func() *http.Request {
				r := httptest.NewRequest(c.method, "/userinfo?access_token=from-query", strings.NewReader(c.body))
				if c.body != "" {
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				if c.auth != "" {
					r.Header.Set("Authorization", c.auth)
				}
				return r
			}
			token, ok := bearer.FromHeader(newRequest())
			if token != c.header || ok != c.headerOK {
				t.Errorf("FromHeader: got %q, %v; want %q, %v", token, ok, c.header, c.headerOK)
			}
			if got := bearer.FromRequest(newRequest()); got != c.request {
				t.Errorf("FromRequest: got %q, want %q", got, c.request)
			}
		})
	}
}
