package provider_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// acmeLogin replaces login.html: a company's own page, written against ui.LoginView.
const acmeLogin = `{{template "top" .}}<h2 id="acme">Acme sign-in{{with .ClientName}} for {{.}}{{end}}</h2>
<form method="post" action="/login">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<input type="hidden" name="request" value="{{.Request}}">
<input name="email" type="email" value="{{.Email}}"><input name="password" type="password">
<button type="submit">Sign in</button>
</form>{{template "bottom" .}}`

// replacementTemplates are the files of an operator's templates: login.html and style.css.
var replacementTemplates = map[string]string{
	"login.html": acmeLogin,
	"style.css":  "body { font-family: AcmeSans; }",
}

// TestTemplateFSReplacesHostedPages: Config.TemplateFS, and Config.TemplateDir read through
// the same loader, replace login.html and style.css by their files of the same name; the
// replacement login form signs in, and the other pages stay embedded. The pages do not
// depend on storage, so one backend is enough.
func TestTemplateFSReplacesHostedPages(t *testing.T) {
	t.Parallel()
	mapFS, dir := fstest.MapFS{}, t.TempDir()
	for name, text := range replacementTemplates {
		mapFS[name] = &fstest.MapFile{Data: []byte(text)}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, cfg := range []struct {
		name string
		cfg  provider.Config
	}{
		{"TemplateFS", provider.Config{TemplateFS: mapFS}},
		{"TemplateDir", provider.Config{TemplateDir: dir}},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			e := newEnv(t, storagetest.Backends(t)[0], cfg.cfg)
			alice := e.user(t, "alice@example.com", "Alice Example")
			webapp := e.client(t, provider.ClientSpec{ID: "webapp", Name: "Web App", FirstParty: true})
			rp := e.relyingParty(t, webapp)
			br := e.browser(t)

			ar := rp.start()
			login := br.get(t, ar.String())
			tests := []struct {
				name string
				p    page
				want string
			}{
				{"login.html replaced", login, `<h2 id="acme">Acme sign-in for Web App</h2>`},
				{"style.css replaced", br.get(t, e.issuer+"/ui/style.css"), "AcmeSans"},
				{"register.html embedded", br.get(t, e.issuer+"/register"), `autocomplete="new-password"`},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					if tt.p.status != http.StatusOK || !strings.Contains(tt.p.body, tt.want) {
						t.Errorf("got %s, want 200 containing %q", tt.p, tt.want)
					}
				})
			}
			wantHostedPageHeaders(t, login)
			tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.login(t, login, alice.Email), rpRedirectURI)))
			if tok.claims["sub"] != alice.ID {
				t.Errorf("sub: got %v, want %s", tok.claims["sub"], alice.ID)
			}
		})
	}
}

// TestContentSecurityPolicyExtendsHostedPages: the extra sources are appended to the
// hosted pages' policy and to the form_post page's, which keeps its script hash and no
// 'unsafe-inline'. The pages do not depend on storage, so one backend is enough.
func TestContentSecurityPolicyExtendsHostedPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storagetest.Backends(t)[0], provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{
		StyleSrc: []string{"https://css.acme.example"}, FontSrc: []string{"https://fonts.acme.example"},
		ScriptSrc: []string{"https://js.acme.example"},
	}})
	webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true})
	rp := e.relyingParty(t, webapp)
	br := e.browser(t)

	formPost := br.get(t, rp.start(oauth2.SetAuthURLParam("response_mode", "form_post"), oauth2.SetAuthURLParam("prompt", "none")).String())
	wantSafeFormPost(t, formPost)
	tests := []struct {
		name string
		p    page
	}{
		{"login page", br.get(t, rp.start().String())},
		{"form_post page", formPost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantHostedPageHeaders(t, tt.p)
			csp := tt.p.header.Get("Content-Security-Policy")
			for _, want := range []string{"style-src 'self' https://css.acme.example;", "font-src https://fonts.acme.example;",
				"https://js.acme.example;", "default-src 'none';", "base-uri 'none';"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
		})
	}
}

// TestTemplateAndPolicyConfigIsValidated: both template sources, and every source that
// would loosen or break the policy, make New fail with a message saying so.
func TestTemplateAndPolicyConfigIsValidated(t *testing.T) {
	tests := []struct {
		name string
		cfg  provider.Config
		want string
	}{
		{"template dir and template FS", provider.Config{TemplateDir: t.TempDir(), TemplateFS: fstest.MapFS{}},
			"template dir and template FS are both set"},
		{"unsafe-inline", provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{StyleSrc: []string{"'unsafe-inline'"}}},
			`content security policy: style-src source "'unsafe-inline'" is never allowed`},
		{"unsafe-eval", provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{ScriptSrc: []string{"'unsafe-eval'"}}},
			`script-src source "'unsafe-eval'" is never allowed`},
		{"http origin", provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{ImgSrc: []string{"http://img.acme.example"}}},
			`img-src source "http://img.acme.example" must be an https origin`},
		{"directive injected with ;", provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{StyleSrc: []string{"https://a.example; frame-ancestors *"}}},
			"must be an https origin"},
		{"policy injected with ,", provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{FontSrc: []string{"https://a.example,frame-ancestors *"}}},
			"must be an https origin"},
		{"source injected with whitespace", provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{ConnectSrc: []string{"https://a.example *"}}},
			"must be an https origin"},
		{"wildcard", provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{ImgSrc: []string{"*"}}},
			"must be an https origin"},
		{"malformed hash", provider.Config{ContentSecurityPolicy: provider.ContentSecurityPolicy{ScriptSrc: []string{"'sha256-abc'"}}},
			"is not a SHA-256 hash in base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.DSN, tt.cfg.Secret = "sqlite:"+filepath.Join(t.TempDir(), "g.db"), testSecret
			p, err := provider.New(tt.cfg)
			if err == nil {
				_ = p.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
