package provider_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// recipeBase is the issuer the README's recipes are written for.
const recipeBase = "https://sso.example.com"

// readmeRecipes returns the "Relying-party recipes" section of README.md.
func readmeRecipes(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "\n## Relying-party recipes\n")
	if !ok {
		t.Fatal("README.md has no Relying-party recipes section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// recipeValue is the first submatch of pattern in the recipes; the test fails without one.
func recipeValue(t *testing.T, recipes, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(recipes)
	if m == nil {
		t.Fatalf("the recipes have nothing matching %s", pattern)
	}
	return m[1]
}

// TestRelyingPartyRecipes checks README's recipes for Apache mod_auth_openidc and
// oauth2-proxy against a running provider: the discovery URL and issuer they name, the
// client authentication method and PKCE method they set, the scopes they ask for, the
// back-channel logout URI mod_auth_openidc listens on (its redirect URI with
// ?logout=backchannel, which receives the logout token, query included), RP-initiated
// logout back to the registered URI, and oauth2-proxy's back-end logout URL with the
// session's ID token in place of {id_token}, which ends the session.
func TestRelyingPartyRecipes(t *testing.T) {
	recipes := readmeRecipes(t)
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newBCLEnv(t, b)
		onIssuer := func(u string) string { return strings.Replace(u, recipeBase, e.issuer, 1) }
		alice := e.user(t, "alice@example.com", "Alice Example")

		var discovery struct {
			Issuer        string   `json:"issuer"`
			EndSession    string   `json:"end_session_endpoint"`
			AuthMethods   []string `json:"token_endpoint_auth_methods_supported"`
			PKCEMethods   []string `json:"code_challenge_methods_supported"`
			Scopes        []string `json:"scopes_supported"`
			BackchannelOK bool     `json:"backchannel_logout_supported"`
		}
		r := e.call(t, http.MethodGet, strings.TrimPrefix(onIssuer(recipeValue(t, recipes, `OIDCProviderMetadataURL (\S+)`)), e.issuer), nil, nil)
		if r.status != http.StatusOK {
			t.Fatalf("mod_auth_openidc's OIDCProviderMetadataURL: got %s", r)
		}
		if err := json.Unmarshal([]byte(r.raw), &discovery); err != nil {
			t.Fatal(err)
		}
		if got := onIssuer(recipeValue(t, recipes, `--oidc-issuer-url=(\S+)`)); got != discovery.Issuer {
			t.Errorf("oauth2-proxy's --oidc-issuer-url is %s, discovery's issuer %s", got, discovery.Issuer)
		}
		if m := recipeValue(t, recipes, `OIDCProviderTokenEndpointAuth (\S+)`); !slices.Contains(discovery.AuthMethods, m) || m != "client_secret_basic" {
			t.Errorf("OIDCProviderTokenEndpointAuth %s: want client_secret_basic, what client create registers, among %v", m, discovery.AuthMethods)
		}
		for _, m := range []string{recipeValue(t, recipes, `OIDCPKCEMethod (\S+)`), recipeValue(t, recipes, `--code-challenge-method=(\S+)`)} {
			if m != "S256" || !slices.Contains(discovery.PKCEMethods, m) {
				t.Errorf("PKCE method %s: want S256, among %v", m, discovery.PKCEMethods)
			}
		}
		modScopes := strings.Fields(recipeValue(t, recipes, `OIDCScope "([^"]+)"`))
		proxyScopes := strings.Fields(recipeValue(t, recipes, `--scope="([^"]+)"`))
		for _, s := range append(slices.Clone(modScopes), proxyScopes...) {
			if !slices.Contains(discovery.Scopes, s) {
				t.Errorf("scope %s is not in scopes_supported %v", s, discovery.Scopes)
			}
		}
		if !slices.Contains(proxyScopes, "offline_access") {
			t.Errorf("oauth2-proxy's scopes %v lack offline_access, which its cookie refresh needs", proxyScopes)
		}

		t.Run("mod_auth_openidc", func(t *testing.T) {
			redirectURI := recipeValue(t, recipes, `OIDCRedirectURI (\S+)`)
			bcl, err := url.Parse(recipeValue(t, recipes, `--backchannel-logout-uri '([^']+)'`))
			if err != nil || bcl.Path != strings.TrimPrefix(redirectURI, "https://"+bcl.Host) || bcl.RawQuery != "logout=backchannel" {
				t.Fatalf("back-channel logout URI %v (%v): want OIDCRedirectURI %s with ?logout=backchannel", bcl, err, redirectURI)
			}
			// mod_auth_openidc, on loopback: it records what arrives at its redirect URI.
			var mu sync.Mutex
			var posted []string
			site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if r.Method == http.MethodPost && r.PostFormValue("logout_token") != "" {
					posted = append(posted, r.URL.RequestURI())
				}
			}))
			t.Cleanup(site.Close)
			bcl.Scheme, bcl.Host = "http", strings.TrimPrefix(site.URL, "http://")
			postLogout := recipeValue(t, recipes, `--post-logout-redirect-uri (\S+)`)
			intranet := e.client(t, provider.ClientSpec{ID: recipeValue(t, recipes, `OIDCClientID (\S+)`),
				RedirectURIs: []string{redirectURI}, PostLogoutRedirectURIs: []string{postLogout},
				BackchannelLogoutURI: bcl.String(), BackchannelLogoutSessionRequired: true})
			rp := e.relyingParty(t, intranet, modScopes...)
			br := e.browser(t)
			_, tok := rp.signIn(t, e.env, br, alice.Email)

			// A sign-out in another application ends the session: the logout token goes to
			// the back-channel URI.
			other := e.relyingParty(t, e.client(t, provider.ClientSpec{ID: "other", FirstParty: true}))
			_, otherTok := other.signIn(t, e.env, br, alice.Email)
			if p := br.get(t, e.issuer+"/api/oauth/logout?"+url.Values{"id_token_hint": {otherTok.rawIDToken}}.Encode()); p.status != http.StatusOK {
				t.Fatalf("sign-out elsewhere: got %s", p)
			}
			if got := e.deliver(t); got != 1 {
				t.Fatalf("%d logout tokens delivered, want 1", got)
			}
			mu.Lock()
			got := slices.Clone(posted)
			mu.Unlock()
			if want := bcl.RequestURI(); len(got) != 1 || got[0] != want {
				t.Errorf("mod_auth_openidc received logout tokens at %v, want one at %s", got, want)
			}

			// mod_auth_openidc's own sign-out: back to the registered URI.
			_, tok = rp.signIn(t, e.env, br, alice.Email)
			p := br.get(t, discovery.EndSession+"?"+url.Values{"id_token_hint": {tok.rawIDToken}, "post_logout_redirect_uri": {postLogout}}.Encode())
			if p.status != http.StatusSeeOther || p.header.Get("Location") != postLogout {
				t.Errorf("RP-initiated logout: got %s, want 303 to %s", p, postLogout)
			}
		})

		t.Run("oauth2-proxy", func(t *testing.T) {
			dashboard := e.client(t, provider.ClientSpec{ID: recipeValue(t, recipes, `--client-id=(\S+)`), FirstParty: true,
				RedirectURIs: []string{recipeValue(t, recipes, `--redirect-url=(\S+)`)}})
			rp := e.relyingParty(t, dashboard, proxyScopes...)
			br := e.browser(t)
			_, tok := rp.signIn(t, e.env, br, alice.Email)
			refreshed := e.refresh(t, dashboard, tok.RefreshToken)
			if refreshed.status != http.StatusOK || refreshed.body["id_token"] == nil {
				t.Errorf("the cookie refresh: got %s, want a new ID token", refreshed)
			}
			logoutURL := onIssuer(recipeValue(t, recipes, `--backend-logout-url='([^']+)'`))
			if before, _, _ := strings.Cut(logoutURL, "?"); before != discovery.EndSession {
				t.Errorf("--backend-logout-url is %s, want the end_session_endpoint %s", logoutURL, discovery.EndSession)
			}
			idToken := refreshed.body["id_token"].(string)
			// oauth2-proxy's server calls it: no cookie of the browser's.
			p := e.browser(t).get(t, strings.Replace(logoutURL, "{id_token}", url.QueryEscape(idToken), 1))
			wantSignedOutPage(t, p, true)
			if sessionAlive(t, e.env, rp, br) {
				t.Error("the session outlived oauth2-proxy's back-end logout")
			}
		})
	})
}
