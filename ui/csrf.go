package ui

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/gatehouse-id/gatehouse/internal/mountpath"
)

const (
	csrfCookie = "gatehouse-csrf"
	// csrfHostCookie is the cookie's name under an https issuer: the __Host- prefix makes
	// the browser refuse it unless it is Secure, has Path=/ and no Domain, so a sibling
	// subdomain cannot plant a cookie of its choosing (cookie tossing).
	csrfHostCookie = "__Host-" + csrfCookie
	csrfField      = "csrf_token"
)

// csrfGuard protects the hosted forms with a signed double-submit token: the browser's
// HttpOnly SameSite cookie holds a random value, and every form repeats
// HMAC(key, that value) in a hidden field. A cross-site page can neither read the cookie
// nor make the browser send it with a POST, and only the provider can compute a field for a
// value of the attacker's choosing. What the HMAC cannot stop is an attacker who fetched a
// page for a pair of their own (value, field) and can plant that value in the victim's
// browser from a sibling subdomain (cookie tossing): under an https issuer the __Host-
// prefix makes the browser refuse such a cookie, which is why production issuers must be
// https; a plain-http issuer is for localhost.
type csrfGuard struct {
	// name is the cookie's name (csrfHostCookie under an https issuer).
	name string
	// path is the cookie's Path: the mount path plus "/" under plain http, so the cookie
	// stays with the provider's pages; "/" under https, because the __Host- prefix (the
	// defence against cookie tossing above, worth more than a narrower Path) makes the
	// browser refuse the cookie with any other Path.
	path   string
	secure bool
	// key is derived from the system secret for this purpose only.
	key []byte
	// newValue draws a cookie value: 256 random bits.
	newValue func() (string, error)
}

// newCSRFGuard returns the guard of the provider whose issuer URL is issuer (its path
// already checked by mountpath.Of).
func newCSRFGuard(issuer string, secure bool, key []byte, newValue func() (string, error)) csrfGuard {
	mount, _ := mountpath.Of(issuer)
	g := csrfGuard{name: csrfCookie, path: mount + "/", secure: secure, key: key, newValue: newValue}
	if strings.HasPrefix(issuer, "https://") {
		g.name, g.path, g.secure = csrfHostCookie, "/", true
	}
	return g
}

// token returns the browser's CSRF token, setting the cookie when it has none.
func (g csrfGuard) token(w http.ResponseWriter, r *http.Request) (string, error) {
	if c, err := r.Cookie(g.name); err == nil && len(c.Value) >= 32 {
		return g.mac(c.Value), nil
	}
	value, err := g.newValue()
	if err != nil {
		return "", err
	}
	http.SetCookie(w, &http.Cookie{
		Name: g.name, Value: value, Path: g.path, HttpOnly: true, Secure: g.secure,
		SameSite: http.SameSiteLaxMode,
	})
	return g.mac(value), nil
}

// verify reports whether a form POST carries the token of its cookie.
func (g csrfGuard) verify(r *http.Request) bool {
	c, err := r.Cookie(g.name)
	if err != nil || len(c.Value) < 32 {
		return false
	}
	field := r.PostFormValue(csrfField)
	return field != "" && hmac.Equal([]byte(field), []byte(g.mac(c.Value)))
}

// mac is the form field that goes with cookie value v.
func (g csrfGuard) mac(v string) string {
	m := hmac.New(sha256.New, g.key)
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
