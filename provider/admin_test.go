package provider_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/permissions"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func ptr[T any](v T) *T { return &v }

// TestUpdateClient: each setting changes alone, the others stay; the result is validated
// as CreateClient validates, with the same errors; an unknown id is ErrNotFound.
func TestUpdateClient(t *testing.T) {
	base := provider.ClientSpec{
		Name: "Before", RedirectURIs: []string{rpRedirectURI}, PostLogoutRedirectURIs: []string{rpLogoutURI},
		Scopes: []string{"openid", "email"}, GrantTypes: []string{"authorization_code", "refresh_token"},
		FirstParty: true, IDTokenAlg: provider.AlgES256,
	}
	cases := []struct {
		name string
		up   provider.ClientUpdate
		want func(c *provider.ClientInfo) // the change it makes to the client as created
	}{
		{"name", provider.ClientUpdate{Name: ptr("After")}, func(c *provider.ClientInfo) { c.Name = "After" }},
		{"redirect URIs", provider.ClientUpdate{RedirectURIs: &[]string{rpOtherRedirectURI, "myapp:/cb"}},
			func(c *provider.ClientInfo) { c.RedirectURIs = []string{rpOtherRedirectURI, "myapp:/cb"} }},
		{"post-logout redirect URIs cleared", provider.ClientUpdate{PostLogoutRedirectURIs: &[]string{}},
			func(c *provider.ClientInfo) { c.PostLogoutRedirectURIs = []string{} }},
		{"scopes", provider.ClientUpdate{Scopes: &[]string{"openid", "profile"}},
			func(c *provider.ClientInfo) { c.Scopes = []string{"openid", "profile"} }},
		{"empty scopes mean the default", provider.ClientUpdate{Scopes: &[]string{}},
			func(c *provider.ClientInfo) { c.Scopes = []string{"openid", "profile", "email", "offline_access"} }},
		{"grant types", provider.ClientUpdate{GrantTypes: &[]string{"client_credentials"}},
			func(c *provider.ClientInfo) { c.GrantTypes = []string{"client_credentials"} }},
		{"audience", provider.ClientUpdate{Audience: &[]string{"https://api.example", "orders-api"}},
			func(c *provider.ClientInfo) { c.Audience = []string{"https://api.example", "orders-api"} }},
		{"first party", provider.ClientUpdate{FirstParty: ptr(false)}, func(c *provider.ClientInfo) { c.FirstParty = false }},
		{"resource server", provider.ClientUpdate{ResourceServer: ptr(true)}, func(c *provider.ClientInfo) { c.ResourceServer = true }},
		{"ID token algorithm", provider.ClientUpdate{IDTokenAlg: ptr(provider.AlgRS256)}, func(c *provider.ClientInfo) { c.IDTokenAlg = provider.AlgRS256 }},
		{"nothing", provider.ClientUpdate{}, func(*provider.ClientInfo) {}},
	}
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		ctx := context.Background()
		for i, c := range cases {
			spec := base
			spec.ID = "client-" + string(rune('a'+i))
			e.client(t, spec)
			created, err := e.p.ClientByID(ctx, spec.ID) // as stored: times at the database's precision
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.p.UpdateClient(ctx, spec.ID, c.up)
			if err != nil {
				t.Errorf("%s: UpdateClient: %v", c.name, err)
				continue
			}
			want := created
			c.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: UpdateClient returned\n%+v\nwant\n%+v", c.name, got, want)
			}
			if stored, err := e.p.ClientByID(ctx, spec.ID); err != nil || !reflect.DeepEqual(stored, want) {
				t.Errorf("%s: ClientByID after the update: %+v, %v; want %+v", c.name, stored, err, want)
			}
		}

		// A refused update gives CreateClient's error for the same settings and changes nothing.
		refused := []struct {
			name   string
			create provider.ClientSpec
			up     provider.ClientUpdate
			public bool
		}{
			{"relative redirect URI", provider.ClientSpec{RedirectURIs: []string{"/callback"}},
				provider.ClientUpdate{RedirectURIs: &[]string{"/callback"}}, false},
			{"redirect URI with a fragment", provider.ClientSpec{RedirectURIs: []string{rpRedirectURI + "#x"}},
				provider.ClientUpdate{RedirectURIs: &[]string{rpRedirectURI + "#x"}}, false},
			{"no redirect URI for authorization_code", provider.ClientSpec{RedirectURIs: []string{}},
				provider.ClientUpdate{RedirectURIs: &[]string{}}, false},
			{"unknown grant type", provider.ClientSpec{RedirectURIs: []string{rpRedirectURI}, GrantTypes: []string{"password"}},
				provider.ClientUpdate{GrantTypes: &[]string{"password"}}, false},
			{"bad ID token algorithm", provider.ClientSpec{RedirectURIs: []string{rpRedirectURI}, IDTokenAlg: "HS256"},
				provider.ClientUpdate{IDTokenAlg: ptr("HS256")}, false},
			{"audience with a space", provider.ClientSpec{RedirectURIs: []string{rpRedirectURI}, Audience: []string{"orders api"}},
				provider.ClientUpdate{Audience: &[]string{"orders api"}}, false},
			{"empty audience", provider.ClientSpec{RedirectURIs: []string{rpRedirectURI}, Audience: []string{""}},
				provider.ClientUpdate{Audience: &[]string{""}}, false},
			{"public resource server", provider.ClientSpec{RedirectURIs: []string{rpRedirectURI}, Public: true, ResourceServer: true},
				provider.ClientUpdate{ResourceServer: ptr(true)}, true},
		}
		for i, r := range refused {
			_, createErr := e.p.CreateClient(ctx, r.create)
			if createErr == nil {
				t.Fatalf("%s: CreateClient succeeded, want it refused", r.name)
			}
			id := "refused-" + string(rune('a'+i))
			e.client(t, provider.ClientSpec{ID: id, Public: r.public})
			before, err := e.p.ClientByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.p.UpdateClient(ctx, id, r.up)
			if err == nil || err.Error() != createErr.Error() {
				t.Errorf("%s: UpdateClient error %v, want CreateClient's %v", r.name, err, createErr)
			}
			if after, _ := e.p.ClientByID(ctx, id); !reflect.DeepEqual(after, before) {
				t.Errorf("%s: client after a refused update %+v, want %+v", r.name, after, before)
			}
		}

		_, err := e.p.UpdateClient(ctx, "nope", provider.ClientUpdate{Name: ptr("x")})
		if !errors.Is(err, provider.ErrNotFound) || !errors.Is(err, provider.ErrClientNotFound) {
			t.Errorf("UpdateClient of an unknown client: error %v, want ErrNotFound and ErrClientNotFound", err)
		}
	})
}

