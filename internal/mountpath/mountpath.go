// Package mountpath is where the provider lives on its origin: the path of the issuer URL
// (e.g. "/auth" for https://acme.example/auth), the prefix of every route, page, redirect,
// mailed link and cookie of the provider. Its one job is that rule, in two functions: Of
// reads the mount path from the issuer, and Contains decides whether a path the provider
// would send a browser to stays inside it. Every package that builds or checks a path of
// the provider uses them, so the rule exists once.
package mountpath

import (
	"fmt"
	"net/url"
	"strings"
)

// Of returns the mount path of issuer: its URL path without a trailing slash, "" for an
// issuer at the origin's root (http://localhost:8080 and http://localhost:8080/ alike).
// The path must be plain, so that it reads the same in a route, an HTML attribute and a
// cookie's Path: "/"-separated segments of letters, digits and "-._~", none of them empty,
// "." or "..", and no percent-encoding. Any other path, or an issuer that is not an
// absolute URL, is an error.
func Of(issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("issuer %q is not an absolute URL", issuer)
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	for _, seg := range strings.Split(p, "/")[1:] {
		if !plainSegment(seg) {
			return "", fmt.Errorf("issuer path %q must be plain: segments of letters, digits and -._~, none empty, . or ..", u.EscapedPath())
		}
	}
	return p, nil
}

// plainSegment reports whether seg is a non-empty path segment of unreserved characters
// (RFC 3986 §2.3) other than a dot segment.
func plainSegment(seg string) bool {
	if seg == "" || seg == "." || seg == ".." {
		return false
	}
	for _, c := range seg {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.ContainsRune("-._~", c):
		default:
			return false
		}
	}
	return true
}

// Contains reports whether p, a path with an optional query (what an internal redirect's
// Location holds), is one a browser resolves to a place inside the mount path mount (from
// Of). Every such path begins with "/" but not with "//" or "/\" (which browsers read as
// another host) and holds no control character. At the root (mount "") that is all: every
// path of the origin is the provider's. Under a mount path, p must also begin with
// mount+"/" and hold no backslash (which browsers read as "/") and no dot segment, plain
// or percent-encoded ("..", "%2e%2e"), which a browser would resolve out of the mount
// path: "/auth/../login" is the embedding company's /login, not the provider's.
func Contains(mount, p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, `/\`) {
		return false
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	if mount == "" {
		return true
	}
	path, _, _ := strings.Cut(p, "?")
	path, _, _ = strings.Cut(path, "#")
	if !strings.HasPrefix(path, mount+"/") || strings.Contains(path, `\`) {
		return false
	}
	for _, seg := range strings.Split(strings.ToLower(path), "/") {
		switch strings.ReplaceAll(seg, "%2e", ".") {
		case ".", "..":
			return false
		}
	}
	return true
}
