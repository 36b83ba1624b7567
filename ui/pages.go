package ui

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
)

//go:embed templates
var embeddedTemplates embed.FS

// pages renders the hosted pages with headers that keep them safe: a CSP that loads
// nothing from other origins (but those Config.ContentSecurityPolicy adds) and forbids
// framing, no caching, no referrer.
type pages struct {
	// mount is the provider's mount path, every page's Page.Base.
	mount  string
	byName map[string]*template.Template
	// formPostPage is the built-in response_mode=form_post page (formpost.go).
	formPostPage *template.Template
	css          []byte
	// csp is every page's Content-Security-Policy, formPostCSP the form_post page's.
	csp, formPostCSP string
}

// newPages loads the embedded templates, each replaced by a file of the same name in
// templates when it has one (templates may be nil), and builds the policies extended by
// extend.
func newPages(templates fs.FS, extend ContentSecurityPolicy) (*pages, error) {
	read := func(name string) ([]byte, error) {
		if templates != nil {
			b, err := fs.ReadFile(templates, name)
			if err == nil {
				return b, nil
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		return embeddedTemplates.ReadFile("templates/" + name)
	}
	layout, err := read("layout.html")
	if err != nil {
		return nil, err
	}
	ps := &pages{byName: map[string]*template.Template{},
		csp: policy(nil, extend), formPostCSP: policy([]string{formPostScriptHash}, extend)}
	// Each page (pageViews) may be replaced by a file of the same name in dir; layout.html
	// (the shared "top", "bottom" and "error_message") may be replaced too.
	for name := range pageViews {
		body, err := read(name + ".html")
		if err != nil {
			return nil, err
		}
		if ps.byName[name], err = parsePage(name, string(layout), string(body)); err != nil {
			return nil, err
		}
	}
	if ps.formPostPage, err = parsePage("form_post", string(layout), formPostBody); err != nil {
		return nil, err
	}
	if ps.css, err = read("style.css"); err != nil {
		return nil, err
	}
	return ps, nil
}

// parsePage parses a page's body over the shared layout.
func parsePage(name, layout, body string) (*template.Template, error) {
	t, err := template.New(name).Parse(layout)
	if err == nil {
		t, err = t.Parse(body)
	}
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return t, nil
}

// render writes page name from its view v (of the type pageViews gives), under the mount
// path; the page's title when v has none.
func (ps *pages) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	p := v.page()
	if p.Title == "" {
		p.Title = pageViews[name].title
	}
	p.Base = ps.mount
	var buf bytes.Buffer
	if err := ps.byName[name].Execute(&buf, v); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w, ps.csp)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// error shows the error page; it never redirects.
func (ps *pages) error(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	ps.render(w, r, status, "error", &ErrorView{Page: Page{Title: title}, Message: message})
}

func (ps *pages) style(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(ps.css)
}

// setPageHeaders sets a page's headers, csp its policy. The policy has no form-action
// directive, because browsers apply it to the redirect chain after a form POST, which must
// end at the client's redirect URI.
func setPageHeaders(w http.ResponseWriter, csp string) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}