// TestUpdateClientRemovedRedirectURIRevokesCodes: a code issued for a redirect URI the
// update removes no longer redeems, though its token request repeats that URI as the
// protocol asks; a code for a URI that stays still does.
func TestUpdateClientRemovedRedirectURIRevokesCodes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		e.user(t, "alice@example.com", "Alice")
		client := e.client(t, provider.ClientSpec{
			ID: "rp", FirstParty: true, RedirectURIs: []string{rpRedirectURI, rpOtherRedirectURI},
		})
		rp := e.relyingParty(t, client)
		br := e.browser(t)
		codeFor := func(redirectURI string) (*authRequest, string) {
			t.Helper()
			ar := rp.start()
			ar.set("redirect_uri", redirectURI)
			p := br.get(t, ar.String())
			if p.status == http.StatusOK && p.url.Path == "/login" {
				p = br.login(t, p, "alice@example.com")
			}
			return ar, wantCode(t, e, ar, callback(t, p, redirectURI))
		}
		removedAR, removedCode := codeFor(rpRedirectURI)
		keptAR, keptCode := codeFor(rpOtherRedirectURI)

		if _, err := e.p.UpdateClient(context.Background(), "rp", provider.ClientUpdate{
			RedirectURIs: &[]string{rpOtherRedirectURI},
		}); err != nil {
			t.Fatalf("UpdateClient: %v", err)
		}
		redeem := func(ar *authRequest, code, redirectURI string) jsonResponse {
			return e.token(t, client, url.Values{
				"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {redirectURI}, "code_verifier": {ar.verifier},
			})
		}
		wantOAuthError(t, redeem(removedAR, removedCode, rpRedirectURI), http.StatusBadRequest, "invalid_grant")
		if r := redeem(keptAR, keptCode, rpOtherRedirectURI); r.status != http.StatusOK {
			t.Errorf("code for the kept redirect URI: got %s, want 200", r)
		}
	})
}

