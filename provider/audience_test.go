package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

const (
	apiAudience   = "https://api.acme.example"
	otherAudience = "https://billing.acme.example"
)

// wantAudience asserts that accessToken carries exactly want as its aud, both as the JWT's
// claim and as VerifyAccessToken reads it.
func wantAudience(t *testing.T, e *env, accessToken string, want ...string) {
	t.Helper()
	at, err := e.p.VerifyAccessToken(context.Background(), accessToken)
	if err != nil {
		t.Fatalf("VerifyAccessToken: %v", err)
	}
	if !sameSet(at.Audience, want) {
		t.Errorf("VerifyAccessToken audience: got %v, want %v", at.Audience, want)
	}
	_, claims := decodeJWT(t, accessToken)
	var aud []string
	switch v := claims["aud"].(type) {
	case string:
		aud = []string{v}
	case []any:
		for _, a := range v {
			aud = append(aud, fmt.Sprint(a))
		}
	}
	if !sameSet(aud, want) {
		t.Errorf("aud claim: got %v, want %v", claims["aud"], want)
	}
}

// TestClientCredentialsAudience asks client_credentials tokens for audiences with the
// `audience` and RFC 8707 `resource` parameters: a registered audience becomes the token's
// aud, compared exactly; anything else is invalid_target.
func TestClientCredentialsAudience(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		caller := e.client(t, provider.ClientSpec{ID: "batch-job", GrantTypes: []string{"client_credentials"},
			Scopes: []string{"profile"}, Audience: []string{apiAudience, "orders-api"}})
		if !slices.Equal(caller.Audience, []string{apiAudience, "orders-api"}) {
			t.Fatalf("CreateClient audience: got %v", caller.Audience)
		}
		cases := []struct {
			name string
			form url.Values
			want []string // the token's aud; nil means invalid_target
		}{
			{"no audience: the client id", url.Values{}, []string{"batch-job"}},
			{"audience URI", url.Values{"audience": {apiAudience}}, []string{apiAudience}},
			{"audience client id", url.Values{"audience": {"orders-api"}}, []string{"orders-api"}},
			{"resource indicator", url.Values{"resource": {apiAudience}}, []string{apiAudience}},
			{"audience and resource", url.Values{"audience": {"orders-api"}, "resource": {apiAudience}}, []string{"orders-api", apiAudience}},
			{"unregistered audience", url.Values{"audience": {otherAudience}}, nil},
			{"path under a registered URI", url.Values{"resource": {apiAudience + "/admin"}}, nil},
			{"prefix of a client id", url.Values{"audience": {"orders-api-admin"}}, nil},
			{"unregistered resource", url.Values{"resource": {otherAudience}}, nil},
			{"resource not absolute", url.Values{"resource": {"orders-api"}}, nil},
			{"resource with fragment", url.Values{"resource": {apiAudience + "#x"}}, nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				form := url.Values{"grant_type": {"client_credentials"}, "scope": {"profile"}}
				for k, v := range c.form {
					form[k] = v
				}
				r := e.token(t, caller, form)
				if c.want == nil {
					wantOAuthError(t, r, http.StatusBadRequest, "invalid_target")
					return
				}
				if r.status != http.StatusOK {
					t.Fatalf("token: got %s, want 200", r)
				}
				wantAudience(t, e, r.body["access_token"].(string), c.want...)
			})
		}
	})
}

