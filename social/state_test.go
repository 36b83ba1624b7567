package social_test

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/social"
)

const stateCookie = "gatehouse-social"

// stateCookieOf is the state cookie b holds for the social routes.
func (e *env) stateCookieOf(t *testing.T, b *browser) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(e.url + "/api/auth/")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == stateCookie {
			return c
		}
	}
	return nil
}

// setStateCookie replaces the state cookie b sends.
func (e *env) setStateCookie(t *testing.T, b *browser, value string) {
	t.Helper()
	u, _ := url.Parse(e.url + "/api/auth/")
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: stateCookie, Value: value, Path: "/api/auth/"}})
}

// redate re-issues a securecookie value with another timestamp, authenticated with the
// state cookie's HMAC key (HKDF-SHA-256 of the system secret, as package social derives
// it): the same login state, as if it had been issued at `at`. securecookie's value is
// base64url("date|payload|mac"), mac = HMAC-SHA-256("name|date|payload").
func redate(t *testing.T, value string, at time.Time) string {
	t.Helper()
	raw, err := base64.URLEncoding.DecodeString(value)
	if err != nil {
		t.Fatal(err)
	}
	parts := bytes.SplitN(raw, []byte("|"), 3)
	if len(parts) != 3 {
		t.Fatalf("state cookie %q is not date|payload|mac", raw)
	}
	key, err := hkdf.Key(sha256.New, testSecret, nil, "gatehouse social login state v1 hmac", 32)
	if err != nil {
		t.Fatal(err)
	}
	signed := stateCookie + "|" + strconv.FormatInt(at.Unix(), 10) + "|" + string(parts[1])
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signed))
	out := strconv.FormatInt(at.Unix(), 10) + "|" + string(parts[1]) + "|" + string(m.Sum(nil))
	return base64.URLEncoding.EncodeToString([]byte(out))
}

// TestStateBindsTheCallback: a callback goes on only with the state cookie its login set,
// unaltered, unexpired, of the same provider, with the same state, once. Anything else is
// refused (400) before the code is exchanged, and nothing is signed in.
func TestStateBindsTheCallback(t *testing.T) {
	t.Parallel()
	profile := idpProfile{Sub: "s", Email: "dana@example.com", Verified: true}
	cases := []struct {
		name string
		// tamper changes the callback URL or the cookie between authorization and callback.
		tamper func(t *testing.T, e *env, b *browser, callback *url.URL)
		// refused: 400 and no login; else the login completes.
		refused bool
	}{
		{"untouched", func(*testing.T, *env, *browser, *url.URL) {}, false},
		{"cookie re-dated to now (the test's own re-signing works)", func(t *testing.T, e *env, b *browser, _ *url.URL) {
			e.setStateCookie(t, b, redate(t, e.stateCookieOf(t, b).Value, time.Now()))
		}, false},
		{"expired cookie (issued 11 minutes ago)", func(t *testing.T, e *env, b *browser, _ *url.URL) {
			e.setStateCookie(t, b, redate(t, e.stateCookieOf(t, b).Value, time.Now().Add(-11*time.Minute)))
		}, true},
		{"no cookie", func(t *testing.T, e *env, b *browser, _ *url.URL) {
			e.setStateCookie(t, b, "")
		}, true},
		{"cookie with one byte changed", func(t *testing.T, e *env, b *browser, _ *url.URL) {
			v := []byte(e.stateCookieOf(t, b).Value)
			v[len(v)/2] ^= 1
			e.setStateCookie(t, b, string(v))
		}, true},
		{"cookie of another browser's login", func(t *testing.T, e *env, b *browser, _ *url.URL) {
			other := newBrowser(t)
			e.login(t, other, "/api/auth/oidc/corp/login")
			e.setStateCookie(t, b, e.stateCookieOf(t, other).Value)
		}, true},
		{"state changed", func(t *testing.T, e *env, b *browser, cb *url.URL) {
			q := cb.Query()
			q.Set("state", q.Get("state")+"x")
			cb.RawQuery = q.Encode()
		}, true},
		{"state missing", func(t *testing.T, e *env, b *browser, cb *url.URL) {
			q := cb.Query()
			q.Del("state")
			cb.RawQuery = q.Encode()
		}, true},
		{"callback of another provider", func(t *testing.T, e *env, b *browser, cb *url.URL) {
			cb.Path = "/api/auth/google/callback"
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, social.KindOIDC, social.KindGoogle)
			e.idps[social.KindOIDC].set(func(f *fakeIdP) { f.next = profile })
			b := newBrowser(t)
			at := e.login(t, b, "/api/auth/oidc/corp/login")
			if ck := e.stateCookieOf(t, b); ck == nil || ck.Value == "" {
				t.Fatal("login set no state cookie")
			}
			cb, err := url.Parse(authorize(t, b, at))
			if err != nil {
				t.Fatal(err)
			}
			c.tamper(t, e, b, cb)
			p := b.get(t, cb.String())
			if !c.refused {
				if p.status != http.StatusOK || e.host.count() != 1 {
					t.Fatalf("got %d %q, want the login completed", p.status, p.body)
				}
				// The cookie is spent: the same callback again is refused.
				wantErrorPage(t, b.get(t, cb.String()), http.StatusBadRequest)
				if e.host.count() != 1 {
					t.Error("a replayed callback completed a second login")
				}
				return
			}
			wantErrorPage(t, p, http.StatusBadRequest)
			if e.host.count() != 0 || len(e.store.snapshot().users) != 0 {
				t.Errorf("a refused callback signed in (%d logins, %d users)", e.host.count(), len(e.store.snapshot().users))
			}
		})
	}
}

// TestStateCookie: the cookie a login sets is scoped to the social routes, HttpOnly, Lax,
// ten minutes long, and the callback clears it whatever its outcome.
func TestStateCookie(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.KindOIDC)
	b := newBrowser(t)
	p := b.get(t, e.url+"/api/auth/oidc/corp/login")
	set := p.header.Get("Set-Cookie")
	for _, want := range []string{stateCookie + "=", "Path=/api/auth/", "Max-Age=600", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %q", set, want)
		}
	}
	if p.header.Get("Cache-Control") != "no-store" {
		t.Errorf("login redirect Cache-Control: %q", p.header.Get("Cache-Control"))
	}
	// A denial still clears it.
	e.idps[social.KindOIDC].set(func(f *fakeIdP) { f.authError = "access_denied" })
	cb := authorize(t, b, mustParse(t, p.location))
	p = b.get(t, cb)
	if set := p.header.Get("Set-Cookie"); !strings.Contains(set, stateCookie+"=;") || !strings.Contains(set, "Max-Age=0") {
		t.Errorf("callback Set-Cookie %q, want the state cookie cleared", set)
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