// TestRotateClientSecret: the new secret works at the token endpoint at once and the old one
// is refused at once; a public client has no secret to rotate; an unknown id is ErrNotFound.
func TestRotateClientSecret(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		ctx := context.Background()
		old := e.client(t, provider.ClientSpec{ID: "service", GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}})
		grant := url.Values{"grant_type": {"client_credentials"}}
		if r := e.token(t, old, grant); r.status != http.StatusOK {
			t.Fatalf("token with the first secret: got %s, want 200", r)
		}

		secret, err := e.p.RotateClientSecret(ctx, "service")
		if err != nil {
			t.Fatalf("RotateClientSecret: %v", err)
		}
		if len(secret) < 43 || secret == old.ClientSecret { // 256 bits, base64url
			t.Fatalf("new secret %q: want 256 fresh random bits", secret)
		}
		wantOAuthError(t, e.token(t, old, grant), http.StatusUnauthorized, "invalid_client")
		rotated := old
		rotated.ClientSecret = secret
		if r := e.token(t, rotated, grant); r.status != http.StatusOK {
			t.Errorf("token with the new secret: got %s, want 200", r)
		}

		e.client(t, provider.ClientSpec{ID: "spa", Public: true})
		if _, err := e.p.RotateClientSecret(ctx, "spa"); !errors.Is(err, provider.ErrPublicClient) {
			t.Errorf("RotateClientSecret of a public client: error %v, want ErrPublicClient", err)
		}
		if _, err := e.p.RotateClientSecret(ctx, "nope"); !errors.Is(err, provider.ErrNotFound) || !errors.Is(err, provider.ErrClientNotFound) {
			t.Errorf("RotateClientSecret of an unknown client: error %v, want ErrNotFound and ErrClientNotFound", err)
		}
	})
}

// TestUserByEmail finds a user by the key of its email: case and the forms of an IDNA
// domain do not matter; a look-alike or unknown address is ErrNotFound.
func TestUserByEmail(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		anna := e.user(t, "Anna@Bücher.example", "Anna")
		for _, c := range []struct {
			email string
			found bool
		}{
			{"Anna@Bücher.example", true},
			{"anna@bücher.example", true},
			{"ANNA@BÜCHER.EXAMPLE", true},
			{"anna@xn--bcher-kva.example", true},
			{"anna@bucher.example", false},
			{"bob@bücher.example", false},
			{"not an address", false},
		} {
			u, err := e.p.UserByEmail(context.Background(), c.email)
			switch {
			case c.found && (err != nil || u.ID != anna.ID):
				t.Errorf("UserByEmail(%q): %+v, %v; want %s", c.email, u, err, anna.ID)
			case !c.found && (!errors.Is(err, provider.ErrNotFound) || !errors.Is(err, provider.ErrUserNotFound)):
				t.Errorf("UserByEmail(%q): %+v, %v; want ErrNotFound and ErrUserNotFound", c.email, u, err)
			}
		}
	})
}

// TestCreateUserNameDefault: without a name, a user is named after its email's local part.
func TestCreateUserNameDefault(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		u, err := e.p.CreateUser(context.Background(), provider.UserSpec{Email: " Jo.Doe@Example.com ", Password: testPassword})
		if err != nil || u.Name != "Jo.Doe" {
			t.Errorf("CreateUser without a name: %+v, %v; want the name Jo.Doe", u, err)
		}
	})
}

// TestDisableUser: the account is disabled (its revocations: TestCredentialChangesRevokeGrants)
// and can no longer log in; UpdateUser enables it again.
func TestDisableUser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		ctx := context.Background()
		u := e.user(t, "dora@example.com", "Dora")
		login := func() int {
			req, err := http.NewRequest(http.MethodPost, e.issuer+"/api/public/login",
				strings.NewReader(`{"email":"dora@example.com","password":"`+testPassword+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			return e.send(t, req).status
		}
		got, err := e.p.DisableUser(ctx, u.ID)
		if err != nil || got.Status != publicauth.StatusDisabled {
			t.Fatalf("DisableUser: %+v, %v; want a disabled user", got, err)
		}
		if status := login(); status == http.StatusOK {
			t.Errorf("login of a disabled user: got %d, want it refused", status)
		}
		if got, err := e.p.UpdateUser(ctx, u.Email, provider.UserUpdate{Disabled: ptr(false)}); err != nil || got.Status != publicauth.StatusActive {
			t.Errorf("UpdateUser Disabled false: %+v, %v; want an active user", got, err)
		}
		if status := login(); status != http.StatusOK {
			t.Errorf("login after enabling again: got %d, want 200", status)
		}
	})
}

