package publicauth

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/securecookie"
)

// Names of the session cookies of the SSO interface, one per session kind.
const (
	CookiePublic = "public-session"
	CookieAdmin  = "admin-session"
)

// cookieKeyInfo is the HKDF info prefix of the cookie signing keys; the cookie name follows.
const cookieKeyInfo = "gatehouse publicauth session cookie v1 "

// cookieCodec signs, verifies and writes one session cookie.
type cookieCodec struct {
	name string
	// path is the cookie's Path: the service's mount path plus "/", so the browser sends
	// the cookie to the service's routes only, not to the rest of an embedding site.
	path     string
	sameSite http.SameSite
	lifespan time.Duration
	codec    *securecookie.SecureCookie
}

// newCookieCodec returns the codec of the cookie of the given session kind. Its HMAC-SHA-256
// key is HKDF-SHA-256(secret, info = cookieKeyInfo + cookie name), so each cookie has its own
// key; securecookie also binds the cookie name into the MAC, so a `public-session` value is
// never accepted as an `admin-session`. path is the cookie's Path.
func newCookieCodec(secret []byte, kind string, lifespan time.Duration, path string) (cookieCodec, error) {
	c := cookieCodec{lifespan: lifespan, path: path}
	switch kind {
	case SessionPublic:
		c.name, c.sameSite = CookiePublic, http.SameSiteLaxMode
	case SessionAdmin:
		c.name, c.sameSite = CookieAdmin, http.SameSiteStrictMode
	default:
		return c, fmt.Errorf("unknown session kind %q", kind)
	}
	key, err := hkdf.Key(sha256.New, secret, nil, cookieKeyInfo+c.name, 32)
	if err != nil {
		return c, fmt.Errorf("derive %s key: %w", c.name, err)
	}
	c.codec = securecookie.New(key, nil).
		SetSerializer(securecookie.NopEncoder{}).
		MaxAge(int(lifespan / time.Second))
	return c, nil
}

// cookie returns the codec of the session kind, or an error for an unknown kind.
func (s *Service) cookie(kind string) (cookieCodec, error) {
	c, ok := s.cookies[kind]
	if !ok {
		return c, fmt.Errorf("publicauth: unknown session kind %q", kind)
	}
	return c, nil
}

// encode signs token into a cookie value bound to the cookie's name.
func (c cookieCodec) encode(token string) (string, error) {
	value, err := c.codec.Encode(c.name, []byte(token))
	if err != nil {
		return "", fmt.Errorf("sign %s cookie: %w", c.name, err)
	}
	return value, nil
}

// set writes the signed value as the cookie, living for the codec's lifespan.
func (c cookieCodec) set(w http.ResponseWriter, value string, secure bool) {
	http.SetCookie(w, c.httpCookie(value, int(c.lifespan/time.Second), secure))
}

// clear writes an expired, empty cookie so the browser drops it.
func (c cookieCodec) clear(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, c.httpCookie("", -1, secure))
}

// token returns the verified session token the request's cookie carries, or false when
// there is no cookie or its signature, name binding or timestamp does not verify.
func (c cookieCodec) token(r *http.Request) (string, bool) {
	ck, err := r.Cookie(c.name)
	if err != nil || ck.Value == "" {
		return "", false
	}
	var raw []byte
	if err := c.codec.Decode(c.name, ck.Value, &raw); err != nil || len(raw) == 0 {
		return "", false
	}
	return string(raw), true
}

func (c cookieCodec) httpCookie(value string, maxAge int, secure bool) *http.Cookie {
	return &http.Cookie{
		Name:     c.name,
		Value:    value,
		Path:     c.path,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   secure,
		SameSite: c.sameSite,
	}
}
