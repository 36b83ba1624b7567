package provider_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// companyAccounts stands for a company's own user table: bigint-like ids, its own password
// storage. It is the edge of the world WithAccounts plugs in.
type companyAccounts struct {
	mu   sync.Mutex
	byID map[string]*companyUser
}

type companyUser struct {
	provider.Account
	passwordHash [32]byte
}

func newCompanyAccounts() *companyAccounts {
	return &companyAccounts{byID: map[string]*companyUser{}}
}

// add stores an account with password.
func (c *companyAccounts) add(a provider.Account, password string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byID[a.ID] = &companyUser{Account: a, passwordHash: sha256.Sum256([]byte(password))}
}

// disable sets the account's Disabled flag, as the company's own admin would.
func (c *companyAccounts) disable(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byID[id].Disabled = true
}

func (c *companyAccounts) AccountByID(_ context.Context, id string) (*provider.Account, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.byID[id]
	if !ok {
		return nil, provider.ErrAccountNotFound
	}
	a := u.Account
	return &a, nil
}

func (c *companyAccounts) AccountByEmail(_ context.Context, email string) (*provider.Account, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.byID {
		if strings.EqualFold(u.Email, email) {
			a := u.Account
			return &a, nil
		}
	}
	return nil, provider.ErrAccountNotFound
}