// TestDeleteUser: a deleted user's tokens, session, consent and permission record are gone
// at once (the token-side checks with a bystander: TestCredentialChangesRevokeGrants), the
// user is not found any more, and the address can register again.
func TestDeleteUser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newRevokeEnv(t, b)
		ctx := context.Background()
		const email = "gone@example.com"
		userID, holder := e.passwordUser(t, email)
		_, tok := e.rp.signIn(t, e.env, holder, email)
		now := time.Now().UTC()
		if err := e.store.SavePermission(ctx, &permissions.Record{
			UserID: userID, ClientID: e.third.ClientID, Status: permissions.StatusApproved, Role: permissions.RoleUser,
			HasAccess: true, CreatedAt: now, UpdatedAt: now,
		}, true); err != nil {
			t.Fatal(err)
		}

		if err := e.p.DeleteUser(ctx, email); err != nil {
			t.Fatalf("DeleteUser: %v", err)
		}
		wantOAuthError(t, e.refresh(t, e.third, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
		wantRefused(t, e.env, e.third, tok.AccessToken)
		wantNoSession(t, e.env, holder)
		if _, err := e.store.Permission(ctx, userID, e.third.ClientID); !errors.Is(err, permissions.ErrNoRecord) {
			t.Errorf("permission record after DeleteUser: error %v, want ErrNoRecord", err)
		}
		if _, err := e.p.UserByEmail(ctx, email); !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("UserByEmail after DeleteUser: error %v, want ErrNotFound", err)
		}
		if err := e.p.DeleteUser(ctx, userID); !errors.Is(err, provider.ErrNotFound) || !errors.Is(err, provider.ErrUserNotFound) {
			t.Errorf("DeleteUser again: error %v, want ErrNotFound and ErrUserNotFound", err)
		}
		e.wantJSON(t, e.browser(t), http.MethodPost, "/api/public/register",
			`{"email": "`+email+`", "password": "`+testPassword+`", "name": "Again"}`, http.StatusCreated)
	})
}

// TestAdminSentinelErrors: every administration method's refusal matches its documented
// sentinel with errors.Is.
func TestAdminSentinelErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		ctx := context.Background()
		e.user(t, "taken@example.com", "Taken")
		e.client(t, provider.ClientSpec{ID: "taken"})
		for _, c := range []struct {
			name string
			call func() error
			want []error
		}{
			{"CreateUser with a taken email", func() error {
				_, err := e.p.CreateUser(ctx, provider.UserSpec{Email: "TAKEN@example.com", Password: testPassword})
				return err
			}, []error{provider.ErrEmailTaken, publicauth.ErrEmailTaken}},
			{"CreateClient with a taken id", func() error {
				_, err := e.p.CreateClient(ctx, provider.ClientSpec{ID: "taken", RedirectURIs: []string{rpRedirectURI}})
				return err
			}, []error{provider.ErrClientExists}},
			{"ClientByID", func() error { _, err := e.p.ClientByID(ctx, "nope"); return err },
				[]error{provider.ErrNotFound, provider.ErrClientNotFound}},
			{"DeleteClient", func() error { return e.p.DeleteClient(ctx, "nope") },
				[]error{provider.ErrNotFound, provider.ErrClientNotFound}},
			{"UpdateClient", func() error { _, err := e.p.UpdateClient(ctx, "nope", provider.ClientUpdate{}); return err },
				[]error{provider.ErrNotFound, provider.ErrClientNotFound}},
			{"RotateClientSecret", func() error { _, err := e.p.RotateClientSecret(ctx, "nope"); return err },
				[]error{provider.ErrNotFound, provider.ErrClientNotFound}},
			{"UserByEmail", func() error { _, err := e.p.UserByEmail(ctx, "nobody@example.com"); return err },
				[]error{provider.ErrNotFound, provider.ErrUserNotFound}},
			{"UpdateUser", func() error {
				_, err := e.p.UpdateUser(ctx, "nobody@example.com", provider.UserUpdate{RequirePIN: ptr(true)})
				return err
			}, []error{provider.ErrNotFound, provider.ErrUserNotFound}},
			{"SetUserRequirePIN", func() error { _, err := e.p.SetUserRequirePIN(ctx, "nobody", true); return err },
				[]error{provider.ErrNotFound, provider.ErrUserNotFound}},
			{"DisableUser", func() error { _, err := e.p.DisableUser(ctx, "nobody"); return err },
				[]error{provider.ErrNotFound, provider.ErrUserNotFound}},
			{"DeleteUser", func() error { return e.p.DeleteUser(ctx, "nobody@example.com") },
				[]error{provider.ErrNotFound, provider.ErrUserNotFound}},
		} {
			err := c.call()
			for _, want := range c.want {
				if !errors.Is(err, want) {
					t.Errorf("%s: error %v, want it to match %v", c.name, err, want)
				}
			}
		}
	})
}
