package provider_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestSocialLoginLookAlikeEmailTakesNoAccount is the account takeover of issue 9: an
// upstream identity whose verified email is a Unicode look-alike of an existing verified
// account's (U+0130 "İ", the Kelvin sign U+212A) must neither sign in as that account nor
// link to it, whichever account came first.
func TestSocialLoginLookAlikeEmailTakesNoAccount(t *testing.T) {
	cases := []struct {
		name, existing, upstream string
	}{
		{"look-alike upstream, victim's account", "victim@gmail.com", "victim@gmaİl.com"},
		{"victim's upstream, look-alike account", "prey@gmaİl.com", "prey@gmail.com"},
		{"Kelvin sign upstream, victim's account", "kim@example.com", "\u212Aim@example.com"},
		{"victim's upstream, Kelvin sign account", "\u212Aay@example.com", "kay@example.com"},
	}
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		g := newFakeUpstream(t, "google")
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{Google: g.config()}})
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}), "openid", "email")
		ctx := context.Background()
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				existing := e.user(t, c.existing, "Existing Owner")
				sub := "g-" + string(rune('a'+i))
				g.signIn(fakeProfile{Sub: sub, Email: c.upstream, Name: "Upstream", Verified: true})

				br := socialBrowser(t, e, g.srv.URL)
				ar := rp.start(oauth2.SetAuthURLParam("provider", "google"))
				tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI)))
				if tok.claims["sub"] == existing.ID {
					t.Fatalf("ID token: signed in as the account of %+q through an upstream identity of %+q", c.existing, c.upstream)
				}
				if tok.claims["email"] != c.upstream {
					t.Errorf("ID token email: got %v, want %+q", tok.claims["email"], c.upstream)
				}
				linked, err := e.store.UserByIdentity(ctx, "google", sub)
				if err != nil || linked.ID == existing.ID || linked.Email != c.upstream {
					t.Errorf("identity %s: got user %+v (err %v), want a new account of %+q", sub, linked, err, c.upstream)
				}
				wantLoginMethods(t, e, br, linked.ID, "google")
				kept, err := e.store.UserByID(ctx, existing.ID)
				if err != nil || len(kept.SocialProviders) != 0 || kept.Email != c.existing {
					t.Errorf("existing account: got %+v (err %v), want it unchanged, with no social login", kept, err)
				}
			})
		}
	})
}

// TestRegisterRefusesAddressWithoutKey: an address whose domain is no IDNA domain name is
// refused with a clear message, by the JSON API (400 in the spec's shape) and by the hosted
// registration page.
func TestRegisterRefusesAddressWithoutKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		const email = "ann@ex_ample.com"
		const message = "email must be a valid email address"

		req, err := http.NewRequest(http.MethodPost, e.issuer+"/api/public/register",
			strings.NewReader(`{"email":"`+email+`","password":"`+testPassword+`","name":"Ann"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		r := e.send(t, req)
		if r.status != http.StatusBadRequest || r.body["error"] != "Bad Request" || r.body["message"] != message {
			t.Errorf("POST /api/public/register: got %s, want 400 {error: Bad Request, message: %q}", r, message)
		}
		// The page says it as a sentence.
		p := registerForm(t, e, e.browser(t), email, "Ann")
		if page := "Email must be a valid email address."; p.status != http.StatusBadRequest || !strings.Contains(p.body, page) {
			t.Errorf("hosted registration: got %s, want 400 saying %q", p, page)
		}
		wantNoAccount(t, e, "google", "none", email)
	})
}
