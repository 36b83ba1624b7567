package provider_test

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// storedRows deletes, and counts, every row that expires within a year: the paused and
// pushed authorization requests an anonymous request can make the provider store.
func (e *env) storedRows(t *testing.T) int64 {
	t.Helper()
	n, err := e.store.DeleteExpired(context.Background(), time.Now().Add(365*24*time.Hour), 0)
	if err != nil {
		t.Fatalf("DeleteExpired: %v", err)
	}
	return n
}

// fromIP makes a request come from ip through the trusted proxy on 127.0.0.1.
func fromIP(ip string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("X-Forwarded-For", ip) }
}

// TestAuthorizationRequestCaps: an authorization request whose state, nonce, claims,
// login_hint or request object is over its cap, or whose whole form is, is refused in the
// RFC 6749 shape (invalid_request, invalid_request_object for a request object) at the
// client's redirect URI, without an oversized state echoed and without a row stored; the
// same at the PAR endpoint. A 128-character state, as OpenID conformance sends, works.
func TestAuthorizationRequestCaps(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		key := newECKey(t, "k1")
		app := e.client(t, provider.ClientSpec{ID: "app", Public: true, JWKS: jwksOf(t, key), RequestObjectAlg: "ES256"})
		rp := e.relyingParty(t, app)
		object := func(ar *authRequest, changes map[string]any) string {
			claims := map[string]any{"iss": app.ClientID, "aud": e.issuer, "exp": time.Now().Add(5 * time.Minute).Unix()}
			for k, v := range ar.url.Query() {
				claims[k] = v[0]
			}
			return signWith(t, key.alg, key.priv, key.kid, with(claims, changes))
		}
		e.storedRows(t)

		t.Run("a 128-character state pauses for the login page", func(t *testing.T) {
			ar := rp.start()
			ar.set("state", strings.Repeat("s", 128))
			r := e.send(t, mustRequest(t, http.MethodGet, ar.String()))
			if loc, _ := url.Parse(r.header.Get("Location")); r.status != http.StatusSeeOther || loc == nil || loc.Path != "/login" {
				t.Fatalf("got %s (Location %s), want a redirect to the login page", r, r.header.Get("Location"))
			}
			if n := e.storedRows(t); n != 1 {
				t.Errorf("rows stored: got %d, want the paused request", n)
			}
		})

		big := func(n int) string { return strings.Repeat("x", n) }
		for _, c := range []struct {
			name   string
			change func(ar *authRequest)
			want   string
		}{
			{"state over 4 KiB", func(ar *authRequest) { ar.set("state", big(4<<10+1)) }, "invalid_request"},
			{"nonce over 2 KiB", func(ar *authRequest) { ar.set("nonce", big(2<<10+1)) }, "invalid_request"},
			{"claims over 4 KiB", func(ar *authRequest) {
				ar.set("claims", `{"userinfo":{"name":{"value":"`+big(4<<10)+`"}}}`)
			}, "invalid_request"},
			{"login_hint over 1 KiB", func(ar *authRequest) { ar.set("login_hint", big(1<<10+1)) }, "invalid_request"},
			{"a form over 8 KiB", func(ar *authRequest) {
				ar.set("x-a", big(3<<10)).set("x-b", big(3<<10)).set("x-c", big(3<<10))
			}, "invalid_request"},
			{"request object over 16 KiB", func(ar *authRequest) {
				ar.set("request", object(ar, map[string]any{"x-pad": big(16 << 10)}))
			}, "invalid_request_object"},
			{"request object with a state over 4 KiB", func(ar *authRequest) {
				ar.set("request", object(ar, map[string]any{"state": big(4<<10 + 1)}))
			}, "invalid_request_object"},
			{"request object with a form over 8 KiB", func(ar *authRequest) {
				ar.set("request", object(ar, map[string]any{"x-a": big(3 << 10), "x-b": big(3 << 10), "x-c": big(3 << 10)}))
			}, "invalid_request_object"},
		} {
			t.Run(c.name, func(t *testing.T) {
				ar := rp.start()
				c.change(ar)
				r := e.send(t, mustRequest(t, http.MethodGet, ar.String()))
				loc, err := url.Parse(r.header.Get("Location"))
				if r.status != http.StatusSeeOther || err != nil || !strings.HasPrefix(loc.String(), rpRedirectURI) {
					t.Fatalf("got %s (Location %s), want an error redirect to the client", r, r.header.Get("Location"))
				}
				q := loc.Query()
				if q.Get("error") != c.want || q.Get("error_description") == "" {
					t.Errorf("error: got %q (%q), want %s with a description", q.Get("error"), q.Get("error_description"), c.want)
				}
				if state := q.Get("state"); len(state) > 4<<10 {
					t.Errorf("the error redirect echoes a state of %d bytes", len(state))
				}
				if n := e.storedRows(t); n != 0 {
					t.Errorf("rows stored: got %d, want none", n)
				}
			})
		}

		t.Run("PAR", func(t *testing.T) {
			for _, c := range []struct {
				name   string
				change func(form url.Values)
				want   string
			}{
				{"state over 4 KiB", func(f url.Values) { f.Set("state", big(4<<10+1)) }, "invalid_request"},
				{"a form over 8 KiB", func(f url.Values) { f.Set("x-a", big(3<<10)); f.Set("x-b", big(3<<10)); f.Set("x-c", big(3<<10)) }, "invalid_request"},
				{"request object with claims over 4 KiB", func(f url.Values) {
					ar := &authRequest{url: &url.URL{RawQuery: f.Encode()}}
					f.Set("request", object(ar, map[string]any{"claims": map[string]any{"userinfo": map[string]any{"name": map[string]any{"value": big(4 << 10)}}}}))
				}, "invalid_request_object"},
			} {
				t.Run(c.name, func(t *testing.T) {
					form := rp.start().url.Query()
					c.change(form)
					wantOAuthError(t, e.push(t, form, nil), http.StatusBadRequest, c.want)
					if n := e.storedRows(t); n != 0 {
						t.Errorf("rows stored: got %d, want none", n)
					}
				})
			}
		})
	})
}