// TestCodeFlowAudience asks for audiences with `resource` at the authorization endpoint,
// then narrows them at the token endpoint; a narrowed grant cannot widen again.
func TestCodeFlowAudience(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice Example")
		app := e.client(t, provider.ClientSpec{ID: "web-app", FirstParty: true, Audience: []string{apiAudience, otherAudience}})
		rp := e.relyingParty(t, app)
		br := e.browser(t)
		start := func(resources ...string) *authRequest {
			ar := rp.start()
			q := ar.url.Query()
			q["resource"] = resources
			ar.url.RawQuery = q.Encode()
			return ar
		}

		t.Run("resource at authorize becomes aud", func(t *testing.T) {
			ar := start(apiAudience, otherAudience)
			p := br.get(t, ar.String())
			if p.url.Path == "/login" {
				p = br.login(t, p, alice.Email)
			}
			tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
			wantAudience(t, e, tok.AccessToken, apiAudience, otherAudience)
			if tok.claims["aud"] != app.ClientID {
				t.Errorf("ID token aud: got %v, want the client id", tok.claims["aud"])
			}

			refresh := func(resource ...string) jsonResponse {
				form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "resource": resource}
				r := e.token(t, app, form)
				if r.status == http.StatusOK {
					tok.RefreshToken = r.body["refresh_token"].(string)
				}
				return r
			}
			r := refresh()
			if r.status != http.StatusOK {
				t.Fatalf("refresh: got %s", r)
			}
			wantAudience(t, e, r.body["access_token"].(string), apiAudience, otherAudience)
			r = refresh(apiAudience)
			if r.status != http.StatusOK {
				t.Fatalf("narrowing refresh: got %s", r)
			}
			wantAudience(t, e, r.body["access_token"].(string), apiAudience)
			wantOAuthError(t, refresh(otherAudience), http.StatusBadRequest, "invalid_target")
			r = refresh()
			if r.status != http.StatusOK {
				t.Fatalf("refresh after narrowing: got %s", r)
			}
			wantAudience(t, e, r.body["access_token"].(string), apiAudience)
		})

		t.Run("resource at the code exchange narrows", func(t *testing.T) {
			ar := start(apiAudience, otherAudience)
			code := wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
			tok, err := rp.config.Exchange(rp.ctx, code, oauth2.VerifierOption(ar.verifier), oauth2.SetAuthURLParam("resource", otherAudience))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			wantAudience(t, e, tok.AccessToken, otherAudience)
		})

		t.Run("resource at the code exchange cannot widen", func(t *testing.T) {
			ar := start(apiAudience)
			code := wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
			r := e.token(t, app, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirectURI},
				"code_verifier": {ar.verifier}, "resource": {otherAudience}})
			wantOAuthError(t, r, http.StatusBadRequest, "invalid_target")
		})

		for _, res := range []string{"https://evil.example.net", "relative", apiAudience + "#frag"} {
			t.Run("resource "+res+" at authorize is invalid_target", func(t *testing.T) {
				ar := start(res)
				wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "invalid_target")
			})
		}
	})
}

