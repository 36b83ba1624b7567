package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestVerifyAccessToken drives Provider.VerifyAccessToken, the in-process check for an API
// beside the provider, with tokens from real flows: it must accept what introspection
// accepts and refuse, at once, what introspection refuses.
func TestVerifyAccessToken(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		ctx := context.Background()
		userToken := func(t *testing.T, email string) tokens {
			t.Helper()
			return e.userToken(t, e.browser(t), e.app, email)
		}
		cases := []struct {
			name string
			// token returns the token to verify, after doing what should make it valid or not.
			token func(t *testing.T) string
			// want checks an accepted token; nil means the token must be refused.
			want func(t *testing.T, at *provider.AccessToken)
		}{
			{"user token", func(t *testing.T) string { return userToken(t, e.alice.Email).AccessToken },
				func(t *testing.T, at *provider.AccessToken) {
					if at.Subject != e.alice.ID || at.ClientID != e.app.ClientID || !at.UserBound {
						t.Errorf("got sub %q, client %q, user bound %v; want %q, %q, true", at.Subject, at.ClientID, at.UserBound, e.alice.ID, e.app.ClientID)
					}
					if want := []string{"openid", "profile", "email", "offline_access"}; !sameSet(at.Scopes, want) {
						t.Errorf("scopes: got %v, want %v", at.Scopes, want)
					}
					if !slices.Equal(at.Audience, []string{e.app.ClientID}) {
						t.Errorf("audience: got %v, want [%s]", at.Audience, e.app.ClientID)
					}
					if at.Claims["iss"] != e.issuer || at.Claims["sub"] != e.alice.ID || at.Claims["jti"] == nil || at.Claims["auth_time"] == nil {
						t.Errorf("claims: got %v, want iss, sub, jti and auth_time", at.Claims)
					}
					if d := time.Since(at.IssuedAt); d < -time.Minute || d > time.Minute {
						t.Errorf("issued at: got %v, want now", at.IssuedAt)
					}
					if d := at.ExpiresAt.Sub(at.IssuedAt); d < 59*time.Minute || d > 61*time.Minute {
						t.Errorf("expires %v after issue, want the default hour", d)
					}
				}},
			{"client_credentials token", func(t *testing.T) string { return e.clientToken(t, e.app, "profile") },
				func(t *testing.T, at *provider.AccessToken) {
					if at.Subject != e.app.ClientID || at.ClientID != e.app.ClientID || at.UserBound {
						t.Errorf("got sub %q, client %q, user bound %v; want %q, %q, false", at.Subject, at.ClientID, at.UserBound, e.app.ClientID, e.app.ClientID)
					}
					if !slices.Equal(at.Scopes, []string{"profile"}) || at.Claims["client_id"] != e.app.ClientID {
						t.Errorf("got scopes %v, claims %v; want [profile] and client_id", at.Scopes, at.Claims)
					}
				}},
			{"expired by the provider's clock", func(t *testing.T) string {
				tok := userToken(t, e.alice.Email).AccessToken
				e.clockOffset.Store(int64(2 * time.Hour))
				t.Cleanup(func() { e.clockOffset.Store(0) })
				return tok
			}, nil},
			{"revoked at the revocation endpoint", func(t *testing.T) string {
				tok := userToken(t, e.alice.Email).AccessToken
				if r := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {tok}}, basicAuth(e.app)); r.status != http.StatusOK {
					t.Fatalf("revoke: got %s, want 200", r)
				}
				return tok
			}, nil},
			{"user disabled since", func(t *testing.T) string {
				carol := e.user(t, "carol@example.com", "Carol Example")
				tok := userToken(t, carol.Email).AccessToken
				if _, err := e.p.DisableUser(ctx, carol.ID); err != nil {
					t.Fatal(err)
				}
				return tok
			}, nil},
			{"refresh token", func(t *testing.T) string { return userToken(t, e.alice.Email).RefreshToken }, nil},
			{"ID token", func(t *testing.T) string { return userToken(t, e.alice.Email).rawIDToken }, nil},
			{"signature of another token", func(t *testing.T) string {
				// The stored row is found by the signature; the JWT it signs is another.
				mine, other := userToken(t, e.alice.Email).AccessToken, e.clientToken(t, e.app)
				return mine[:strings.LastIndexByte(mine, '.')] + other[strings.LastIndexByte(other, '.'):]
			}, nil},
			{"garbage", func(*testing.T) string { return "not.a.token" }, nil},
			{"empty", func(*testing.T) string { return "" }, nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				at, err := e.p.VerifyAccessToken(ctx, c.token(t))
				if c.want == nil {
					if !errors.Is(err, provider.ErrInvalidToken) || at != nil {
						t.Fatalf("got %+v, %v; want ErrInvalidToken", at, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("VerifyAccessToken: %v", err)
				}
				c.want(t, at)
			})
		}
	})
}