// TestStoredAuthorizationRequestsAreLimited: the authorization requests one IP and one
// client leave paused for the login page, and those pushed to the PAR endpoint, are
// limited (AuthorizeIPLimit, AuthorizeClientLimit); over a limit the authorization
// endpoint answers 429 with Retry-After and stores nothing, the PAR endpoint 429
// slow_down. A confidential client's pushes are counted per client only.
func TestStoredAuthorizationRequestsAreLimited(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{PublicAuth: provider.PublicAuthConfig{
			TrustedProxies:       []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
			AuthorizeIPLimit:     provider.RateLimit{Limit: 3, Window: time.Hour},
			AuthorizeClientLimit: provider.RateLimit{Limit: 5, Window: time.Hour},
		}})
		app := e.client(t, provider.ClientSpec{ID: "app", Public: true})
		rp := e.relyingParty(t, app)
		e.storedRows(t)
		authorize := func(ip string) jsonResponse {
			req := mustRequest(t, http.MethodGet, rp.start().String())
			fromIP(ip)(req)
			return e.send(t, req)
		}
		wantLimited := func(t *testing.T, r jsonResponse) {
			t.Helper()
			if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
				t.Errorf("got %s (Retry-After %q), want 429 with Retry-After", r, r.header.Get("Retry-After"))
			}
		}

		t.Run("pauses", func(t *testing.T) {
			for i := range 3 {
				if r := authorize("192.0.2.1"); r.status != http.StatusSeeOther {
					t.Fatalf("pause %d from one IP: got %s, want a redirect to the login page", i+1, r)
				}
			}
			wantLimited(t, authorize("192.0.2.1"))
			// Another IP pauses for the same client until the client's limit.
			for i := range 2 {
				if r := authorize("192.0.2.2"); r.status != http.StatusSeeOther {
					t.Fatalf("pause %d from another IP: got %s, want a redirect to the login page", i+1, r)
				}
			}
			wantLimited(t, authorize("192.0.2.2"))
			if n := e.storedRows(t); n != 5 {
				t.Errorf("rows stored: got %d, want the 5 pauses within the limits", n)
			}
		})

		t.Run("pushes", func(t *testing.T) {
			public := e.client(t, provider.ClientSpec{ID: "public-pusher", Public: true})
			confidential := e.client(t, provider.ClientSpec{ID: "confidential-pusher"})
			push := func(c provider.ClientInfo, ip string) jsonResponse {
				form := e.relyingParty(t, c).start().url.Query()
				auth := fromIP(ip)
				if c.ClientSecret != "" {
					form.Del("client_id")
					auth = func(r *http.Request) { basicAuth(c)(r); fromIP(ip)(r) }
				}
				return e.push(t, form, auth)
			}
			for i := range 3 {
				if r := push(public, "198.51.100.1"); r.status != http.StatusCreated {
					t.Fatalf("push %d of a public client: got %s, want 201", i+1, r)
				}
			}
			r := push(public, "198.51.100.1")
			wantLimited(t, r)
			wantOAuthError(t, r, http.StatusTooManyRequests, "slow_down")
			// A confidential client's backend pushes for all its users: no limit by IP.
			for i := range 5 {
				if r := push(confidential, "198.51.100.1"); r.status != http.StatusCreated {
					t.Fatalf("push %d of a confidential client: got %s, want 201", i+1, r)
				}
			}
			wantOAuthError(t, push(confidential, "198.51.100.9"), http.StatusTooManyRequests, "slow_down")
		})
	})
}

// mustRequest is http.NewRequest that fails t on an error.
func mustRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
