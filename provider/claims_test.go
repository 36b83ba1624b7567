package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// claimsFixture is a provider with a user whose whole standard profile is set, and a
// first-party client that may ask for every scope.
type claimsFixture struct {
	e    *env
	user provider.UserInfo
	rp   provider.ClientInfo
}

func newClaimsFixture(t *testing.T, b storagetest.Backend) claimsFixture {
	t.Helper()
	e := newEnv(t, b, provider.Config{})
	u := e.user(t, "zoe@example.com", "Zoë Example")
	u, err := e.p.UpdateUser(context.Background(), u.ID, provider.UserUpdate{Profile: provider.ProfileChange{
		GivenName: ptr("Zoë"), FamilyName: ptr("Example"), MiddleName: ptr("Q"), Nickname: ptr("zo"),
		PreferredUsername: ptr("zoe"), Profile: ptr("https://example.com/zoe"), Picture: ptr("https://example.com/zoe.png"),
		Website: ptr("https://zoe.example"), Gender: ptr("female"), Birthdate: ptr("1990-02-28"),
		Zoneinfo: ptr("Europe/Paris"), Locale: ptr("fr-FR"), PhoneNumber: ptr("+33123456789"),
		PhoneNumberVerified: ptr(true),
		Address: &provider.Address{Formatted: "1 rue X, Paris", StreetAddress: "1 rue X", Locality: "Paris",
			PostalCode: "75001", Country: "FR"},
	}})
	if err != nil {
		t.Fatalf("UpdateUser: %v", err)
	}
	c := e.client(t, provider.ClientSpec{ID: "claims-rp", FirstParty: true,
		Scopes: []string{"openid", "profile", "email", "phone", "address", "offline_access"}})
	return claimsFixture{e: e, user: u, rp: c}
}

// scopeClaims are the standard claims each scope releases at userinfo, as the fixture's
// user has them (updated_at checked apart: it is a time).
var scopeClaims = map[string]map[string]any{
	"email": {"email": "zoe@example.com", "email_verified": true},
	"profile": {"name": "Zoë Example", "given_name": "Zoë", "family_name": "Example", "middle_name": "Q",
		"nickname": "zo", "preferred_username": "zoe", "profile": "https://example.com/zoe",
		"picture": "https://example.com/zoe.png", "website": "https://zoe.example", "gender": "female",
		"birthdate": "1990-02-28", "zoneinfo": "Europe/Paris", "locale": "fr-FR"},
	"phone": {"phone_number": "+33123456789", "phone_number_verified": true},
	"address": {"address": map[string]any{"formatted": "1 rue X, Paris", "street_address": "1 rue X",
		"locality": "Paris", "postal_code": "75001", "country": "FR"}},
}

// protocolClaims are the ID token claims that are not the user's.
var protocolClaims = []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "azp", "amr", "acr", "sid", "jti"}

// TestStandardClaimsFollowScopes: for every scope alone and all together, userinfo answers
// exactly the scope's claims; the ID token carries only email, email_verified and name of
// them, and never rat.
func TestStandardClaimsFollowScopes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		f := newClaimsFixture(t, b)
		for _, scopes := range [][]string{{}, {"email"}, {"profile"}, {"phone"}, {"address"}, {"profile", "email", "phone", "address"}} {
			t.Run("scopes "+strings.Join(scopes, "+"), func(t *testing.T) {
				rp := f.e.relyingParty(t, f.rp, append([]string{"openid"}, scopes...)...)
				_, tok := rp.signIn(t, f.e, f.e.browser(t), f.user.Email)
				wantUserinfo := map[string]any{"sub": f.user.ID}
				wantID := map[string]any{}
				for _, s := range scopes {
					for name, v := range scopeClaims[s] {
						wantUserinfo[name] = v
						if name == "email" || name == "email_verified" || name == "name" {
							wantID[name] = v
						}
					}
				}
				ui := f.e.userinfo(t, tok.AccessToken)
				if ui.status != http.StatusOK {
					t.Fatalf("userinfo: got %s", ui)
				}
				got := ui.body
				if hasProfile := containsString(scopes, "profile"); hasProfile != (got["updated_at"] != nil) {
					t.Errorf("userinfo updated_at: got %v with profile %v", got["updated_at"], hasProfile)
				}
				delete(got, "updated_at")
				if !reflect.DeepEqual(got, wantUserinfo) {
					t.Errorf("userinfo:\n got %v\nwant %v", got, wantUserinfo)
				}
				idClaims := userClaimsOf(tok.claims)
				if !reflect.DeepEqual(idClaims, wantID) {
					t.Errorf("ID token user claims:\n got %v\nwant %v", idClaims, wantID)
				}
				if _, ok := tok.claims["rat"]; ok {
					t.Errorf("ID token carries rat: %v", tok.claims)
				}
			})
		}
	})
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// userClaimsOf is claims without the protocol claims.
func userClaimsOf(claims map[string]any) map[string]any {
	out := map[string]any{}
	for name, v := range claims {
		if !containsString(protocolClaims, name) {
			out[name] = v
		}
	}
	return out
}