// TestRequireScopes serves an API guarded by Provider.RequireScopes on 127.0.0.1 beside the
// provider and checks its RFC 6750 answers.
func TestRequireScopes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		api := httptest.NewServer(e.p.RequireScopes("email", "profile")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			at, ok := provider.AccessTokenFromContext(r.Context())
			if !ok {
				http.Error(w, "no access token in the context", http.StatusInternalServerError)
				return
			}
			fmt.Fprintf(w, `{"sub":%q}`, at.Subject)
		})))
		t.Cleanup(api.Close)
		alice := e.userToken(t, e.browser(t), e.app, e.alice.Email).AccessToken
		realm := `Bearer realm="` + e.issuer + `"`
		cases := []struct {
			name      string
			auth      func(*http.Request)
			status    int
			challenge string // the WWW-Authenticate header, "" for none
			code      string // the body's error, "" for none
		}{
			{"no token", nil, http.StatusUnauthorized, realm, "invalid_request"},
			{"bad token", bearer("not.a.token"), http.StatusUnauthorized,
				realm + `, error="invalid_token", error_description="The access token is invalid, expired or revoked."`, "invalid_token"},
			{"missing scope", bearer(e.clientToken(t, e.app, "profile")), http.StatusForbidden,
				realm + `, error="insufficient_scope", error_description="The access token does not carry the required scopes.", scope="email profile"`, "insufficient_scope"},
			{"good token", bearer(alice), http.StatusOK, "", ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodGet, api.URL+"/notes", nil)
				if err != nil {
					t.Fatal(err)
				}
				if c.auth != nil {
					c.auth(req)
				}
				r := e.send(t, req)
				if r.status != c.status {
					t.Fatalf("got %s, want %d", r, c.status)
				}
				if got := r.header.Get("WWW-Authenticate"); got != c.challenge {
					t.Errorf("WWW-Authenticate: got %q, want %q", got, c.challenge)
				}
				if c.status == http.StatusOK {
					if r.raw != fmt.Sprintf(`{"sub":%q}`, e.alice.ID) {
						t.Errorf("handler answered %s, want alice's id from AccessTokenFromContext", r.raw)
					}
					return
				}
				wantOAuthError(t, r, c.status, c.code)
			})
		}
	})
}

// TestRequireUser: RequireUser lets a user's token through and refuses a client's own
// token carrying the same scope (401 insufficient_user_authentication, RFC 9470 §3), which
// RequireScopes lets through.
func TestRequireUser(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			at, _ := provider.AccessTokenFromContext(r.Context())
			fmt.Fprintf(w, `{"sub":%q}`, at.Subject)
		})
		mux := http.NewServeMux()
		mux.Handle("/user", e.p.RequireUser("profile")(handler))
		mux.Handle("/any", e.p.RequireScopes("profile")(handler))
		api := httptest.NewServer(mux)
		t.Cleanup(api.Close)
		alice := e.userToken(t, e.browser(t), e.app, e.alice.Email).AccessToken
		client := e.clientToken(t, e.app, "profile")
		realm := `Bearer realm="` + e.issuer + `"`
		for _, c := range []struct {
			name, path, token string
			status            int
			challenge, code   string
		}{
			{"a user's token for a user's route", "/user", alice, http.StatusOK, "", ""},
			{"a client's token for a user's route", "/user", client, http.StatusUnauthorized,
				realm + `, error="insufficient_user_authentication", error_description="This resource acts for a user: present a token issued with a user's authorization, not a client's own token."`,
				"insufficient_user_authentication"},
			{"a client's token where any token may go", "/any", client, http.StatusOK, "", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodGet, api.URL+c.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				bearer(c.token)(req)
				r := e.send(t, req)
				if r.status != c.status {
					t.Fatalf("got %s, want %d", r, c.status)
				}
				if got := r.header.Get("WWW-Authenticate"); got != c.challenge {
					t.Errorf("WWW-Authenticate: got %q, want %q", got, c.challenge)
				}
				if c.code != "" {
					wantOAuthError(t, r, c.status, c.code)
				}
			})
		}
	})
}