func (c *companyAccounts) Authenticate(ctx context.Context, email, password string) (*provider.Account, error) {
	a, err := c.AccountByEmail(ctx, email)
	if err != nil {
		return nil, provider.ErrBadCredentials
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := sha256.Sum256([]byte(password))
	if subtle.ConstantTimeCompare(sum[:], c.byID[a.ID].passwordHash[:]) != 1 {
		return nil, provider.ErrBadCredentials
	}
	return a, nil
}

// companyAccountsWithReset is companyAccounts that can also set passwords.
type companyAccountsWithReset struct{ *companyAccounts }

func (c companyAccountsWithReset) SetPassword(_ context.Context, id, password string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.byID[id]
	if !ok {
		return provider.ErrAccountNotFound
	}
	u.passwordHash = sha256.Sum256([]byte(password))
	return nil
}

// companyClaims is a WithClaims function: a tenant claim on every token, and attempts at
// overriding what Gatehouse sets.
func companyClaims(_ context.Context, r provider.ClaimsRequest) (map[string]any, error) {
	claims := map[string]any{"tenant": "acme", "sub": "evil", "iss": "https://evil.example", "token_kind": r.Token}
	if r.Account != nil {
		claims["employee_id"] = "E" + r.Account.ID
	}
	return claims, nil
}

// accountsEnv starts a provider whose accounts live in accounts, mailing through a fresh
// SMTP test server, with companyClaims.
func accountsEnv(t *testing.T, b storagetest.Backend, accounts provider.Accounts) (*env, *smtptest.Server) {
	t.Helper()
	mail := smtptest.Start(t)
	e := newEnv(t, b, provider.Config{PublicAuth: provider.PublicAuthConfig{
		SMTPURL: mail.URL(), MailFrom: "Gatehouse <no-reply@example.com>",
	}}, provider.WithAccounts(accounts), provider.WithClaims(companyClaims))
	return e, mail
}

// postJSON posts body as JSON to path with client (nil: the back channel) and decodes the
// answer.
func (e *env) postJSON(t *testing.T, client *http.Client, path string, body any) jsonResponse {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, e.issuer+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if client == nil {
		return e.send(t, req)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := jsonResponse{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &r.body)
	return r
}

func wantJSON(t *testing.T, what string, r jsonResponse, status int, wantRaw string) {
	t.Helper()
	if r.status != status || (wantRaw != "" && strings.TrimSpace(r.raw) != wantRaw) {
		t.Errorf("%s: got %s, want %d %s", what, r, status, wantRaw)
	}
}

func TestWithAccounts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		company := newCompanyAccounts()
		company.add(provider.Account{ID: "42", Email: "ann@example.com", EmailVerified: true, Name: "Ann",
			Claims: map[string]any{"groups": []any{"staff"}, "email": "spoofed@example.com"}}, testPassword)
		company.add(provider.Account{ID: "43", Email: "pin@example.com", EmailVerified: true, Name: "Pia", RequirePIN: true}, testPassword)
		company.add(provider.Account{ID: "44", Email: "off@example.com", EmailVerified: true, Name: "Otto", Disabled: true}, testPassword)
		e, mail := accountsEnv(t, b, company)
		ctx := context.Background()

		t.Run("password login through the JSON API starts a session of the account", func(t *testing.T) {
			br := e.browser(t)
			login := e.postJSON(t, br.client, "/api/public/login", map[string]string{"email": "ann@example.com", "password": testPassword})
			if login.status != http.StatusOK || !strings.Contains(login.raw, `"id":"42"`) {
				t.Fatalf("login: got %s, want 200 with the account 42", login)
			}
			session := br.get(t, e.issuer+"/api/public/session")
			if session.status != http.StatusOK || !strings.Contains(session.body, `"id":"42"`) || !strings.Contains(session.body, `"role":"user"`) {
				t.Errorf("session: got %s, want the valid session of 42", session)
			}
			wantJSON(t, "wrong password", e.postJSON(t, nil, "/api/public/login",
				map[string]string{"email": "ann@example.com", "password": "not the password at all"}),
				http.StatusUnauthorized, `{"error":"Unauthorized","message":"invalid email or password"}`)
			wantJSON(t, "unknown email", e.postJSON(t, nil, "/api/public/login",
				map[string]string{"email": "nobody@example.com", "password": testPassword}),
				http.StatusUnauthorized, `{"error":"Unauthorized","message":"invalid email or password"}`)
		})

		t.Run("a disabled account is refused", func(t *testing.T) {
			wantJSON(t, "login", e.postJSON(t, nil, "/api/public/login", map[string]string{"email": "off@example.com", "password": testPassword}),
				http.StatusForbidden, `{"error":"Forbidden","message":"account disabled"}`)
		})

		t.Run("features the store lacks answer 404 and are not offered", func(t *testing.T) {
			wantJSON(t, "register", e.postJSON(t, nil, "/api/public/register",
				map[string]string{"email": "new@example.com", "password": testPassword, "name": "New"}),
				http.StatusNotFound, `{"error":"Not Found","message":"registration is not available"}`)
			wantJSON(t, "request-password-reset", e.postJSON(t, nil, "/api/public/request-password-reset",
				map[string]string{"email": "ann@example.com"}),
				http.StatusNotFound, `{"error":"Not Found","message":"password reset is not available"}`)
			wantJSON(t, "reset-password", e.postJSON(t, nil, "/api/public/reset-password",
				map[string]string{"token": "whatever", "password": "a brand new passphrase"}),
				http.StatusNotFound, `{"error":"Not Found","message":"password reset is not available"}`)
			wantJSON(t, "resend-verification", e.postJSON(t, nil, "/api/public/resend-verification",
				map[string]string{"email": "ann@example.com"}),
				http.StatusNotFound, `{"error":"Not Found","message":"email verification is not available"}`)
			br := e.browser(t)
			if p := br.get(t, e.issuer+"/register"); p.status != http.StatusNotFound {
				t.Errorf("register page: got %s, want 404", p)
			}
			if p := br.get(t, e.issuer+"/forgot-password"); p.status != http.StatusNotFound {
				t.Errorf("forgot-password page: got %s, want 404", p)
			}
			login := br.get(t, e.issuer+"/login")
			if login.status != http.StatusOK || strings.Contains(login.body, `href="/register`) || strings.Contains(login.body, `href="/forgot-password`) {
				t.Errorf("login page offers registration or reset:\n%s", login)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(br.get(t, e.issuer+"/.well-known/openid-configuration").body), &doc); err != nil {
				t.Fatal(err)
			}
			if got, ok := doc["gatehouse_account_features"].([]any); !ok || len(got) != 0 {
				t.Errorf("discovery gatehouse_account_features = %v, want []", doc["gatehouse_account_features"])
			}
		})

		t.Run("code flow issues tokens for the external id with the account's and custom claims", func(t *testing.T) {
			client := e.client(t, provider.ClientSpec{})
			rp := e.relyingParty(t, client)
			br := e.browser(t)
			_, tok := rp.signIn(t, e, br, "ann@example.com")
			if tok.idToken.Subject != "42" || tok.idToken.Issuer != e.issuer {
				t.Errorf("ID token sub %q iss %q, want 42 and %s", tok.idToken.Subject, tok.idToken.Issuer, e.issuer)
			}
			for name, want := range map[string]any{
				"email": "ann@example.com", "tenant": "acme", "employee_id": "E42", "token_kind": "id_token",
			} {
				if got := tok.claims[name]; got != want {
					t.Errorf("ID token %s = %v, want %v", name, got, want)
				}
			}
			if groups, _ := tok.claims["groups"].([]any); len(groups) != 1 || groups[0] != "staff" {
				t.Errorf("ID token groups = %v, want [staff]", tok.claims["groups"])
			}
			at := e.verifyJWT(t, tok.AccessToken)
			for name, want := range map[string]any{"sub": "42", "iss": e.issuer, "tenant": "acme", "token_kind": "access_token", "client_id": client.ClientID} {
				if got := at[name]; got != want {
					t.Errorf("access token %s = %v, want %v", name, got, want)
				}
			}
			info := e.userinfo(t, tok.AccessToken)
			for name, want := range map[string]any{"sub": "42", "email": "ann@example.com", "tenant": "acme", "token_kind": "userinfo", "employee_id": "E42"} {
				if got := info.body[name]; got != want {
					t.Errorf("userinfo %s = %v, want %v (%s)", name, got, want, info)
				}
			}
			if groups, _ := info.body["groups"].([]any); len(groups) != 1 {
				t.Errorf("userinfo groups = %v, want [staff]", info.body["groups"])
			}

			// The consent and the session are stored without a row in Gatehouse's users.
			if _, err := e.store.UserByID(ctx, "42"); !errors.Is(err, publicauth.ErrUserNotFound) {
				t.Errorf("users row of 42: %v, want none", err)
			}
			if c, err := e.store.ConsentFor(ctx, "42", client.ClientID); err != nil || len(c.Scopes) == 0 {
				t.Errorf("consent of 42: %+v, %v", c, err)
			}
			refreshed := e.refresh(t, client, tok.RefreshToken)
			if refreshed.status != http.StatusOK {
				t.Fatalf("refresh: %s", refreshed)
			}

			// Disabled in the company's table: the next refresh ends the grant, and the
			// session no longer counts.
			company.add(provider.Account{ID: "45", Email: "leaver@example.com", EmailVerified: true, Name: "Lee"}, testPassword)
			leaverBrowser := e.browser(t)
			_, leaver := rp.signIn(t, e, leaverBrowser, "leaver@example.com")
			company.disable("45")
			wantOAuthError(t, e.refresh(t, client, leaver.RefreshToken), http.StatusBadRequest, "invalid_grant")
			if r := e.userinfo(t, leaver.AccessToken); r.status != http.StatusUnauthorized {
				t.Errorf("userinfo of a disabled account: got %s, want 401", r)
			}
			if p := leaverBrowser.get(t, e.issuer+"/api/public/session"); p.status != http.StatusUnauthorized {
				t.Errorf("session of a disabled account: got %s, want 401", p)
			}
		})

		t.Run("the PIN gate of the account mails a PIN before the session", func(t *testing.T) {
			rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
			br := e.browser(t)
			ar := rp.start()
			f := wantPINPage(t, br.login(t, br.get(t, ar.String()), "pin@example.com"), http.StatusOK)
			pin := smtptest.PIN(t, mail.WaitFor(t, "pin@example.com"))
			finishFlow(t, e, rp, ar, br.submitPIN(t, f, pin), provider.UserInfo{ID: "43"})

			login := e.postJSON(t, nil, "/api/public/login", map[string]string{"email": "pin@example.com", "password": testPassword})
			if login.status != http.StatusOK || login.body["pinRequired"] != true {
				t.Errorf("JSON login of a PIN account: got %s, want pinRequired", login)
			}
		})
	})
}