// TestClaimsParameter: the claims parameter (OpenID Connect Core §5.5) moves claims into
// the ID token, filters by value and values at both targets, survives a refresh, cannot
// release a claim outside the granted scopes, and a malformed one is invalid_request.
func TestClaimsParameter(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		f := newClaimsFixture(t, b)
		cases := []struct {
			name     string
			scopes   []string
			claims   string
			wantID   map[string]any // the ID token's user claims
			wantUI   []string       // claims userinfo must have
			noUI     []string       // claims userinfo must not have
			checkRef bool           // the refreshed ID token keeps the ID token's claims
		}{{
			name:   "essential and voluntary claims go into the ID token",
			scopes: []string{"profile", "email", "phone"},
			claims: `{"id_token":{"given_name":{"essential":true},"phone_number":null,"locale":{"essential":false}}}`,
			wantID: map[string]any{"email": "zoe@example.com", "email_verified": true, "name": "Zoë Example",
				"given_name": "Zoë", "phone_number": "+33123456789", "locale": "fr-FR"},
			wantUI:   []string{"given_name", "family_name", "phone_number"},
			checkRef: true,
		}, {
			name:   "acr asked in the ID token is stated when it can be met",
			scopes: []string{"email"},
			claims: `{"id_token":{"acr":{"essential":true,"values":["1","2"]}}}`,
			wantID: map[string]any{"email": "zoe@example.com", "email_verified": true},
			wantUI: []string{"email"},
		}, {
			name:   "values in the ID token release a matching claim and withhold another",
			scopes: []string{"profile"},
			claims: `{"id_token":{"zoneinfo":{"values":["Asia/Tokyo","Europe/Paris"]},"gender":{"value":"male"}}}`,
			wantID: map[string]any{"name": "Zoë Example", "zoneinfo": "Europe/Paris"},
			wantUI: []string{"gender", "zoneinfo"},
		}, {
			name:   "value at userinfo withholds a claim that does not match",
			scopes: []string{"profile", "email"},
			claims: `{"userinfo":{"nickname":{"value":"someone-else","essential":true},"given_name":{"value":"Zoë"}}}`,
			wantID: map[string]any{"email": "zoe@example.com", "email_verified": true, "name": "Zoë Example"},
			wantUI: []string{"given_name", "family_name", "email"},
			noUI:   []string{"nickname"},
		}, {
			name:   "a claim outside the granted scopes is not released",
			scopes: []string{"email"},
			claims: `{"id_token":{"phone_number":{"essential":true}},"userinfo":{"address":null,"given_name":null}}`,
			wantID: map[string]any{"email": "zoe@example.com", "email_verified": true},
			wantUI: []string{"email"},
			noUI:   []string{"phone_number", "address", "given_name"},
		}}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				rp := f.e.relyingParty(t, f.rp, append([]string{"openid", "offline_access"}, c.scopes...)...)
				_, tok := rp.signIn(t, f.e, f.e.browser(t), f.user.Email, oauth2.SetAuthURLParam("claims", c.claims))
				if got := userClaimsOf(tok.claims); !reflect.DeepEqual(got, c.wantID) {
					t.Errorf("ID token user claims:\n got %v\nwant %v", got, c.wantID)
				}
				if wantACR := strings.Contains(c.claims, `"acr"`); wantACR != (tok.claims["acr"] == "1") {
					t.Errorf("ID token acr: got %v, want it only when asked", tok.claims["acr"])
				}
				checkUserinfo := func(accessToken string) {
					t.Helper()
					ui := f.e.userinfo(t, accessToken)
					if ui.status != http.StatusOK {
						t.Fatalf("userinfo: got %s", ui)
					}
					for _, name := range c.wantUI {
						if _, ok := ui.body[name]; !ok {
							t.Errorf("userinfo lacks %s: %v", name, ui.body)
						}
					}
					for _, name := range c.noUI {
						if v, ok := ui.body[name]; ok {
							t.Errorf("userinfo has %s = %v, want it withheld", name, v)
						}
					}
				}
				checkUserinfo(tok.AccessToken)
				// A refresh keeps the grant's claims request: its access token still filters
				// userinfo, its ID token still carries what was asked for.
				r := f.e.refresh(t, f.rp, tok.RefreshToken)
				if r.status != http.StatusOK {
					t.Fatalf("refresh: got %s", r)
				}
				access, _ := r.body["access_token"].(string)
				checkUserinfo(access)
				if c.checkRef {
					raw, _ := r.body["id_token"].(string)
					_, claims := rp.verifyIDToken(t, raw, access)
					if got := userClaimsOf(claims); !reflect.DeepEqual(got, c.wantID) {
						t.Errorf("refreshed ID token user claims:\n got %v\nwant %v", got, c.wantID)
					}
					if _, ok := claims["rat"]; ok {
						t.Errorf("refreshed ID token carries rat")
					}
				}
			})
		}

		t.Run("a sub value answers only that user", func(t *testing.T) {
			rp := f.e.relyingParty(t, f.rp, "openid")
			br := f.e.browser(t)
			subClaims := func(sub string) oauth2.AuthCodeOption {
				return oauth2.SetAuthURLParam("claims", `{"id_token":{"sub":{"value":"`+sub+`"}}}`)
			}
			// Signing in while asking for another subject: access_denied, no code.
			ar := rp.start(subClaims("someone-else"))
			p := br.login(t, br.get(t, ar.String()), f.user.Email)
			wantAuthError(t, f.e, ar, callback(t, p, rpRedirectURI), "access_denied")
			// The user is signed in now: their own sub gets a code at once.
			ar = rp.start(subClaims(f.user.ID), oauth2.SetAuthURLParam("prompt", "none"))
			tok := rp.exchange(t, ar, wantCode(t, f.e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI)))
			if tok.claims["sub"] != f.user.ID {
				t.Errorf("sub: got %v", tok.claims["sub"])
			}
			// Another subject with prompt=none: login_required; without it, the login page.
			ar = rp.start(subClaims("someone-else"), oauth2.SetAuthURLParam("prompt", "none"))
			wantAuthError(t, f.e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), "login_required")
			if p := br.get(t, rp.start(subClaims("someone-else")).String()); p.status != http.StatusOK || p.url.Path != "/login" {
				t.Errorf("another subject: got %s, want the login page", p)
			}
		})

		for _, bad := range []struct{ name, claims string }{
			{"not JSON", `{"id_token":`},
			{"not an object", `["id_token"]`},
			{"a member that is not an object", `{"userinfo":"email"}`},
			{"a claim that is neither null nor an object", `{"id_token":{"email":true}}`},
			{"essential not a boolean", `{"id_token":{"email":{"essential":"yes"}}}`},
			{"values not an array", `{"id_token":{"email":{"values":"a"}}}`},
			{"too large", `{"id_token":{"x":{"value":"` + strings.Repeat("a", 9000) + `"}}}`},
		} {
			t.Run("malformed claims: "+bad.name, func(t *testing.T) {
				rp := f.e.relyingParty(t, f.rp, "openid")
				ar := rp.start(oauth2.SetAuthURLParam("claims", bad.claims))
				wantAuthError(t, f.e, ar, callback(t, f.e.browser(t).get(t, ar.String()), rpRedirectURI), "invalid_request")
			})
		}
	})
}

