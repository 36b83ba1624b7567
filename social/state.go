package social

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gorilla/securecookie"
)

// stateCookie names the cookie that binds a started social login to the browser.
const stateCookie = "gatehouse-social"

// stateCookiePath limits the cookie to the social routes: its Path is the mount path
// followed by this.
const stateCookiePath = "/api/auth/"

// HKDF info strings of the state cookie's keys.
const (
	stateHashKeyInfo  = "gatehouse social login state v1 hmac"
	stateBlockKeyInfo = "gatehouse social login state v1 aes"
)

// randomBytes is the entropy of a state, a nonce and a PKCE verifier: 256 bits.
const randomBytes = 32

// loginState is what the state cookie carries from login to callback.
type loginState struct {
	// State is the random value sent as `state`; the callback must bring it back.
	State string `json:"s"`
	// Provider is the login method the login began with; another provider's callback
	// refuses the cookie.
	Provider string `json:"p"`
	// Request is the paused authorization request's token, or empty.
	Request string `json:"r,omitempty"`
	// ReturnTo is the checked return URL, or empty.
	ReturnTo string `json:"t,omitempty"`
	// Nonce goes to OpenID Connect providers and must come back in their ID token.
	Nonce string `json:"n"`
	// Verifier is the PKCE code_verifier; the authorization request carries its S256.
	Verifier string `json:"v"`
}

// stateCodec authenticates (HMAC-SHA-256), encrypts (AES-256) and time-limits the cookie.
type stateCodec struct {
	codec  *securecookie.SecureCookie
	secure bool
	// path is the cookie's Path: the social routes under the mount path.
	path string
}

func newStateCodec(secret []byte, secure bool, path string) (stateCodec, error) {
	hashKey, err := hkdf.Key(sha256.New, secret, nil, stateHashKeyInfo, 32)
	if err != nil {
		return stateCodec{}, fmt.Errorf("derive the state cookie key: %w", err)
	}
	blockKey, err := hkdf.Key(sha256.New, secret, nil, stateBlockKeyInfo, 32)
	if err != nil {
		return stateCodec{}, fmt.Errorf("derive the state cookie key: %w", err)
	}
	c := securecookie.New(hashKey, blockKey).
		SetSerializer(securecookie.JSONEncoder{}).
		MaxAge(int(stateLifespan / time.Second))
	return stateCodec{codec: c, secure: secure, path: path}, nil
}

// newLoginState draws a fresh state, nonce and verifier from random.
func newLoginState(random io.Reader, provider, request, returnTo string) (*loginState, error) {
	st := &loginState{Provider: provider, Request: request, ReturnTo: returnTo}
	for _, dst := range []*string{&st.State, &st.Nonce, &st.Verifier} {
		b := make([]byte, randomBytes)
		if _, err := io.ReadFull(random, b); err != nil {
			return nil, fmt.Errorf("social: read randomness: %w", err)
		}
		*dst = base64.RawURLEncoding.EncodeToString(b)
	}
	return st, nil
}

// set writes st as the cookie.
func (c stateCodec) set(w http.ResponseWriter, st *loginState) error {
	value, err := c.codec.Encode(stateCookie, st)
	if err != nil {
		return fmt.Errorf("social: encode the state cookie: %w", err)
	}
	http.SetCookie(w, c.cookie(value, int(stateLifespan/time.Second)))
	return nil
}

// read returns the state of r's cookie, or false when there is none or it does not verify,
// decrypt or has expired.
func (c stateCodec) read(r *http.Request) (*loginState, bool) {
	ck, err := r.Cookie(stateCookie)
	if err != nil || ck.Value == "" {
		return nil, false
	}
	var st loginState
	if err := c.codec.Decode(stateCookie, ck.Value, &st); err != nil || st.State == "" {
		return nil, false
	}
	return &st, true
}

// clear makes the browser drop the cookie.
func (c stateCodec) clear(w http.ResponseWriter) {
	http.SetCookie(w, c.cookie("", -1))
}

func (c stateCodec) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: stateCookie, Value: value, Path: c.path, MaxAge: maxAge,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode,
	}
}