// TestCustomScopes declares a scope in Config.Scopes: discovery lists it, the consent page
// describes it, and a token granted it passes RequireScopes.
func TestCustomScopes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{Scopes: []provider.Scope{
			{Name: "orders.read", Description: "Read your orders"}, {Name: "orders.write"},
		}})
		alice := e.user(t, "alice@example.com", "Alice Example")
		shop := e.client(t, provider.ClientSpec{ID: "shop", Name: "Shop", Scopes: []string{"openid", "orders.read", "orders.write"}})

		doc := e.call(t, http.MethodGet, "/.well-known/openid-configuration", nil, nil).body
		var scopes []string
		for _, s := range doc["scopes_supported"].([]any) {
			scopes = append(scopes, s.(string))
		}
		if !slices.Contains(scopes, "orders.read") || !slices.Contains(scopes, "orders.write") || !slices.Contains(scopes, "openid") {
			t.Errorf("scopes_supported: got %v, want the built-in scopes and orders.read, orders.write", scopes)
		}

		rp := e.relyingParty(t, shop, "openid", "orders.read", "orders.write")
		br := e.browser(t)
		ar := rp.start()
		p := br.login(t, br.get(t, ar.String()), alice.Email)
		for _, want := range []string{"<li>Read your orders</li>", "<li>Use scope orders.write</li>"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("consent page lacks %s:\n%s", want, p.body)
			}
		}
		tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.consent(t, p, "allow"), rpRedirectURI)))

		api := httptest.NewServer(e.p.RequireScopes("orders.read")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"ok":true}`)
		})))
		t.Cleanup(api.Close)
		req, err := http.NewRequest(http.MethodGet, api.URL+"/orders", nil)
		if err != nil {
			t.Fatal(err)
		}
		bearer(tok.AccessToken)(req)
		if r := e.send(t, req); r.status != http.StatusOK {
			t.Errorf("RequireScopes(orders.read): got %s, want 200", r)
		}
	})
}

// TestCustomScopesAreValidated: New refuses a Config.Scopes that is not RFC 6749 scope
// tokens, repeats a name or takes a built-in scope's name.
func TestCustomScopesAreValidated(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		scopes []provider.Scope
		want   string
	}{
		{"empty name", []provider.Scope{{Name: ""}}, `scope "" is not a valid scope token`},
		{"space", []provider.Scope{{Name: "orders read"}}, "not a valid scope token"},
		{"quote", []provider.Scope{{Name: `orders"read`}}, "not a valid scope token"},
		{"non-ASCII", []provider.Scope{{Name: "bestellungen.lesen\u00e4"}}, "not a valid scope token"},
		{"duplicate", []provider.Scope{{Name: "orders.read"}, {Name: "orders.read"}}, `scope "orders.read" is declared twice`},
		{"openid", []provider.Scope{{Name: "openid"}}, `scope "openid" is built in`},
		{"offline_access", []provider.Scope{{Name: "offline_access"}}, "is built in"},
		{"phone", []provider.Scope{{Name: "phone"}}, "is built in"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := provider.New(provider.Config{DSN: "sqlite:" + filepath.Join(t.TempDir(), "g.db"), Secret: testSecret, Scopes: tt.scopes})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestRequireAudience: an API guarded by RequireAudience takes only tokens whose audience
// names it, so a token another API's client was issued is refused there (RFC 9068 §4),
// while RequireScopes alone would take it.
func TestRequireAudience(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		caller := e.client(t, provider.ClientSpec{ID: "batch-job", GrantTypes: []string{"client_credentials"},
			Scopes: []string{"profile"}, Audience: []string{apiAudience, "orders-api"}})
		api := httptest.NewServer(e.p.RequireAudience(apiAudience, "profile")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := provider.AccessTokenFromContext(r.Context()); !ok {
				http.Error(w, "no access token in the context", http.StatusInternalServerError)
			}
		})))
		t.Cleanup(api.Close)
		tokenFor := func(form url.Values) string { return e.clientCredentials(t, caller, "profile", form) }
		for _, c := range []struct {
			name   string
			token  string
			status int
		}{
			{"issued for this API", tokenFor(url.Values{"resource": {apiAudience}}), http.StatusOK},
			{"issued for another API", tokenFor(url.Values{"audience": {"orders-api"}}), http.StatusUnauthorized},
			{"no audience asked for: the client's own id", tokenFor(url.Values{}), http.StatusUnauthorized},
		} {
			t.Run(c.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodGet, api.URL, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+c.token)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != c.status {
					t.Fatalf("got %d, want %d", res.StatusCode, c.status)
				}
				if c.status == http.StatusUnauthorized && !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
					t.Errorf("challenge %q, want invalid_token", res.Header.Get("WWW-Authenticate"))
				}
			})
		}
	})
}

