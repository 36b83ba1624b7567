package social_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/social"
)

// TestValidate: every unusable upstream configuration is reported, by field; usable ones
// pass.
func TestValidate(t *testing.T) {
	t.Parallel()
	oidc := func(name, issuer string) social.Upstream {
		return social.Upstream{Kind: social.KindOIDC, Name: name, Issuer: issuer, ClientID: "id", ClientSecret: "secret"}
	}
	google := social.Upstream{Kind: social.KindGoogle, ClientID: "id", ClientSecret: "secret"}
	cases := []struct {
		name string
		ups  []social.Upstream
		want []string // substrings of the error; none: valid
	}{
		{"none", nil, nil},
		{"Google, Facebook and two OIDC upstreams", []social.Upstream{google,
			{Kind: social.KindFacebook, ClientID: "id", ClientSecret: "secret"},
			oidc("corp", "https://idp.example"), oidc("a-2", "http://127.0.0.1:9000/realm")}, nil},
		{"name of 32", []social.Upstream{oidc(strings.Repeat("a", 32), "https://idp.example")}, nil},
		{"name of 33", []social.Upstream{oidc(strings.Repeat("a", 33), "https://idp.example")}, []string{"name must be"}},
		{"upper-case name", []social.Upstream{oidc("Corp", "https://idp.example")}, []string{"name must be"}},
		{"name with a space", []social.Upstream{oidc("my idp", "https://idp.example")}, []string{"name must be"}},
		{"name with a slash", []social.Upstream{oidc("a/b", "https://idp.example")}, []string{"name must be"}},
		{"name starting with '-'", []social.Upstream{oidc("-corp", "https://idp.example")}, []string{"name must be"}},
		{"empty name", []social.Upstream{oidc("", "https://idp.example")}, []string{"name must be"}},
		{"same name twice", []social.Upstream{oidc("corp", "https://a.example"), oidc("corp", "https://b.example")}, []string{`"corp" is configured twice`}},
		{"Google twice", []social.Upstream{google, google}, []string{"google is configured twice"}},
		{"unknown kind", []social.Upstream{{Kind: "github", ClientID: "id", ClientSecret: "secret"}}, []string{`unknown provider kind "github"`}},
		{"no secret", []social.Upstream{{Kind: social.KindGoogle, ClientID: "id"}}, []string{"client id and client secret are both required"}},
		{"issuer over plain http", []social.Upstream{oidc("corp", "http://idp.example")}, []string{"must use https"}},
		{"relative issuer", []social.Upstream{oidc("corp", "/idp")}, []string{"must be an absolute http(s) URL"}},
		{"issuer with a query", []social.Upstream{oidc("corp", "https://idp.example/?tenant=1")}, []string{"no query or fragment"}},
		{"token URL over plain http", []social.Upstream{{Kind: social.KindGoogle, ClientID: "id", ClientSecret: "secret", TokenURL: "http://g.example/token"}},
			[]string{"token URL", "must use https"}},
		{"several faults at once", []social.Upstream{oidc("Bad Name", "ftp://x"), {Kind: social.KindFacebook}},
			[]string{"name must be", "issuer", "facebook: client id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := social.Validate(c.ups)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil, want an error with %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestNew refuses an invalid configuration and missing collaborators.
func TestNew(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	auth, err := publicauth.New(publicauth.Config{Secret: testSecret, BaseURL: "https://sso.example"}, store,
		publicauth.WithLimiter(ratelimit.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auth.Close)
	ids, host := auth.Identities(store), &fakeHost{}
	ok := social.Config{Issuer: "https://sso.example", Secret: testSecret}
	if _, err := social.New(ok, auth, ids, host); err != nil {
		t.Fatalf("valid configuration: %v", err)
	}
	for _, c := range []struct {
		name string
		cfg  social.Config
		auth *publicauth.Service
		ids  *publicauth.Identities
		host social.Host
	}{
		{"relative issuer", social.Config{Issuer: "/sso", Secret: testSecret}, auth, ids, host},
		{"invalid upstream", social.Config{Issuer: "https://sso.example", Secret: testSecret,
			Upstreams: []social.Upstream{{Kind: social.KindGoogle}}}, auth, ids, host},
		{"no auth", ok, nil, ids, host},
		{"no identities", ok, auth, nil, host},
		{"no host", ok, auth, ids, nil},
	} {
		if _, err := social.New(c.cfg, c.auth, c.ids, c.host); err == nil {
			t.Errorf("%s: New succeeded", c.name)
		}
	}
}

// TestRoutesOfDisabledProviders: the routes of a provider that is not configured answer
// 404 in the JSON error shape.
func TestRoutesOfDisabledProviders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.KindGoogle)
	for _, path := range []string{
		"/api/auth/facebook/login", "/api/auth/facebook/callback",
		"/api/auth/oidc/corp/login", "/api/auth/oidc/corp/callback", "/api/auth/oidc/google/login",
	} {
		p := newBrowser(t).get(t, e.url+path)
		var body map[string]string
		if err := json.Unmarshal([]byte(p.body), &body); err != nil || p.status != http.StatusNotFound ||
			body["error"] != "Not Found" || body["message"] == "" {
			t.Errorf("%s: got %d %q, want a JSON 404", path, p.status, p.body)
		}
	}
}

// TestButtonsAndLoginURLs: one button per provider in configuration order, with its label
// and login URL carrying the paused request; LoginURL knows only enabled providers by
// their login method.
func TestButtonsAndLoginURLs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.KindOIDC, social.KindFacebook, social.KindGoogle)
	got := e.svc.Buttons("a b&c")
	want := []social.Button{
		{Provider: "oidc:corp", Label: "corp", URL: "/api/auth/oidc/corp/login?request=a+b%26c"},
		{Provider: "facebook", Label: "Facebook", URL: "/api/auth/facebook/login?request=a+b%26c"},
		{Provider: "google", Label: "Google", URL: "/api/auth/google/login?request=a+b%26c"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("button %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if u, ok := e.svc.LoginURL("oidc:corp", ""); !ok || u != "/api/auth/oidc/corp/login" {
		t.Errorf("LoginURL(oidc:corp): got %q, %v", u, ok)
	}
	for _, name := range []string{"corp", "oidc:other", "github", ""} {
		if _, ok := e.svc.LoginURL(name, "r"); ok {
			t.Errorf("LoginURL(%q): got a URL for a provider that is not enabled", name)
		}
	}
	if b := newEnv(t).svc.Buttons("r"); len(b) != 0 {
		t.Errorf("no providers: got buttons %+v", b)
	}
}
