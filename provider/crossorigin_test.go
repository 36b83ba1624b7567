package provider_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestCrossOriginChangesRefused: a cookie-authenticated change whose Origin (or, lacking
// it, Sec-Fetch-Site) names another origin is refused with 403 on the public, admin and
// permission JSON routes, whatever its Content-Type; the provider's own pages and
// non-browser clients go through, and bearer-token calls are not affected.
func TestCrossOriginChangesRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		routes := []struct {
			name, method, path, body string
			session                  func(t *testing.T) func(*http.Request)
		}{
			{"public logout", http.MethodPost, "/api/public/logout", "",
				func(t *testing.T) func(*http.Request) { return e.publicSession(t, e.alice.Email) }},
			{"admin user change", http.MethodPatch, "/api/admin/users/" + e.bob.ID, `{"requirePin": false}`,
				func(t *testing.T) func(*http.Request) { return e.adminSession(t, e.admin.Email) }},
			{"admin permission change", http.MethodPut, adminRecordPath(e.alice.ID, "app"), `{"status":"approved","role":"user"}`,
				func(t *testing.T) func(*http.Request) { return e.adminSession(t, e.admin.Email) }},
			{"admin registration token", http.MethodPost, "/api/admin/registration-tokens", `{"expiresIn": 60}`,
				func(t *testing.T) func(*http.Request) { return e.adminSession(t, e.admin.Email) }},
		}
		headers := []struct {
			name                           string
			origin, fetchSite, contentType string
			refused                        bool
		}{
			{"cross-site Origin", "https://evil.example.net", "", "application/json", true},
			{"cross-site Origin, text/plain", "https://evil.example.net", "", "text/plain", true},
			{"same-site sibling without Origin", "", "same-site", "text/plain", true},
			{"cross-site Sec-Fetch-Site without Origin", "", "cross-site", "application/json", true},
			{"null Origin", "null", "", "application/json", true},
			{"same-origin Origin", e.issuer, "same-origin", "application/json", false},
			{"no Origin and no Sec-Fetch-Site", "", "", "application/json", false},
		}
		for _, route := range routes {
			for _, h := range headers {
				t.Run(route.name+"/"+h.name, func(t *testing.T) {
					req, err := http.NewRequest(route.method, e.issuer+route.path, strings.NewReader(route.body))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Content-Type", h.contentType)
					if h.origin != "" {
						req.Header.Set("Origin", h.origin)
					}
					if h.fetchSite != "" {
						req.Header.Set("Sec-Fetch-Site", h.fetchSite)
					}
					route.session(t)(req)
					r := e.send(t, req)
					if h.refused {
						if r.status != http.StatusForbidden || r.body["error"] != "Forbidden" || r.body["message"] == "" {
							t.Errorf("got %s, want 403 in the JSON error shape", r)
						}
					} else if r.status < 200 || r.status > 299 {
						t.Errorf("got %s, want a 2xx", r)
					}
				})
			}
		}

		t.Run("a refused logout leaves the session alive", func(t *testing.T) {
			session := e.publicSession(t, e.alice.Email)
			req, _ := http.NewRequest(http.MethodPost, e.issuer+"/api/public/logout", strings.NewReader("x"))
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("Origin", "https://evil.example.net")
			session(req)
			if r := e.send(t, req); r.status != http.StatusForbidden {
				t.Fatalf("cross-site logout: got %s, want 403", r)
			}
			if r := e.sendJSON(t, http.MethodGet, "/api/public/session", "", session); r.status != http.StatusOK {
				t.Errorf("session after a refused logout: got %s, want 200", r)
			}
		})

		t.Run("a bearer token from another origin is not affected", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPut, e.issuer+recordPath(e.bob.ID, "app"), strings.NewReader(`{"status":"approved","role":"user"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", "https://app.example.net")
			bearer(e.clientToken(t, e.app, "manage_permissions"))(req)
			if r := e.send(t, req); r.status < 200 || r.status > 299 {
				t.Errorf("got %s, want a 2xx", r)
			}
		})
	})
}
