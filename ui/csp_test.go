package ui

import (
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

// TestContentSecurityPolicyRefusesUnsafeSources: only https origins, 'self' and SHA-256
// hashes extend the policy; anything that could loosen it or inject a directive is refused
// with a message naming the directive and the source.
func TestContentSecurityPolicyRefusesUnsafeSources(t *testing.T) {
	hash := "'sha256-" + strings.Repeat("A", 43) + "='"
	tests := []struct {
		name string
		csp  ContentSecurityPolicy
		want string // "" when valid
	}{
		{"zero value", ContentSecurityPolicy{}, ""},
		{"origins, self and a hash", ContentSecurityPolicy{StyleSrc: []string{"https://cdn.example.com", "'self'"},
			FontSrc: []string{"https://fonts.example.com:8443"}, ScriptSrc: []string{hash}, ImgSrc: []string{"'SELF'"}}, ""},
		{"unsafe-inline", ContentSecurityPolicy{StyleSrc: []string{"'unsafe-inline'"}}, `style-src source "'unsafe-inline'" is never allowed`},
		{"unsafe-eval", ContentSecurityPolicy{ScriptSrc: []string{"'unsafe-eval'"}}, `script-src source "'unsafe-eval'" is never allowed`},
		{"unsafe-hashes", ContentSecurityPolicy{ScriptSrc: []string{"'unsafe-hashes'"}}, `script-src source "'unsafe-hashes'" is never allowed`},
		{"http origin", ContentSecurityPolicy{ImgSrc: []string{"http://cdn.example.com"}}, `img-src source "http://cdn.example.com" must be an https origin`},
		{"origin with a path", ContentSecurityPolicy{StyleSrc: []string{"https://cdn.example.com/css/"}}, "must be an https origin"},
		{"wildcard", ContentSecurityPolicy{ConnectSrc: []string{"*"}}, `connect-src source "*" must be an https origin`},
		{"data scheme", ContentSecurityPolicy{ImgSrc: []string{"data:"}}, "must be an https origin"},
		{"none", ContentSecurityPolicy{StyleSrc: []string{"'none'"}}, "must be an https origin"},
		{"directive injected with ;", ContentSecurityPolicy{StyleSrc: []string{"https://a.example; frame-ancestors *"}}, "must be an https origin"},
		{"policy injected with ,", ContentSecurityPolicy{StyleSrc: []string{"https://a.example,script-src *"}}, "must be an https origin"},
		{"source injected with a space", ContentSecurityPolicy{FontSrc: []string{"https://a.example 'unsafe-inline'"}}, "must be an https origin"},
		{"source injected with a newline", ContentSecurityPolicy{FontSrc: []string{"https://a.example\n"}}, "must be an https origin"},
		{"empty source", ContentSecurityPolicy{ImgSrc: []string{""}}, "must be an https origin"},
		{"hash too short", ContentSecurityPolicy{ScriptSrc: []string{"'sha256-AAAA'"}}, "is not a SHA-256 hash in base64"},
		{"hash with a quote inside", ContentSecurityPolicy{ScriptSrc: []string{"'sha256-' 'unsafe-inline'"}}, "is not a SHA-256 hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.csp.Validate()
			if tt.want == "" && err != nil {
				t.Errorf("got %v, want valid", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestPolicyAppendsExtraSources: the default policies are unchanged, and extra sources are
// appended to ours (the form_post hash kept) without touching base-uri or frame-ancestors.
func TestPolicyAppendsExtraSources(t *testing.T) {
	extend := ContentSecurityPolicy{StyleSrc: []string{"https://css.example.com"}, FontSrc: []string{"https://fonts.example.com"},
		ScriptSrc: []string{"https://js.example.com"}}
	tests := []struct {
		name      string
		scriptSrc []string
		extend    ContentSecurityPolicy
		want      string
	}{
		{"page", nil, ContentSecurityPolicy{},
			"default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'"},
		{"form_post", []string{formPostScriptHash}, ContentSecurityPolicy{},
			"default-src 'none'; script-src " + formPostScriptHash + "; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'"},
		{"page extended", nil, extend,
			"default-src 'none'; script-src https://js.example.com; style-src 'self' https://css.example.com; img-src 'self'; font-src https://fonts.example.com; base-uri 'none'; frame-ancestors 'none'"},
		{"form_post extended", []string{formPostScriptHash}, extend,
			"default-src 'none'; script-src " + formPostScriptHash + " https://js.example.com; style-src 'self' https://css.example.com; img-src 'self'; font-src https://fonts.example.com; base-uri 'none'; frame-ancestors 'none'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy(tt.scriptSrc, tt.extend); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestTemplateFSReplacesFilesOfTheSameName: a file in the template FS replaces the embedded
// one of its name; the others stay embedded.
func TestTemplateFSReplacesFilesOfTheSameName(t *testing.T) {
	ps, err := newPages(fstest.MapFS{
		"error.html": {Data: []byte(`{{template "top" .}}<p id="custom">{{.Message}}</p>{{template "bottom" .}}`)},
		"style.css":  {Data: []byte("body{color:teal}")},
	}, ContentSecurityPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, page, want string
	}{
		{"replaced page", "error", `<p id="custom">Nope.</p>`},
		{"embedded page", "notice", "Done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			v := map[string]view{"error": &ErrorView{Message: "Nope."}, "notice": &NoticeView{Page: Page{Title: "Done"}}}[tt.page]
			ps.render(rec, httptest.NewRequest("GET", "/", nil), 200, tt.page, v)
			if !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("got %s, want it to contain %q", rec.Body, tt.want)
			}
		})
	}
	if string(ps.css) != "body{color:teal}" {
		t.Errorf("style.css: got %q, want the replacement", ps.css)
	}
}
