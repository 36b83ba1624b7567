package sameorigin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/sameorigin"
)

func TestGuard(t *testing.T) {
	guard, ok := sameorigin.New("https://id.example.com/base")
	if !ok {
		t.Fatal("New refused an https URL")
	}
	handler := guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for _, c := range []struct {
		name, method, cookie, origin, fetchSite string
		want                                    int
		host                                    string // the request's Host; "" is id.example.com
	}{
		{"same origin", http.MethodPost, "s=1", "https://id.example.com", "", http.StatusNoContent, ""},
		{"same origin, through a proxy that rewrites Host", http.MethodPost, "s=1", "https://id.example.com", "", http.StatusNoContent, "127.0.0.1:8080"},
		{"same origin by Sec-Fetch-Site, through a proxy", http.MethodPost, "s=1", "https://id.example.com", "same-origin", http.StatusNoContent, "127.0.0.1:8080"},
		// Browsers write an origin lower case without its default port; Go's
		// CrossOriginProtection compares it as written, so this spelling is refused.
		{"same origin, default port written out", http.MethodPost, "s=1", "https://ID.example.com:443", "", http.StatusForbidden, ""},
		{"other site", http.MethodPost, "s=1", "https://evil.example.net", "", http.StatusForbidden, ""},
		{"sibling subdomain", http.MethodPost, "s=1", "https://app.example.com", "same-site", http.StatusForbidden, ""},
		{"other scheme", http.MethodPost, "s=1", "http://id.example.com", "", http.StatusForbidden, ""},
		{"other port", http.MethodDelete, "s=1", "https://id.example.com:8443", "", http.StatusForbidden, ""},
		{"null origin", http.MethodPut, "s=1", "null", "", http.StatusForbidden, ""},
		{"Origin decides over Sec-Fetch-Site", http.MethodPost, "s=1", "https://evil.example.net", "same-origin", http.StatusForbidden, ""},
		{"Sec-Fetch-Site cross-site", http.MethodPatch, "s=1", "", "cross-site", http.StatusForbidden, ""},
		{"Sec-Fetch-Site same-site", http.MethodPost, "s=1", "", "same-site", http.StatusForbidden, ""},
		{"Sec-Fetch-Site same-origin", http.MethodPost, "s=1", "", "same-origin", http.StatusNoContent, ""},
		{"Sec-Fetch-Site none", http.MethodPost, "s=1", "", "none", http.StatusNoContent, ""},
		{"neither header (curl)", http.MethodPost, "s=1", "", "", http.StatusNoContent, ""},
		{"no cookie (bearer token)", http.MethodPost, "", "https://evil.example.net", "cross-site", http.StatusNoContent, ""},
		{"safe method", http.MethodGet, "s=1", "https://evil.example.net", "cross-site", http.StatusNoContent, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "https://id.example.com/api/public/logout", nil)
			if c.host != "" {
				r.Host = c.host
			}
			for name, v := range map[string]string{"Cookie": c.cookie, "Origin": c.origin, "Sec-Fetch-Site": c.fetchSite} {
				if v != "" {
					r.Header.Set(name, v)
				}
			}
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("got %d, want %d", w.Code, c.want)
			}
			if c.want == http.StatusForbidden {
				var body map[string]string
				if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["error"] != "Forbidden" || body["message"] == "" {
					t.Errorf("body: got %q, want the JSON error shape", w.Body.String())
				}
			}
		})
	}
}

// TestCrossOriginProtection: Go's check as configured for a deployment trusts the
// deployment's origin as a browser writes it, whatever the request's Host, and refuses a
// cross-site POST with or without a cookie.
func TestCrossOriginProtection(t *testing.T) {
	for _, c := range []struct {
		baseURL, origin, fetchSite string
		ok                         bool
	}{
		{"https://id.example.com/base", "https://id.example.com", "", true},
		{"https://ID.example.com:443", "https://id.example.com", "", true},
		{"http://127.0.0.1:8080/auth", "http://127.0.0.1:8080", "", true},
		{"https://[::1]:8443", "https://[::1]:8443", "", true},
		{"https://id.example.com", "https://evil.example.net", "", false},
		{"https://id.example.com", "https://evil.example.net", "cross-site", false},
		{"https://id.example.com", "", "cross-site", false},
		{"https://id.example.com", "", "same-site", false},
		{"https://id.example.com", "", "same-origin", true},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9/login", nil)
		for name, v := range map[string]string{"Origin": c.origin, "Sec-Fetch-Site": c.fetchSite} {
			if v != "" {
				r.Header.Set(name, v)
			}
		}
		err := sameorigin.CrossOriginProtection(c.baseURL).Check(r)
		if (err == nil) != c.ok {
			t.Errorf("base %s, Origin %q, Sec-Fetch-Site %q: Check = %v, want allowed %v", c.baseURL, c.origin, c.fetchSite, err, c.ok)
		}
	}
}

func TestNewRefusesNonHTTPURLs(t *testing.T) {
	for _, raw := range []string{"", "id.example.com", "ftp://id.example.com", "https://"} {
		if _, ok := sameorigin.New(raw); ok {
			t.Errorf("New(%q) accepted it", raw)
		}
	}
}
