package publicauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// A service whose BaseURL has a path is mounted there: its session cookies are scoped to
// the path, its mailed links open under it, and a login may resume only a path under it.
// A path that leaves it, plainly or by a dot segment a browser resolves, would send the
// browser to the embedding site instead: an open redirect within the site, refused.
func TestMountedServiceStaysUnderItsPath(t *testing.T) {
	const base = "http://gatehouse.test/auth"
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{BaseURL: base + "/"})
		ctx := context.Background()
		u, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "ann@example.com", Password: "correct horse battery", Name: "Ann", Verified: true})
		if err != nil {
			t.Fatal(err)
		}

		res := e.postJSON(t, "/api/public/login", map[string]string{"email": u.Email, "password": "correct horse battery"})
		wantStatus(t, res, http.StatusOK)
		if c := res.cookie(publicauth.CookiePublic); c == nil || c.Path != "/auth/" {
			t.Errorf("session cookie %v, want Path=/auth/", c)
		}

		for _, tc := range []struct {
			resume string
			ok     bool
		}{
			{"/auth/api/oauth/authorize/resume?request=abc", true},
			{"/auth/signed-in", true},
			{"/signed-in", false},
			{"/login", false},
			{"/auth", false},
			{"/authx/signed-in", false},
			{"/auth/../login", false},
			{"/auth/%2e%2e/login", false},
			{`/auth/..\login`, false},
			{"//evil.example.net/auth/", false},
			{"https://evil.example.net/auth/", false},
		} {
			err := e.svc.RequestMagicLink(ctx, publicauth.MagicLinkRequest{Email: u.Email, Resume: tc.resume})
			var input *publicauth.InputError
			if tc.ok != (err == nil) || (!tc.ok && !errors.As(err, &input)) {
				t.Errorf("RequestMagicLink with Resume %q: got %v, want ok=%v (else an InputError)", tc.resume, err, tc.ok)
			}
			if tc.ok {
				link := smtptest.Link(t, e.smtp.WaitFor(t, u.Email))
				lu, err := url.Parse(link)
				if err != nil || !strings.HasPrefix(link, base+publicauth.PathMagicLogin+"?") {
					t.Fatalf("mailed link %q (%v), want one under %s", link, err, base)
				}
				_, dest, err := e.svc.ConsumeMagicLink(ctx, lu.Query().Get("token"))
				if err != nil || dest.Resume != tc.resume {
					t.Errorf("ConsumeMagicLink: got %+v, %v; want Resume %q", dest, err, tc.resume)
				}
			}
			_, err = e.svc.StartPINChallenge(ctx, u, publicauth.SessionPublic, publicauth.MethodPassword, publicauth.Destination{Resume: tc.resume})
			if tc.ok != (err == nil) {
				t.Errorf("StartPINChallenge with Resume %q: got %v, want ok=%v", tc.resume, err, tc.ok)
			}
			if tc.ok {
				e.smtp.WaitFor(t, u.Email) // the PIN
			}
		}
	})
}
