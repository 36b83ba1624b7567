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
		{"DPoP header", http.MethodGet, "DPoP abc", "", "abc", true, "abc"},
		{"DPoP scheme in any case", http.MethodGet, "dpop abc", "", "abc", true, "abc"},
		{"DPoP without token", http.MethodGet, "DPoP ", "", "", false, ""},
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
			wantScheme := ""
			if c.request != "" {
				wantScheme = bearer.SchemeBearer
				if strings.HasPrefix(strings.ToLower(c.auth), "dpop") {
					wantScheme = bearer.SchemeDPoP
				}
			}
			cred, ok := bearer.FromHeader(newRequest())
			if cred.Token != c.header || ok != c.headerOK || (ok && cred.Scheme != wantScheme) {
				t.Errorf("FromHeader: got %+v, %v; want %q, %v", cred, ok, c.header, c.headerOK)
			}
			if got := bearer.FromRequest(newRequest()); got.Token != c.request || got.Scheme != wantScheme {
				t.Errorf("FromRequest: got %+v, want %q (%s)", got, c.request, wantScheme)
			}
		})
	}
}