func TestWithAccountsPasswordReset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		company := newCompanyAccounts()
		company.add(provider.Account{ID: "7", Email: "ann@example.com", EmailVerified: true, Name: "Ann"}, testPassword)
		e, mail := accountsEnv(t, b, companyAccountsWithReset{company})
		const newPassword = "a brand new passphrase"

		br := e.browser(t)
		wantJSON(t, "login", e.postJSON(t, br.client, "/api/public/login", map[string]string{"email": "ann@example.com", "password": testPassword}), http.StatusOK, "")
		wantJSON(t, "request-password-reset", e.postJSON(t, nil, "/api/public/request-password-reset", map[string]string{"email": "ann@example.com"}), http.StatusOK, "")
		link, err := url.Parse(e.mailedLink(t, mail, "ann@example.com", publicauth.PathResetPassword))
		if err != nil {
			t.Fatal(err)
		}
		wantJSON(t, "reset-password", e.postJSON(t, nil, "/api/public/reset-password",
			map[string]string{"token": link.Query().Get("token"), "password": newPassword}), http.StatusOK, "")

		wantJSON(t, "login with the old password", e.postJSON(t, nil, "/api/public/login",
			map[string]string{"email": "ann@example.com", "password": testPassword}), http.StatusUnauthorized, "")
		wantJSON(t, "login with the new password", e.postJSON(t, nil, "/api/public/login",
			map[string]string{"email": "ann@example.com", "password": newPassword}), http.StatusOK, "")
		// The reset ended the session that began before it.
		if p := br.get(t, e.issuer+"/api/public/session"); p.status != http.StatusUnauthorized {
			t.Errorf("session from before the reset: got %s, want 401", p)
		}
	})
}

