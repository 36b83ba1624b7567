package social_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/social"
)

// providerName is the login method of the env's upstream of kind.
func providerName(kind string) string {
	if kind == social.KindOIDC {
		return "oidc:corp"
	}
	return kind
}

// TestFirstSignInCreatesAndSecondSignsIn: with every kind of provider, the first sign-in
// of an identity with a verified email creates a social-only account (no password, email
// verified, the provider its login method) and hands it to the host; the next sign-in of
// the same identity lands on the same account and creates nothing.
func TestFirstSignInCreatesAndSecondSignsIn(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{social.KindGoogle, social.KindFacebook, social.KindOIDC} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind)
			profile := idpProfile{Sub: "sub-1", Email: "Carol@Example.com", Name: "Carol", Verified: true}
			p := e.signIn(t, newBrowser(t), kind, "", profile)
			if p.status != http.StatusOK || p.body != "completed" {
				t.Fatalf("first sign-in: got %d %q, want the host to complete the login", p.status, p.body)
			}
			first, _ := e.host.last()
			u := first.user
			if first.method != providerName(kind) || first.token != "" || first.returnTo != "" ||
				u.Email != profile.Email || !u.EmailVerified || u.PasswordHash != "" || u.Name != "Carol" ||
				u.Status != publicauth.StatusActive || !slices.Equal(u.SocialProviders, []string{providerName(kind)}) {
				t.Fatalf("first sign-in: got %+v, user %+v", first, u)
			}
			if n := len(e.store.snapshot().users); n != 1 {
				t.Fatalf("after the first sign-in: %d users, want 1", n)
			}

			// Same identity, its email since changed at the provider: still the same account.
			p = e.signIn(t, newBrowser(t), kind, "", idpProfile{Sub: "sub-1", Email: "carol.new@example.com", Name: "Carol", Verified: true})
			second, _ := e.host.last()
			if p.status != http.StatusOK || e.host.count() != 2 || second.user.ID != u.ID {
				t.Fatalf("second sign-in: got %d, user %+v; want the account of the first", p.status, second.user)
			}
			if n := len(e.store.snapshot().users); n != 1 {
				t.Errorf("after the second sign-in: %d users, want 1", n)
			}
		})
	}
}

