package provider

import (
	"crypto/subtle"
	"io"
	"net/http"
)

const (
	csrfCookie = "gatehouse-csrf"
	csrfField  = "csrf_token"
)

// csrfGuard protects the hosted forms with a double-submit token: a random value in an
// HttpOnly SameSite cookie that every form repeats in a hidden field. A cross-site page can
// neither read the cookie nor make the browser send it with a POST.
type csrfGuard struct {
	secure bool
	random io.Reader
}

// token returns the browser's CSRF token, setting the cookie when it has none.
func (g csrfGuard) token(w http.ResponseWriter, r *http.Request) (string, error) {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value, nil
	}
	token, err := randomToken(g.random)
	if err != nil {
		return "", err
	}
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: token, Path: "/", HttpOnly: true, Secure: g.secure,
		SameSite: http.SameSiteLaxMode,
	})
	return token, nil
}

// verify reports whether a form POST carries the token of its cookie.
func (g csrfGuard) verify(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	field := r.PostFormValue(csrfField)
	return field != "" && subtle.ConstantTimeCompare([]byte(field), []byte(c.Value)) == 1
}