func TestWithAccountsRefusesSocialLogin(t *testing.T) {
	_, err := provider.New(provider.Config{
		Secret: testSecret, DSN: "sqlite:" + t.TempDir() + "/g.db",
		Social: provider.SocialConfig{Google: provider.SocialProvider{ClientID: "id", ClientSecret: "secret"}},
	}, provider.WithAccounts(newCompanyAccounts()))
	if err == nil || !strings.Contains(err.Error(), "social") {
		t.Errorf("New with social login and WithAccounts: got %v, want an error about social login", err)
	}
}

func TestRegistrationModes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		body := func(email string) map[string]string {
			return map[string]string{"email": email, "password": testPassword, "name": "New"}
		}

		t.Run("closed refuses registration and hides it", func(t *testing.T) {
			e := newEnv(t, b, provider.Config{Registration: provider.RegistrationClosed})
			wantJSON(t, "register", e.postJSON(t, nil, "/api/public/register", body("new@example.com")),
				http.StatusForbidden, `{"error":"Forbidden","message":"registration is closed"}`)
			br := e.browser(t)
			if p := br.get(t, e.issuer+"/register"); p.status != http.StatusForbidden {
				t.Errorf("register page: got %s, want 403", p)
			}
			login := br.get(t, e.issuer+"/login")
			if strings.Contains(login.body, `href="/register`) || !strings.Contains(login.body, `href="/forgot-password`) {
				t.Errorf("login page with registration closed:\n%s", login)
			}
			if _, err := e.store.UserByEmail(context.Background(), "new@example.com"); err == nil {
				t.Error("a refused registration created the account")
			}
		})

		t.Run("the hook refuses with its message, accepts, or fails", func(t *testing.T) {
			var asked []provider.RegisterRequest
			var mu sync.Mutex
			hook := func(_ context.Context, r provider.RegisterRequest) error {
				mu.Lock()
				asked = append(asked, r)
				mu.Unlock()
				switch {
				case strings.HasSuffix(r.Email, "@competitor.example"):
					return provider.RefuseRegistration("Sign-ups from competitor.example are not accepted.")
				case strings.HasPrefix(r.Email, "broken"):
					return errors.New("the CRM is down")
				}
				return nil
			}
			e := newEnv(t, b, provider.Config{Registration: provider.RegistrationHook}, provider.WithBeforeRegister(hook))
			wantJSON(t, "refused", e.postJSON(t, nil, "/api/public/register", body("spy@competitor.example")),
				http.StatusForbidden, `{"error":"Forbidden","message":"Sign-ups from competitor.example are not accepted."}`)
			wantJSON(t, "hook error", e.postJSON(t, nil, "/api/public/register", body("broken@example.com")),
				http.StatusInternalServerError, `{"error":"Internal Server Error","message":"internal error"}`)
			wantJSON(t, "accepted", e.postJSON(t, nil, "/api/public/register", body("new@example.com")), http.StatusCreated, "")
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 3 || asked[2].Email != "new@example.com" || asked[2].Name != "New" || asked[2].Password != testPassword {
				t.Errorf("hook asked %+v, want the three registrations", asked)
			}
		})

		t.Run("hook mode needs a hook, and a hook needs hook mode", func(t *testing.T) {
			dsn := "sqlite:" + t.TempDir() + "/g.db"
			if _, err := provider.New(provider.Config{Secret: testSecret, DSN: dsn, Registration: provider.RegistrationHook}); err == nil {
				t.Error(`New with Registration "hook" and no hook succeeded`)
			}
			hook := provider.WithBeforeRegister(func(context.Context, provider.RegisterRequest) error { return nil })
			if _, err := provider.New(provider.Config{Secret: testSecret, DSN: dsn}, hook); err == nil {
				t.Error("New with a hook and open registration succeeded")
			}
			if _, err := provider.New(provider.Config{Secret: testSecret, DSN: dsn, Registration: "maybe"}); err == nil {
				t.Error(`New with Registration "maybe" succeeded`)
			}
		})
	})
}