// TestDiscoveryAdvertisesClaims: the scopes, the standard claims and the claims parameter.
func TestDiscoveryAdvertisesClaims(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		r := e.call(t, http.MethodGet, "/.well-known/openid-configuration", nil, nil)
		var doc struct {
			Scopes          []string `json:"scopes_supported"`
			Claims          []string `json:"claims_supported"`
			ClaimsParameter bool     `json:"claims_parameter_supported"`
		}
		if err := json.Unmarshal([]byte(r.raw), &doc); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"profile", "email", "phone", "address"} {
			if !containsString(doc.Scopes, s) {
				t.Errorf("scopes_supported lacks %s: %v", s, doc.Scopes)
			}
			for name := range scopeClaims[s] {
				if !containsString(doc.Claims, name) {
					t.Errorf("claims_supported lacks %s: %v", name, doc.Claims)
				}
			}
		}
		if !doc.ClaimsParameter || containsString(doc.Claims, "rat") {
			t.Errorf("claims_parameter_supported %v, claims %v", doc.ClaimsParameter, doc.Claims)
		}
	})
}

// TestWithAccountsStandardClaims: an Accounts store's standard claims (Account.Claims)
// follow their scopes as Gatehouse's own users' do, its other claims keep going with
// `profile` into both tokens, and its users cannot edit a profile here (404).
func TestWithAccountsStandardClaims(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		company := newCompanyAccounts()
		company.add(provider.Account{ID: "77", Email: "kim@example.com", EmailVerified: true, Name: "Kim",
			Claims: map[string]any{"given_name": "Kim", "phone_number": "+4912345678", "team": "red"}}, testPassword)
		e, _ := accountsEnv(t, b, company)
		client := e.client(t, provider.ClientSpec{ID: "acct-claims", FirstParty: true,
			Scopes: []string{"openid", "profile", "phone"}})
		br := e.browser(t)

		_, tok := e.relyingParty(t, client, "openid", "profile").signIn(t, e, br, "kim@example.com")
		ui := e.userinfo(t, tok.AccessToken).body
		if ui["given_name"] != "Kim" || ui["team"] != "red" || ui["phone_number"] != nil {
			t.Errorf("userinfo with profile: got %v", ui)
		}
		if tok.claims["given_name"] != nil || tok.claims["team"] != "red" || tok.claims["name"] != "Kim" {
			t.Errorf("ID token with profile: got %v", tok.claims)
		}
		_, tok = e.relyingParty(t, client, "openid", "phone").signIn(t, e, br, "kim@example.com")
		if ui := e.userinfo(t, tok.AccessToken).body; ui["phone_number"] != "+4912345678" || ui["given_name"] != nil || ui["team"] != nil {
			t.Errorf("userinfo with phone: got %v", ui)
		}

		status, body := br.me(t, e, http.MethodPatch, `{"givenName":"K"}`, nil)
		if status != http.StatusNotFound || body["message"] != "profile editing is not available" {
			t.Errorf("PATCH /api/public/me with WithAccounts: got %d %v, want 404", status, body)
		}
		if p := br.get(t, e.issuer+"/account"); p.status != http.StatusNotFound {
			t.Errorf("account page with WithAccounts: got %s, want 404", p)
		}
	})
}

