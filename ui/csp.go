package ui

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ContentSecurityPolicy holds sources an embedder adds to the hosted pages' policy, per
// directive; each is appended to ours (default-src 'none'; style-src 'self'; img-src
// 'self'; base-uri 'none'; frame-ancestors 'none', plus the form_post script's hash), so it
// can only widen a directive, never lift frame-ancestors 'none'. A source is an https
// origin ("https://cdn.example.com", a port allowed, no path), 'self', or a
// 'sha256-<base64>' hash; 'unsafe-inline', 'unsafe-eval' and anything else are refused.
// There is no form-action field: the pages send none (it would apply to the redirect to
// the client), so form targets are not restricted. The zero value adds nothing.
type ContentSecurityPolicy struct {
	StyleSrc   []string
	ImgSrc     []string
	FontSrc    []string
	ScriptSrc  []string
	ConnectSrc []string
}

// directives pairs each directive's name with its extra sources, in policy order.
func (c ContentSecurityPolicy) directives() []directive {
	return []directive{
		{"script-src", c.ScriptSrc}, {"style-src", c.StyleSrc}, {"img-src", c.ImgSrc},
		{"font-src", c.FontSrc}, {"connect-src", c.ConnectSrc},
	}
}

type directive struct {
	name    string
	sources []string
}

// httpsOrigin is a host-source limited to an https origin: a DNS name or IPv4 address and
// an optional port, nothing that could end a source or a directive.
var httpsOrigin = regexp.MustCompile(`^https://[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$`)

// Validate returns an error naming every source that is not an https origin, 'self' or a
// 'sha256-…' hash.
func (c ContentSecurityPolicy) Validate() error {
	var errs []error
	for _, d := range c.directives() {
		for _, src := range d.sources {
			if err := checkSource(src); err != nil {
				errs = append(errs, fmt.Errorf("%s source %q %w", d.name, src, err))
			}
		}
	}
	return errors.Join(errs...)
}

func checkSource(src string) error {
	switch lower := strings.ToLower(src); {
	case lower == "'self'" || httpsOrigin.MatchString(src):
		return nil
	case lower == "'unsafe-inline'" || lower == "'unsafe-eval'" || lower == "'unsafe-hashes'":
		return errors.New("is never allowed: the pages run no inline or evaluated code but the form_post script, allowed by its hash")
	case strings.HasPrefix(src, "'sha256-") && strings.HasSuffix(src, "'"):
		if sum, err := base64.StdEncoding.DecodeString(src[len("'sha256-") : len(src)-1]); err != nil || len(sum) != 32 {
			return errors.New("is not a SHA-256 hash in base64")
		}
		return nil
	}
	return errors.New("must be an https origin without path (https://host[:port]), 'self' or a 'sha256-…' hash")
}

// policy is the Content-Security-Policy of a page: ours, scriptSrc (the page's own script
// hashes, none for most pages) and the extra sources of extend.
func policy(scriptSrc []string, extend ContentSecurityPolicy) string {
	ours := map[string][]string{"script-src": scriptSrc, "style-src": {"'self'"}, "img-src": {"'self'"}}
	parts := []string{"default-src 'none'"}
	for _, d := range extend.directives() {
		if sources := append(append([]string(nil), ours[d.name]...), d.sources...); len(sources) > 0 {
			parts = append(parts, d.name+" "+strings.Join(sources, " "))
		}
	}
	return strings.Join(append(parts, "base-uri 'none'", "frame-ancestors 'none'"), "; ")
}
