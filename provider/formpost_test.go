package provider_test

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// wantHostedPageHeaders asserts the headers every hosted page carries, and a CSP that
// never allows inline script wholesale.
func wantHostedPageHeaders(t *testing.T, p page) {
	t.Helper()
	for name, want := range map[string]string{
		"X-Frame-Options":        "DENY",
		"Referrer-Policy":        "no-referrer",
		"X-Content-Type-Options": "nosniff",
		"Cache-Control":          "no-store",
	} {
		if got := p.header.Get(name); got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
	csp := p.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q lacks frame-ancestors 'none'", csp)
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q allows unsafe-inline", csp)
	}
}

// wantSafeFormPost asserts that the form_post page p has the hosted pages' headers, that
// every script it holds runs under its CSP by hash or nonce, and that a visible submit
// button lets a browser without JavaScript go on.
func wantSafeFormPost(t *testing.T, p page) {
	t.Helper()
	wantHostedPageHeaders(t, p)
	csp := p.header.Get("Content-Security-Policy")
	var scriptSrc string
	for _, d := range strings.Split(csp, ";") {
		if f := strings.Fields(d); len(f) > 0 && f[0] == "script-src" {
			scriptSrc = " " + strings.Join(f[1:], " ") + " "
		}
	}
	doc, err := html.Parse(strings.NewReader(p.body))
	if err != nil {
		t.Fatal(err)
	}
	scripts, buttons := 0, 0
	var walk func(n *html.Node, hidden bool)
	walk = func(n *html.Node, hidden bool) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("<%s %s> is an inline event handler, which a CSP without unsafe-inline blocks", n.Data, a.Key)
				}
			}
			hidden = hidden || hasAttr(n, "hidden") || strings.Contains(attr(n, "style"), "display")
			switch {
			case n.Data == "script":
				scripts++
				code := ""
				if n.FirstChild != nil {
					code = n.FirstChild.Data
				}
				sum := sha256.Sum256([]byte(code))
				hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
				nonce := attr(n, "nonce")
				if !strings.Contains(scriptSrc, " "+hash+" ") && (nonce == "" || !strings.Contains(scriptSrc, " 'nonce-"+nonce+"' ")) {
					t.Errorf("script %q runs under neither hash %s nor a nonce in script-src %q", code, hash, scriptSrc)
				}
				if !strings.Contains(code, "submit()") {
					t.Errorf("script %q does not submit the form", code)
				}
			case (n.Data == "button" && attr(n, "type") != "button") || (n.Data == "input" && attr(n, "type") == "submit"):
				if !hidden {
					buttons++
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, hidden)
		}
	}
	walk(doc, false)
	if scripts == 0 {
		t.Errorf("form_post page has no script to submit itself:\n%s", p.body)
	}
	if buttons == 0 {
		t.Errorf("form_post page has no visible submit button:\n%s", p.body)
	}
}

func hasAttr(n *html.Node, name string) bool {
	for _, a := range n.Attr {
		if a.Key == name {
			return true
		}
	}
	return false
}