// A client_credentials token gets the claims of WithClaims, asked with no account; its sub
// stays the client id; an error of the function fails the request with server_error.
func TestWithClaimsClientCredentials(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		var mu sync.Mutex
		var asked []provider.ClaimsRequest
		claims := func(_ context.Context, r provider.ClaimsRequest) (map[string]any, error) {
			mu.Lock()
			asked = append(asked, r)
			mu.Unlock()
			if r.ClientID == "broken" {
				return nil, errors.New("the claims service is down")
			}
			return map[string]any{"tenant": "acme", "sub": "evil", "client_id": "evil"}, nil
		}
		e := newEnv(t, b, provider.Config{}, provider.WithClaims(claims))
		form := url.Values{"grant_type": {"client_credentials"}}
		fine := e.client(t, provider.ClientSpec{ID: "fine", GrantTypes: []string{"client_credentials"}})
		res := e.token(t, fine, form)
		if res.status != http.StatusOK {
			t.Fatalf("token: %s", res)
		}
		at := e.verifyJWT(t, res.body["access_token"].(string))
		for name, want := range map[string]any{"tenant": "acme", "sub": "fine", "client_id": "fine"} {
			if at[name] != want {
				t.Errorf("access token %s = %v, want %v", name, at[name], want)
			}
		}
		mu.Lock()
		if len(asked) != 1 || asked[0].Account != nil || asked[0].Token != provider.ClaimsAccessToken || asked[0].Subject != "fine" {
			t.Errorf("asked %+v, want one access_token request without an account", asked)
		}
		mu.Unlock()
		broken := e.client(t, provider.ClientSpec{ID: "broken", GrantTypes: []string{"client_credentials"}})
		wantOAuthError(t, e.token(t, broken, form), http.StatusInternalServerError, "server_error")
	})
}
