// Package sameorigin refuses cookie-authenticated state changes that a browser sends from
// another origin: the one check every JSON surface of Gatehouse (public authentication,
// admin, permissions) puts before its handlers, so a page elsewhere cannot make a signed-in
// browser log out, change a user or a permission (a plain-text POST needs no CORS
// preflight, and SameSite=Lax cookies still go with requests from sibling subdomains).
//
// Only the deployment's own origin is trusted, not its whole site: an identity provider
// usually shares a registrable domain with applications it does not vouch for.
//
// Go's http.CrossOriginProtection stands beside the guard's own check, as a second layer
// maintained with the standard library: a request must pass both. CrossOriginProtection
// returns it configured for a deployment, for the hosted pages' forms too.
package sameorigin

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// Guard admits a request that is safe (GET, HEAD, OPTIONS), carries no cookie (a bearer
// token or a non-browser client), or comes from the guard's origin: its Origin header
// names that origin or, without Origin, its Sec-Fetch-Site is same-origin or none (typed
// into the address bar). A request with neither header is admitted, since browsers send
// Origin on every cross-origin POST; only non-browser clients omit both. A request with a
// cookie must also pass Go's http.CrossOriginProtection (see CrossOriginProtection).
type Guard struct {
	origin string
	// crossOrigin is Go's check, which a cookie-authenticated change must pass too.
	crossOrigin *http.CrossOriginProtection
}

// New returns the guard of baseURL's origin (an absolute http or https URL).
func New(baseURL string) (Guard, bool) {
	origin, ok := Of(baseURL)
	return Guard{origin: origin, crossOrigin: CrossOriginProtection(baseURL)}, ok
}

// CrossOriginProtection returns Go's http.CrossOriginProtection for the deployment at
// baseURL: it refuses a state-changing request (not GET, HEAD or OPTIONS) whose
// Sec-Fetch-Site names another origin or site or, from a browser too old to send that
// header, whose Origin names a host other than the request's Host; baseURL's origin is
// trusted as well, so a deployment behind a proxy that rewrites Host keeps working.
// Requests with neither header (not from a browser) pass.
func CrossOriginProtection(baseURL string) *http.CrossOriginProtection {
	c := http.NewCrossOriginProtection()
	if origin, ok := browserOrigin(baseURL); ok {
		_ = c.AddTrustedOrigin(origin) // browserOrigin writes scheme://host[:port], which it takes
	}
	return c
}

// browserOrigin is the origin of an absolute http(s) URL as a browser writes it in the
// Origin header: scheme://host[:port], lower case, the default port left out.
func browserOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port := u.Port(); port != "" && port != map[string]string{"http": "80", "https": "443"}[scheme] {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// Of returns the origin of an absolute http(s) URL as scheme://host:port, lower case and
// with the default port written out, so equal origins compare equal as strings.
func Of(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

// Allowed reports whether r may go on to its handler.
func (g Guard) Allowed(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if r.Header.Get("Cookie") == "" {
		return true
	}
	if g.crossOrigin != nil && g.crossOrigin.Check(r) != nil {
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		// "null" (a sandboxed frame, a data: URL, some redirects) names no origin: refused.
		got, ok := Of(origin)
		return ok && got == g.origin
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// Wrap refuses with 403, in the JSON error shape, what Allowed does not admit.
func (g Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Allowed(r) {
			httpjson.WriteError(w, http.StatusForbidden, "cross-origin request refused: a change made with a session cookie must come from this site's own pages")
			return
		}
		next.ServeHTTP(w, r)
	})
}
