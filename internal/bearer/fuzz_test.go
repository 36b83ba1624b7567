package bearer

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzFromHeader feeds arbitrary Authorization header values (and access_token bodies) to
// the parser behind every endpoint that takes an access token. Properties: an accepted
// header names Bearer or DPoP in its canonical spelling and a non-empty, trimmed token; the
// credential re-encoded as "<Scheme> <token>" parses back to itself; the form body is used
// only when the header yields nothing.
func FuzzFromHeader(f *testing.F) {
	for _, seed := range []struct{ header, body string }{
		{"Bearer abc", ""},
		{"bearer  abc ", ""},
		{"DPoP eyJhbGciOi.x.y", ""},
		{"dPoP\tabc", ""},
		{"Basic dXNlcjpwYXNz", "access_token=xyz"},
		{"Bearer", "access_token=xyz"},
		{"Bearer ", ""},
		{" Bearer abc", ""},
		{"Bearer a b c", ""},
		{"", "access_token=%00"},
	} {
		f.Add(seed.header, seed.body)
	}
	f.Fuzz(func(t *testing.T, header, body string) {
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/api/oauth/userinfo", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header["Authorization"] = []string{header}
		c, ok := FromHeader(r)
		if !ok {
			if c != (Credential{}) {
				t.Fatalf("FromHeader(%q) refused but returned %+v", header, c)
			}
			got := FromRequest(r)
			form, _ := url.ParseQuery(body)
			if want := form.Get("access_token"); got.Token != want || (want != "" && got.Scheme != SchemeBearer) {
				t.Fatalf("FromRequest with header %q body %q = %+v, want the body's token %q", header, body, got, want)
			}
			return
		}
		if c.Scheme != SchemeBearer && c.Scheme != SchemeDPoP {
			t.Fatalf("FromHeader(%q) scheme %q", header, c.Scheme)
		}
		if c.Token == "" || c.Token != strings.TrimSpace(c.Token) {
			t.Fatalf("FromHeader(%q) token %q is empty or untrimmed", header, c.Token)
		}
		if !strings.HasSuffix(strings.TrimSpace(header), c.Token) {
			t.Fatalf("FromHeader(%q) token %q is not the header's tail", header, c.Token)
		}
		again := &http.Request{Header: http.Header{"Authorization": {c.Scheme + " " + c.Token}}}
		if c2, ok := FromHeader(again); !ok || c2 != c {
			t.Fatalf("re-encoded %q parses to %+v, %v; want %+v", c.Scheme+" "+c.Token, c2, ok, c)
		}
		if got := FromRequest(r); got != c {
			t.Fatalf("FromRequest = %+v, want the header's %+v", got, c)
		}
	})
}