// TestClaimsParameterInRequestObject: a signed request object (RFC 9101) carries the
// claims parameter as a JSON object member, and it is honoured as the query's would be.
func TestClaimsParameterInRequestObject(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice")
		if _, err := e.p.UpdateUser(context.Background(), alice.ID, provider.UserUpdate{
			Profile: provider.ProfileChange{Nickname: ptr("ally"), Locale: ptr("en-GB")}}); err != nil {
			t.Fatal(err)
		}
		key := newECKey(t, "k1")
		jar := e.client(t, provider.ClientSpec{ID: "jar-claims", FirstParty: true, JWKS: jwksOf(t, key), RequestObjectAlg: "ES256",
			Scopes: []string{"openid", "profile", "email"}})
		rp := e.relyingParty(t, jar, "openid", "profile")
		ar := rp.start()
		claims := map[string]any{"iss": jar.ClientID, "aud": e.issuer, "exp": time.Now().Add(5 * time.Minute).Unix()}
		for k, v := range ar.url.Query() {
			claims[k] = v[0]
		}
		claims["claims"] = map[string]any{
			"id_token": map[string]any{"nickname": map[string]any{"essential": true}},
			"userinfo": map[string]any{"locale": map[string]any{"value": "fr-FR"}},
		}
		ar.set("request", signWith(t, key.alg, key.priv, key.kid, claims))
		br := e.browser(t)
		p := br.login(t, br.get(t, ar.String()), alice.Email)
		tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
		if tok.claims["nickname"] != "ally" {
			t.Errorf("ID token nickname: got %v, want ally", tok.claims["nickname"])
		}
		ui := e.userinfo(t, tok.AccessToken).body
		if ui["nickname"] != "ally" || ui["locale"] != nil {
			t.Errorf("userinfo: got %v, want nickname and no locale (it does not match the value asked)", ui)
		}
	})
}