// TestAccountLinking covers the rules that decide which account an unknown identity joins
// (publicauth.Identities.Login, as the social login applies them): a verified upstream
// email links to the account of exactly that publicauth.EmailKey when its email is
// verified or the browser is signed in to it; an unverified upstream email never links nor
// creates; a disabled account is refused; a PIN-gated user is handed to the host, which
// owns the PIN step (social starts no session itself).
func TestAccountLinking(t *testing.T) {
	t.Parallel()
	const aliceEmail = "alice@example.com"
	type want struct {
		// completedAs is the user id the host is asked to sign in ("" for none, "new" for a
		// new account); loginCode or errorStatus is the refusal otherwise.
		completedAs string
		loginCode   string
		errorStatus int
		// linked: alice's account has the provider afterwards.
		linked bool
		users  int
		// requirePIN: the user handed to the host has its PIN gate on.
		requirePIN bool
	}
	cases := []struct {
		name     string
		alice    func(u *publicauth.User) // alice's account as stored; nil: none
		signedIn string                   // whose public session the browser has
		// linkedBefore: the identity is already linked to alice.
		linkedBefore bool
		profile      idpProfile
		want         want
	}{
		{"verified email, verified account: linked", func(*publicauth.User) {}, "", false,
			idpProfile{Sub: "s", Email: aliceEmail, Verified: true}, want{completedAs: "alice", linked: true, users: 1}},
		{"verified email in other ASCII case: same key, linked", func(*publicauth.User) {}, "", false,
			idpProfile{Sub: "s", Email: "ALICE@EXAMPLE.COM", Verified: true}, want{completedAs: "alice", linked: true, users: 1}},
		{"Cyrillic look-alike email: another key, a new account", func(*publicauth.User) {}, "", false,
			idpProfile{Sub: "s", Email: "\u0430lice@example.com", Verified: true}, want{completedAs: "new", users: 2}},
		{"unverified upstream email, verified account: never linked", func(*publicauth.User) {}, "", false,
			idpProfile{Sub: "s", Email: aliceEmail}, want{loginCode: "email_unverified", users: 1}},
		{"unverified upstream email, no account: nothing created", nil, "", false,
			idpProfile{Sub: "s", Email: aliceEmail}, want{loginCode: "email_unverified"}},
		{"no upstream email: refused", nil, "", false,
			idpProfile{Sub: "s", Verified: true}, want{loginCode: "email_unverified"}},
		{"unverified account: link refused", func(u *publicauth.User) { u.EmailVerified = false }, "", false,
			idpProfile{Sub: "s", Email: aliceEmail, Verified: true}, want{errorStatus: http.StatusForbidden, users: 1}},
		{"unverified account, signed in to it: linked", func(u *publicauth.User) { u.EmailVerified = false }, "alice", false,
			idpProfile{Sub: "s", Email: aliceEmail, Verified: true}, want{completedAs: "alice", linked: true, users: 1}},
		{"unverified account, signed in to another: link refused", func(u *publicauth.User) { u.EmailVerified = false }, "bob", false,
			idpProfile{Sub: "s", Email: aliceEmail, Verified: true}, want{errorStatus: http.StatusForbidden, users: 2}},
		{"already linked, other email upstream: signs in", func(*publicauth.User) {}, "", true,
			idpProfile{Sub: "s", Email: "someone.else@example.com", Verified: true}, want{completedAs: "alice", linked: true, users: 1}},
		{"already linked, disabled account: refused", func(u *publicauth.User) { u.Status = publicauth.StatusDisabled }, "", true,
			idpProfile{Sub: "s", Email: aliceEmail, Verified: true}, want{errorStatus: http.StatusForbidden, linked: true, users: 1}},
		{"already linked, PIN-gated account: handed to the host with its PIN gate", func(u *publicauth.User) { u.RequirePIN = true }, "", true,
			idpProfile{Sub: "s", Email: aliceEmail, Verified: true}, want{completedAs: "alice", linked: true, users: 1, requirePIN: true}},
		{"PIN-gated account linked by email: handed to the host with its PIN gate", func(u *publicauth.User) { u.RequirePIN = true }, "", false,
			idpProfile{Sub: "s", Email: aliceEmail, Verified: true}, want{completedAs: "alice", linked: true, users: 1, requirePIN: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, social.KindOIDC)
			b := newBrowser(t)
			var alice *publicauth.User
			if c.alice != nil {
				alice = e.addUser(t, "alice", aliceEmail, c.alice)
			}
			if c.linkedBefore {
				if _, err := e.store.LinkIdentity(t.Context(), "alice", publicauth.Identity{Provider: "oidc:corp", Subject: "s"}); err != nil {
					t.Fatal(err)
				}
			}
			switch c.signedIn {
			case "alice":
				e.signInWithPassword(t, b, alice)
			case "bob":
				e.signInWithPassword(t, b, e.addUser(t, "bob", "bob@example.com", nil))
			}
			sessions := len(e.store.snapshot().sessions)
			p := e.signIn(t, b, social.KindOIDC, "", c.profile)
			got, completed := e.host.last()
			switch {
			case c.want.loginCode != "":
				wantLoginPage(t, p, c.want.loginCode, "")
			case c.want.errorStatus != 0:
				wantErrorPage(t, p, c.want.errorStatus)
			case !completed:
				t.Fatalf("got %d %q (location %q), want the host to complete the login", p.status, p.body, p.location)
			case c.want.completedAs == "new" && (got.user.ID == "alice" || got.user.Email != c.profile.Email):
				t.Errorf("got user %+v, want a new account of %s", got.user, c.profile.Email)
			case c.want.completedAs == "alice" && got.user.ID != "alice":
				t.Errorf("got user %+v, want alice", got.user)
			}
			if completed != (c.want.completedAs != "") {
				t.Errorf("host completed a login: %v, want %v", completed, c.want.completedAs != "")
			}
			if completed && got.user.RequirePIN != c.want.requirePIN {
				t.Errorf("RequirePIN of the user handed to the host: %v, want %v", got.user.RequirePIN, c.want.requirePIN)
			}
			st := e.store.snapshot()
			if len(st.users) != c.want.users {
				t.Errorf("%d users, want %d", len(st.users), c.want.users)
			}
			if alice != nil {
				_, linked := st.identities[[2]string{"oidc:corp", "s"}]
				linked = linked && st.identities[[2]string{"oidc:corp", "s"}] == "alice"
				if linked != c.want.linked || slices.Contains(st.users["alice"].SocialProviders, "oidc:corp") != c.want.linked {
					t.Errorf("identity linked to alice: %v (providers %v), want %v", linked, st.users["alice"].SocialProviders, c.want.linked)
				}
			}
			if len(st.sessions) != sessions {
				t.Errorf("the social login started a session itself (%d sessions, had %d); the host does that", len(st.sessions), sessions)
			}
		})
	}
}

// TestFacebookWithoutEmailIsRefused: Graph leaves email out when the account has no
// confirmed address; such a profile neither creates nor joins an account.
func TestFacebookWithoutEmailIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.KindFacebook)
	wantLoginPage(t, e.signIn(t, newBrowser(t), social.KindFacebook, "", idpProfile{Sub: "fb-1", Name: "No Mail"}), "email_unverified", "")
	if n := len(e.store.snapshot().users); n != 0 || e.host.count() != 0 {
		t.Errorf("got %d users and %d completed logins, want none", n, e.host.count())
	}
}