// TestOwnAPIsRequireTheirAudience: userinfo and the permission routes are Gatehouse's own
// resources, so they accept only an access token whose audience names Gatehouse (the
// issuer) or the token's own client. An ordinary token's audience is its client, and
// passes; a token issued for another API (RFC 8707 resource) is refused there with 401
// invalid_token, and still works at that API; a token asked for both passes.
func TestOwnAPIsRequireTheirAudience(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		const ordersAPI = "https://orders-api.example"
		alice := e.user(t, "alice@example.com", "Alice Example")
		shop := e.client(t, provider.ClientSpec{ID: "shop", FirstParty: true,
			Scopes:     []string{"openid", "profile", "email", "offline_access", "manage_permissions"},
			GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"},
			Audience:   []string{ordersAPI, e.issuer}})
		rp := e.relyingParty(t, shop)
		br := e.browser(t)
		userToken := func(resources ...string) string {
			t.Helper()
			ar := rp.start()
			q := ar.url.Query()
			q["resource"] = resources
			ar.url.RawQuery = q.Encode()
			p := br.get(t, ar.String())
			if p.url.Path == "/login" {
				p = br.login(t, p, alice.Email)
			}
			return rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI))).AccessToken
		}
		clientToken := func(form url.Values) string { return e.clientCredentials(t, shop, "manage_permissions", form) }
		ordersOnly := userToken(ordersAPI)
		wantAudience(t, e, ordersOnly, ordersAPI)
		ordinary := userToken()
		wantAudience(t, e, ordinary, shop.ClientID)
		both := userToken(ordersAPI, e.issuer)
		ordersClient := clientToken(url.Values{"resource": {ordersAPI}})
		ordinaryClient := clientToken(url.Values{})

		record := "/api/users/" + alice.ID + "/apps/shop/permissions"
		requestAccess := "/api/users/" + alice.ID + "/apps/shop/request-access"
		refused := func(t *testing.T, r jsonResponse) {
			t.Helper()
			if r.status != http.StatusUnauthorized {
				t.Errorf("got %s, want 401", r)
				return
			}
			if !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("challenge %q, want invalid_token", r.header.Get("WWW-Authenticate"))
			}
		}
		t.Run("a token for another API is refused", func(t *testing.T) {
			refused(t, e.userinfo(t, ordersOnly))
			refused(t, e.call(t, http.MethodGet, record, nil, bearer(ordersOnly)))
			refused(t, e.call(t, http.MethodPost, requestAccess, nil, bearer(ordersOnly)))
			put := jsonRequest(t, http.MethodPut, e.issuer+record, `{"status":"approved","role":"user"}`, ordersClient)
			refused(t, e.send(t, put))
		})
		t.Run("the same token still opens its own API", func(t *testing.T) {
			api := httptest.NewServer(e.p.RequireAudience(ordersAPI, "openid")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			t.Cleanup(api.Close)
			req, _ := http.NewRequest(http.MethodGet, api.URL, nil)
			req.Header.Set("Authorization", "Bearer "+ordersOnly)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("orders API: got %d, want 200", res.StatusCode)
			}
		})
		t.Run("tokens naming the client or Gatehouse are accepted", func(t *testing.T) {
			for name, tok := range map[string]string{"ordinary": ordinary, "orders API and Gatehouse": both} {
				if r := e.userinfo(t, tok); r.status != http.StatusOK || r.body["sub"] != alice.ID {
					t.Errorf("userinfo with the %s token: got %s, want 200", name, r)
				}
			}
			if r := e.call(t, http.MethodPost, requestAccess, nil, bearer(ordinary)); r.status != http.StatusCreated {
				t.Errorf("request-access: got %s, want 201", r)
			}
			if r := e.call(t, http.MethodGet, record, nil, bearer(both)); r.status != http.StatusOK {
				t.Errorf("GET permission: got %s, want 200", r)
			}
			put := jsonRequest(t, http.MethodPut, e.issuer+record, `{"status":"approved","role":"user"}`, ordinaryClient)
			if r := e.send(t, put); r.status != http.StatusOK {
				t.Errorf("PUT permission with the client's token: got %s, want 200", r)
			}
		})
	})
}

// clientCredentials is the access token of a client_credentials request of c for scope,
// with the other parameters of form (resource, audience).
func (e *env) clientCredentials(t *testing.T, c provider.ClientInfo, scope string, form url.Values) string {
	t.Helper()
	form.Set("grant_type", "client_credentials")
	form.Set("scope", scope)
	r := e.token(t, c, form)
	if r.status != http.StatusOK {
		t.Fatalf("client_credentials for %s: got %s, want 200", c.ClientID, r)
	}
	return r.body["access_token"].(string)
}

// jsonRequest is a request with body as application/json and token as its Bearer token.
func jsonRequest(t *testing.T, method, target, body, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}
