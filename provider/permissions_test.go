package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// The permission routes (SSO interface §4 items 15–20) driven over real HTTP with tokens
// from real flows: user-bound tokens from the authorization code flow in a browser, client
// tokens from client_credentials, and public sessions from POST /api/public/login.

const (
	appName   = "Test App"
	otherName = "Other App"
)

// permEnv is a provider with two applications (app and other, both allowed
// manage_permissions and client_credentials) and three users: alice, bob and an admin.
type permEnv struct {
	*env
	app, other  provider.ClientInfo
	alice, bob  provider.UserInfo
	admin       provider.UserInfo
	clockOffset *atomic.Int64 // added to the provider's clock, in nanoseconds
}

func newPermEnv(t *testing.T, b storagetest.Backend, cfg provider.Config) *permEnv {
	t.Helper()
	offset := &atomic.Int64{}
	e := newEnv(t, b, cfg, provider.WithClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }))
	pe := &permEnv{env: e, clockOffset: offset}
	spec := func(id, name string) provider.ClientSpec {
		return provider.ClientSpec{ID: id, Name: name, FirstParty: true,
			Scopes:     []string{"openid", "profile", "email", "offline_access", "manage_permissions"},
			GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"}}
	}
	pe.app = e.client(t, spec("app", appName))
	pe.other = e.client(t, spec("other", otherName))
	pe.alice = e.user(t, "alice@example.com", "Alice Example")
	pe.bob = e.user(t, "bob@example.com", "Bob Example")
	admin, err := e.p.CreateUser(context.Background(), provider.UserSpec{
		Email: "root@example.com", Password: testPassword, Name: "Root Admin", Role: "admin", Verified: true})
	if err != nil {
		t.Fatalf("CreateUser(admin): %v", err)
	}
	pe.admin = admin
	return pe
}

// userToken signs email in to client in browser b (scopes default to the relying party's)
// and returns the tokens.
func (e *permEnv) userToken(t *testing.T, b *browser, client provider.ClientInfo, email string, scopes ...string) tokens {
	t.Helper()
	_, tok := e.relyingParty(t, client, scopes...).signIn(t, e.env, b, email)
	return tok
}

// clientToken is a client_credentials access token of c with scopes.
func (e *permEnv) clientToken(t *testing.T, c provider.ClientInfo, scopes ...string) string {
	t.Helper()
	cc := clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		TokenURL: e.issuer + "/api/oauth/token", Scopes: scopes, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cc.Token(e.ctx)
	if err != nil {
		t.Fatalf("client_credentials for %s: %v", c.ClientID, err)
	}
	return tok.AccessToken
}

// publicSession logs email in through POST /api/public/login and returns a decorator that
// sends the `public-session` cookie it set.
func (e *permEnv) publicSession(t *testing.T, email string) func(*http.Request) {
	t.Helper()
	return e.sessionCookie(t, "/api/public/login", "public-session", email)
}

// adminSession logs email in through POST /api/admin/login and returns a decorator adding
// its admin-session cookie.
func (e *permEnv) adminSession(t *testing.T, email string) func(*http.Request) {
	t.Helper()
	return e.sessionCookie(t, "/api/admin/login", "admin-session", email)
}

// sessionCookie logs email in at the login endpoint path and returns a decorator adding
// the session cookie it set.
func (e *permEnv) sessionCookie(t *testing.T, path, name, email string) func(*http.Request) {
	t.Helper()
	r := e.sendJSON(t, http.MethodPost, path,
		fmt.Sprintf(`{"email": %q, "password": %q}`, email, testPassword), nil)
	if r.status != http.StatusOK {
		t.Fatalf("login as %s at %s: got %s, want 200", email, path, r)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == name {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("login as %s at %s set no %s cookie", email, path, name)
	}
	return func(req *http.Request) { req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value}) }
}

// sendJSON sends method path with body (when not empty) as application/json, decorated by
// auth.
func (e *permEnv) sendJSON(t *testing.T, method, path, body string, auth func(*http.Request)) jsonResponse {
	t.Helper()
	req, err := http.NewRequest(method, e.issuer+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != nil {
		auth(req)
	}
	return e.send(t, req)
}

func recordPath(userID, clientID string) string {
	return "/api/users/" + userID + "/apps/" + clientID + "/permissions"
}

func adminRecordPath(userID, clientID string) string {
	return "/api/admin/users/" + userID + "/apps/" + clientID + "/permissions"
}

func requestAccessPath(userID, clientID string) string {
	return "/api/users/" + userID + "/apps/" + clientID + "/request-access"
}

// wantAppError asserts an application error answer: the status, and exactly
// {"error": <status text>, "message": message}.
func wantAppError(t *testing.T, r jsonResponse, status int, message string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status: got %s, want %d", r, status)
		return
	}
	want := map[string]any{"error": http.StatusText(status), "message": message}
	if len(r.body) != 2 || r.body["error"] != want["error"] || r.body["message"] != want["message"] {
		t.Errorf("body: got %s, want %v", r.raw, want)
	}
}

// wantRecord asserts a permission record of (userID, clientID) with the given status and
// role, hasAccess derived from them, and grantedBy (nil for none). It returns the record.
func wantRecord(t *testing.T, rec map[string]any, userID, clientID, name, status, role string, grantedBy any) map[string]any {
	t.Helper()
	want := map[string]any{
		"userId": userID, "clientId": clientID, "appName": name, "status": status, "role": role,
		"hasAccess": status == "approved" && role != "none", "grantedBy": grantedBy,
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s: got %#v, want %#v (record %v)", k, rec[k], v, rec)
		}
	}
	for _, k := range []string{"createdAt", "updatedAt"} {
		s, _ := rec[k].(string)
		if at, err := time.Parse(time.RFC3339, s); err != nil || at.Location() != time.UTC || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s: got %#v, want an RFC 3339 UTC timestamp", k, rec[k])
		}
	}
	if len(rec) != 11 {
		t.Errorf("got %d fields, want the 11 of the permission record: %v", len(rec), rec)
	}
	return rec
}

// outcome is what a request should get: status, and for an error the message (success
// bodies are checked per route).
type outcome struct {
	status  int
	message string
}

var (
	allowed          = outcome{status: http.StatusOK}
	noCredentials    = outcome{http.StatusUnauthorized, "a bearer access token is required"}
	badToken         = outcome{http.StatusUnauthorized, "access token is invalid, expired or revoked"}
	noAdminSession   = outcome{http.StatusUnauthorized, "an admin-session or public-session of an admin is required"}
	notAdmin         = outcome{http.StatusForbidden, "admin role required"}
	clientMismatch   = outcome{http.StatusForbidden, "access token client does not match the requested client"}
	subjectMismatch  = outcome{http.StatusForbidden, "access token subject does not match the requested user"}
	scopeMissing     = outcome{http.StatusForbidden, "access token lacks scope manage_permissions"}
	clientTokenOnly  = outcome{http.StatusForbidden, "a client token (client_credentials) is required"}
	userTokenOnly    = outcome{http.StatusForbidden, "a user-bound access token is required"}
	alreadyApproved  = outcome{http.StatusConflict, "access is already approved"}
	tokenCallers     = []string{"user token", "user token with manage_permissions", "user token of another user", "user token of another client", "client token", "client token without scope", "client token of another client"}
	credentialFailed = []string{"no credentials", "garbage bearer", "revoked token", "expired token"}
)

// TestPermissionAccessTable covers every cell of caller × route: who may call each
// permission route and what everyone else gets, status and body. The record under test is
// alice's at app, set to approved/user before each cell. Tokens are kept on revocation here
// (KeepTokensOnRevoke), so a DELETE cell does not spend the callers' tokens; the default is
// tested by TestPermissionLifecycle and TestPermissionRevocationTokens.
func TestPermissionAccessTable(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{Permissions: provider.PermissionsConfig{KeepTokensOnRevoke: true}})
		aliceBrowser, bobBrowser := e.browser(t), e.browser(t)
		aliceApp := e.userToken(t, aliceBrowser, e.app, e.alice.Email)
		aliceAppScoped := e.userToken(t, aliceBrowser, e.app, e.alice.Email, "openid", "manage_permissions")
		if got, _ := e.verifyJWT(t, aliceAppScoped.AccessToken)["scope"].(string); !strings.Contains(got, "manage_permissions") {
			t.Fatalf("user token scope: got %q, want manage_permissions granted", got)
		}
		revoked := e.userToken(t, aliceBrowser, e.app, e.alice.Email)
		if r := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {revoked.AccessToken}}, basicAuth(e.app)); r.status != http.StatusOK {
			t.Fatalf("revoke: got %s", r)
		}
		bobApp := e.userToken(t, bobBrowser, e.app, e.bob.Email)
		aliceOther := e.userToken(t, aliceBrowser, e.other, e.alice.Email)
		appManager := e.clientToken(t, e.app, "manage_permissions")
		bearerOf := func(token string) func(*http.Request) { return bearer(token) }
		callers := map[string]func(*http.Request){
			"no credentials":                     nil,
			"garbage bearer":                     bearerOf("not-a-token"),
			"revoked token":                      bearerOf(revoked.AccessToken),
			"expired token":                      bearerOf(aliceApp.AccessToken), // the clock moves past its expiry
			"user token":                         bearerOf(aliceApp.AccessToken),
			"user token with manage_permissions": bearerOf(aliceAppScoped.AccessToken),
			"user token of another user":         bearerOf(bobApp.AccessToken),
			"user token of another client":       bearerOf(aliceOther.AccessToken),
			"client token":                       bearerOf(appManager),
			"client token without scope":         bearerOf(e.clientToken(t, e.app)),
			"client token of another client":     bearerOf(e.clientToken(t, e.other, "manage_permissions")),
			"public-session of an admin":         e.publicSession(t, e.admin.Email),
			"public-session of a user":           e.publicSession(t, e.bob.Email),
			"admin-session":                      e.adminSession(t, e.admin.Email),
		}

		alice := e.alice.ID
		type route struct {
			method, path, body string
			// check asserts the body of an allowed call.
			check func(t *testing.T, r jsonResponse)
		}
		putBody := `{"status": "approved", "role": "admin"}`
		routes := map[string]route{
			"GET": {http.MethodGet, recordPath(alice, "app"), "", func(t *testing.T, r jsonResponse) {
				wantRecord(t, r.body, alice, "app", appName, "approved", "user", "client:app")
			}},
			"PUT": {http.MethodPut, recordPath(alice, "app"), putBody, func(t *testing.T, r jsonResponse) {
				wantRecord(t, r.body, alice, "app", appName, "approved", "admin", "client:app")
			}},
			"DELETE": {http.MethodDelete, recordPath(alice, "app"), "", func(t *testing.T, r jsonResponse) {
				wantRecord(t, r.body, alice, "app", appName, "revoked", "none", "client:app")
			}},
			"request-access": {http.MethodPost, requestAccessPath(alice, "app"), `{"email": "alice@example.com", "name": "Alice"}`, nil},
			"admin PUT": {http.MethodPut, adminRecordPath(alice, "app"), putBody, func(t *testing.T, r jsonResponse) {
				wantRecord(t, r.body, alice, "app", appName, "approved", "admin", e.admin.ID)
			}},
			"admin DELETE": {http.MethodDelete, adminRecordPath(alice, "app"), "", func(t *testing.T, r jsonResponse) {
				wantRecord(t, r.body, alice, "app", appName, "revoked", "none", "client:app")
			}},
			"admin list": {http.MethodGet, "/api/admin/apps/app/permissions?status=approved", "", func(t *testing.T, r jsonResponse) {
				list, _ := r.body["permissions"].([]any)
				if len(list) != 1 || r.body["nextCursor"] != nil {
					t.Fatalf("got %s, want alice's one approved record and no next cursor", r.raw)
				}
				wantRecord(t, list[0].(map[string]any), alice, "app", appName, "approved", "user", "client:app")
			}},
			"admin audit": {http.MethodGet, "/api/admin/audit?clientId=app&userId=" + alice, "", func(t *testing.T, r jsonResponse) {
				if list, _ := r.body["entries"].([]any); len(list) == 0 {
					t.Errorf("got %s, want the entries of the seeding PUTs", r.raw)
				}
			}},
		}

		// table[route][caller] is the outcome of every cell.
		table := map[string]map[string]outcome{}
		for name := range routes {
			table[name] = map[string]outcome{
				"no credentials": noCredentials, "garbage bearer": badToken, "revoked token": badToken, "expired token": badToken,
				"public-session of an admin": noCredentials, "public-session of a user": noCredentials,
				"admin-session": noCredentials,
			}
		}
		set := func(route string, cells map[string]outcome) {
			for caller, o := range cells {
				table[route][caller] = o
			}
		}
		set("GET", map[string]outcome{
			"user token": allowed, "user token with manage_permissions": allowed, "user token of another user": subjectMismatch,
			"user token of another client": clientMismatch, "client token": allowed, "client token without scope": scopeMissing,
			"client token of another client": clientMismatch, "public-session of an admin": allowed, "public-session of a user": notAdmin,
			"admin-session": allowed,
		})
		for _, name := range []string{"PUT", "DELETE"} {
			set(name, map[string]outcome{
				"user token": clientTokenOnly, "user token with manage_permissions": clientTokenOnly,
				"user token of another user": clientTokenOnly, "user token of another client": clientMismatch,
				"client token": allowed, "client token without scope": scopeMissing, "client token of another client": clientMismatch,
			})
		}
		set("request-access", map[string]outcome{
			"user token": alreadyApproved, "user token with manage_permissions": alreadyApproved,
			"user token of another user": subjectMismatch, "user token of another client": clientMismatch,
			"client token": userTokenOnly, "client token without scope": userTokenOnly, "client token of another client": clientMismatch,
		})
		for _, name := range []string{"admin PUT", "admin DELETE", "admin list", "admin audit"} {
			for _, caller := range append(slices.Clone(tokenCallers), credentialFailed...) {
				table[name][caller] = noAdminSession
			}
			set(name, map[string]outcome{"public-session of an admin": allowed, "public-session of a user": notAdmin, "admin-session": allowed})
		}

		seed := func(t *testing.T) {
			t.Helper()
			r := e.sendJSON(t, http.MethodPut, recordPath(alice, "app"), `{"status": "approved", "role": "user"}`, bearer(appManager))
			if r.status != http.StatusOK && r.status != http.StatusCreated {
				t.Fatalf("seed: got %s", r)
			}
		}
		for routeName, rt := range routes {
			for callerName, auth := range callers {
				want, ok := table[routeName][callerName]
				if !ok {
					t.Errorf("the table has no cell for %s × %s", routeName, callerName)
					continue
				}
				t.Run(routeName+"/"+callerName, func(t *testing.T) {
					seed(t)
					if callerName == "expired token" {
						e.clockOffset.Store(int64(2 * time.Hour))
						defer e.clockOffset.Store(0)
					}
					r := e.sendJSON(t, rt.method, rt.path, rt.body, auth)
					if want.message != "" {
						wantAppError(t, r, want.status, want.message)
						return
					}
					if r.status != want.status {
						t.Fatalf("got %s, want %d", r, want.status)
					}
					rt.check(t, r)
				})
			}
		}
	})
}

// TestPermissionRequestErrors covers the refusals that do not depend on the caller: bad
// bodies and parameters (400, 413, 415), unknown users, clients and records (404).
func TestPermissionRequestErrors(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		aliceTokens := e.userToken(t, e.browser(t), e.app, e.alice.Email)
		alice := bearer(aliceTokens.AccessToken)
		manager := bearer(e.clientToken(t, e.app, "manage_permissions"))
		admin := e.publicSession(t, e.admin.Email)
		path := recordPath(e.alice.ID, "app")
		cases := []struct {
			name, method, path, body string
			contentType              string // when not application/json
			auth                     func(*http.Request)
			status                   int
			message                  string
		}{
			{"GET without a record", http.MethodGet, path, "", "", alice, 404, "no permission record for this user and application"},
			{"GET by admin without a record", http.MethodGet, path, "", "", admin, 404, "no permission record for this user and application"},
			{"GET of an unknown user", http.MethodGet, recordPath("no-such-user", "app"), "", "", manager, 404, "user not found"},
			{"GET of an unknown client by admin", http.MethodGet, recordPath(e.alice.ID, "no-such-app"), "", "", admin, 404, "application not found"},
			{"PUT for an unknown user", http.MethodPut, recordPath("no-such-user", "app"), `{"status":"approved","role":"user"}`, "", manager, 404, "user not found"},
			{"admin PUT for an unknown user", http.MethodPut, adminRecordPath("no-such-user", "app"), `{"status":"approved","role":"user"}`, "", admin, 404, "user not found"},
			{"admin PUT for an unknown client", http.MethodPut, adminRecordPath(e.alice.ID, "no-such-app"), `{"status":"approved","role":"user"}`, "", admin, 404, "application not found"},
			{"admin DELETE for an unknown user", http.MethodDelete, adminRecordPath("no-such-user", "app"), "", "", admin, 404, "user not found"},
			{"PUT with an unknown status", http.MethodPut, path, `{"status":"granted","role":"user"}`, "", manager, 400, "status must be one of pending, approved, revoked"},
			{"PUT with an unknown role", http.MethodPut, path, `{"status":"approved","role":"owner"}`, "", manager, 400, "role must be one of none, user, admin"},
			{"PUT without status", http.MethodPut, path, `{"role":"user"}`, "", manager, 400, "status is required"},
			{"PUT without role", http.MethodPut, path, `{"status":"approved"}`, "", manager, 400, "role is required"},
			{"PUT with a number for status", http.MethodPut, path, `{"status":1,"role":"user"}`, "", manager, 400, "status must be a JSON string"},
			{"PUT with broken JSON", http.MethodPut, path, `{"status":`, "", manager, 400, "request body is not valid JSON"},
			{"PUT with a JSON array", http.MethodPut, path, `["approved"]`, "", manager, 400, "request body must be a JSON object"},
			{"PUT without a body", http.MethodPut, path, "", "application/json", manager, 400, "request body is empty"},
			{"PUT as a form", http.MethodPut, path, "status=approved&role=user", "application/x-www-form-urlencoded", manager, 415, "Content-Type must be application/json"},
			{"PUT of 17 KiB", http.MethodPut, path, `{"status":"approved","role":"user","pad":"` + strings.Repeat("x", 17<<10) + `"}`, "", manager, 413, "request body must be at most 16384 bytes"},
			{"admin PUT with an unknown role", http.MethodPut, adminRecordPath(e.alice.ID, "app"), `{"status":"approved","role":"root"}`, "", admin, 400, "role must be one of none, user, admin"},
			{"request-access with a form body", http.MethodPost, requestAccessPath(e.alice.ID, "app"), "email=a", "application/x-www-form-urlencoded", alice, 415, "Content-Type must be application/json"},
			{"request-access with a number for email", http.MethodPost, requestAccessPath(e.alice.ID, "app"), `{"email":5}`, "", alice, 400, "email must be a JSON string"},
			{"admin list of an unknown client", http.MethodGet, "/api/admin/apps/no-such-app/permissions", "", "", admin, 404, "application not found"},
			{"admin list with an unknown status", http.MethodGet, "/api/admin/apps/app/permissions?status=granted", "", "", admin, 400, "status must be one of pending, approved, revoked"},
			{"admin list with limit 0", http.MethodGet, "/api/admin/apps/app/permissions?limit=0", "", "", admin, 400, "limit must be between 1 and 200"},
			{"admin list with limit 201", http.MethodGet, "/api/admin/apps/app/permissions?limit=201", "", "", admin, 400, "limit must be between 1 and 200"},
			{"admin audit with a word for limit", http.MethodGet, "/api/admin/audit?limit=ten", "", "", admin, 400, "limit must be a whole number"},
			{"admin audit with a forged cursor", http.MethodGet, "/api/admin/audit?cursor=bm9wZQ", "", "", admin, 400, "cursor is not a cursor this listing returned"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req, err := http.NewRequest(c.method, e.issuer+c.path, strings.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				ct := c.contentType
				if ct == "" && c.body != "" {
					ct = "application/json"
				}
				if ct != "" {
					req.Header.Set("Content-Type", ct)
				}
				c.auth(req)
				wantAppError(t, e.send(t, req), c.status, c.message)
			})
		}
		t.Run("401 carries a Bearer challenge", func(t *testing.T) {
			r := e.sendJSON(t, http.MethodGet, path, "", bearer("garbage"))
			if got := r.header.Get("WWW-Authenticate"); got != `Bearer error="invalid_token"` {
				t.Errorf("WWW-Authenticate: got %q", got)
			}
			r = e.sendJSON(t, http.MethodGet, path, "", nil)
			if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
				t.Errorf("WWW-Authenticate without credentials: got %q", got)
			}
		})
		t.Run("a refresh token is no bearer token", func(t *testing.T) {
			wantAppError(t, e.sendJSON(t, http.MethodGet, path, "", bearer(aliceTokens.RefreshToken)), 401, badToken.message)
		})
	})
}

// TestPermissionLifecycle follows one record through its whole life with real tokens from
// real flows: alice logs in to app and asks for access (201, then 200), app approves her as
// a user with its client token, an admin promotes her to admin, her request is now refused
// (409), app revokes her — which also kills her tokens for app — and a new request after
// logging in again is pending again. Every change is in the audit log an admin reads.
func TestPermissionLifecycle(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		alice, path := e.alice.ID, recordPath(e.alice.ID, "app")
		br := e.browser(t)
		tok := e.userToken(t, br, e.app, e.alice.Email)
		aliceBearer := bearer(tok.AccessToken)
		manager := bearer(e.clientToken(t, e.app, "manage_permissions"))
		admin := e.publicSession(t, e.admin.Email)

		wantAppError(t, e.sendJSON(t, http.MethodGet, path, "", aliceBearer), 404, "no permission record for this user and application")

		r := e.sendJSON(t, http.MethodPost, requestAccessPath(alice, "app"), `{"email": "alice@example.com", "name": "Alice Example"}`, aliceBearer)
		if r.status != http.StatusCreated || r.body["message"] != "access requested" {
			t.Fatalf("request-access: got %s, want 201 access requested", r)
		}
		first := wantRecord(t, r.body["permission"].(map[string]any), alice, "app", appName, "pending", "none", nil)
		if first["requestedAt"] == nil || first["grantedAt"] != nil {
			t.Errorf("pending record: got requestedAt %v, grantedAt %v; want a request time and no grant", first["requestedAt"], first["grantedAt"])
		}

		r = e.sendJSON(t, http.MethodPost, requestAccessPath(alice, "app"), "", aliceBearer)
		if r.status != http.StatusOK || r.body["message"] != "access request already pending" {
			t.Fatalf("second request-access: got %s, want 200 already pending", r)
		}
		if again := r.body["permission"].(map[string]any); again["requestedAt"] != first["requestedAt"] || again["updatedAt"] != first["updatedAt"] {
			t.Errorf("second request-access changed the record: got %v, want %v", again, first)
		}

		r = e.sendJSON(t, http.MethodPut, path, `{"status": "approved", "role": "user"}`, manager)
		if r.status != http.StatusOK {
			t.Fatalf("app approves: got %s, want 200", r)
		}
		approved := wantRecord(t, r.body, alice, "app", appName, "approved", "user", "client:app")
		if approved["grantedAt"] == nil || approved["requestedAt"] != first["requestedAt"] || approved["createdAt"] != first["createdAt"] {
			t.Errorf("approved record: got %v, want grantedAt set and the request kept", approved)
		}
		r = e.sendJSON(t, http.MethodGet, path, "", aliceBearer)
		if r.status != http.StatusOK {
			t.Fatalf("alice reads her record: got %s", r)
		}
		wantRecord(t, r.body, alice, "app", appName, "approved", "user", "client:app")

		r = e.sendJSON(t, http.MethodPut, adminRecordPath(alice, "app"), `{"status": "approved", "role": "admin"}`, admin)
		if r.status != http.StatusOK {
			t.Fatalf("admin promotes: got %s, want 200", r)
		}
		wantRecord(t, r.body, alice, "app", appName, "approved", "admin", e.admin.ID)

		wantAppError(t, e.sendJSON(t, http.MethodPost, requestAccessPath(alice, "app"), "", aliceBearer), 409, "access is already approved")

		r = e.sendJSON(t, http.MethodDelete, path, "", manager)
		if r.status != http.StatusOK {
			t.Fatalf("app revokes: got %s, want 200", r)
		}
		wantRecord(t, r.body, alice, "app", appName, "revoked", "none", e.admin.ID)
		// Her tokens for app died with the permission.
		if got := e.introspect(t, e.app, tok.AccessToken)["active"]; got != false {
			t.Errorf("access token after revocation: introspection active %v, want false", got)
		}
		wantOAuthError(t, e.refresh(t, e.app, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
		wantAppError(t, e.sendJSON(t, http.MethodGet, path, "", aliceBearer), 401, badToken.message)

		// She logs in again (her browser session still stands) and asks anew.
		fresh := bearer(e.userToken(t, br, e.app, e.alice.Email).AccessToken)
		r = e.sendJSON(t, http.MethodGet, path, "", fresh)
		wantRecord(t, r.body, alice, "app", appName, "revoked", "none", e.admin.ID)
		r = e.sendJSON(t, http.MethodPost, requestAccessPath(alice, "app"), "", fresh)
		if r.status != http.StatusCreated {
			t.Fatalf("request-access after revocation: got %s, want 201", r)
		}
		renewed := wantRecord(t, r.body["permission"].(map[string]any), alice, "app", appName, "pending", "none", nil)
		if renewed["grantedAt"] != nil || renewed["requestedAt"] == nil {
			t.Errorf("renewed request: got %v, want a new request without a grant", renewed)
		}

		// The audit log, read in pages of two.
		type step struct{ action, actorType, actorID, before, after string }
		want := []step{
			{"request-access", "user", alice, "", "pending/none"},
			{"update", "client", "app", "pending/none", "approved/user"},
			{"update", "admin", e.admin.ID, "approved/user", "approved/admin"},
			{"revoke", "client", "app", "approved/admin", "revoked/none"},
			{"request-access", "user", alice, "revoked/none", "pending/none"},
		}
		var got []step
		cursor := ""
		for range 10 {
			q := url.Values{"userId": {alice}, "clientId": {"app"}, "limit": {"2"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			r := e.sendJSON(t, http.MethodGet, "/api/admin/audit?"+q.Encode(), "", admin)
			if r.status != http.StatusOK {
				t.Fatalf("audit: got %s", r)
			}
			for _, raw := range r.body["entries"].([]any) {
				entry := raw.(map[string]any)
				state := func(rec any) string {
					m, _ := rec.(map[string]any)
					if m == nil {
						return ""
					}
					return fmt.Sprint(m["status"], "/", m["role"])
				}
				actor := entry["actor"].(map[string]any)
				got = append(got, step{entry["action"].(string), actor["type"].(string), actor["id"].(string), state(entry["before"]), state(entry["after"])})
			}
			next, _ := r.body["nextCursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("audit log:\ngot  %v\nwant %v", got, want)
		}
		// A user who is no admin reads no audit log.
		wantAppError(t, e.sendJSON(t, http.MethodGet, "/api/admin/audit", "", e.publicSession(t, e.bob.Email)), 403, "admin role required")

		// The pending list shows her; the approved list does not.
		for status, n := range map[string]int{"pending": 1, "approved": 0, "": 1} {
			r := e.sendJSON(t, http.MethodGet, "/api/admin/apps/app/permissions?status="+status, "", admin)
			if list, _ := r.body["permissions"].([]any); r.status != http.StatusOK || len(list) != n {
				t.Errorf("list status=%q: got %s, want %d records", status, r, n)
			}
		}
	})
}

// TestPermissionRevocationTokens: a DELETE by the admin revokes the user's tokens for that
// client (and only those) unless KeepTokensOnRevoke is set.
func TestPermissionRevocationTokens(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepTokensOnRevoke=%v", keep), func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
				e := newPermEnv(t, b, provider.Config{Permissions: provider.PermissionsConfig{KeepTokensOnRevoke: keep}})
				br := e.browser(t)
				atApp := e.userToken(t, br, e.app, e.alice.Email)
				atOther := e.userToken(t, br, e.other, e.alice.Email)
				bobAtApp := e.userToken(t, e.browser(t), e.app, e.bob.Email)
				admin := e.publicSession(t, e.admin.Email)
				if r := e.sendJSON(t, http.MethodPut, adminRecordPath(e.alice.ID, "app"), `{"status":"approved","role":"user"}`, admin); r.status != http.StatusCreated {
					t.Fatalf("admin PUT of a new record: got %s, want 201", r)
				}
				r := e.sendJSON(t, http.MethodDelete, adminRecordPath(e.alice.ID, "app"), "", admin)
				if r.status != http.StatusOK {
					t.Fatalf("admin DELETE: got %s, want 200", r)
				}
				wantRecord(t, r.body, e.alice.ID, "app", appName, "revoked", "none", e.admin.ID)

				if keep {
					if got := e.introspect(t, e.app, atApp.AccessToken)["active"]; got != true {
						t.Errorf("alice's access token at app: active %v, want true (tokens kept)", got)
					}
					if r := e.refresh(t, e.app, atApp.RefreshToken); r.status != http.StatusOK {
						t.Errorf("alice's refresh at app: got %s, want 200 (tokens kept)", r)
					}
				} else {
					wantRefused(t, e.env, e.app, atApp.AccessToken)
					wantOAuthError(t, e.refresh(t, e.app, atApp.RefreshToken), http.StatusBadRequest, "invalid_grant")
				}
				// Tokens of another client, or of another user, are never touched.
				if got := e.introspect(t, e.other, atOther.AccessToken)["active"]; got != true {
					t.Errorf("alice's access token at other: active %v, want true", got)
				}
				if got := e.introspect(t, e.app, bobAtApp.AccessToken)["active"]; got != true {
					t.Errorf("bob's access token at app: active %v, want true", got)
				}
			})
		})
	}
}

// TestConcurrentPermissionPuts: 50 PUTs of one pair at once, with different states, leave
// exactly one record, in one of the states written; exactly one of them created it, and
// each left one audit entry.
func TestConcurrentPermissionPuts(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		manager := bearer(e.clientToken(t, e.app, "manage_permissions"))
		admin := e.publicSession(t, e.admin.Email)
		path := recordPath(e.alice.ID, "app")
		states := [][2]string{{"approved", "user"}, {"approved", "admin"}, {"pending", "none"}, {"revoked", "none"}, {"approved", "none"}}
		const writers = 50
		statuses := make([]int, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range writers {
			wg.Go(func() {
				<-start
				st := states[i%len(states)]
				req, _ := http.NewRequest(http.MethodPut, e.issuer+path, strings.NewReader(fmt.Sprintf(`{"status":%q,"role":%q}`, st[0], st[1])))
				req.Header.Set("Content-Type", "application/json")
				manager(req)
				res, err := e.back.Do(req)
				if err != nil {
					return // statuses[i] stays 0 and is reported below
				}
				res.Body.Close()
				statuses[i] = res.StatusCode
			})
		}
		close(start)
		wg.Wait()
		created := 0
		for i, s := range statuses {
			switch s {
			case http.StatusCreated:
				created++
			case http.StatusOK:
			default:
				t.Errorf("PUT #%d: got status %d, want 200 or 201", i, s)
			}
		}
		if created != 1 {
			t.Errorf("got %d PUTs answered 201, want exactly 1", created)
		}
		r := e.sendJSON(t, http.MethodGet, path, "", manager)
		final := [2]string{fmt.Sprint(r.body["status"]), fmt.Sprint(r.body["role"])}
		if r.status != http.StatusOK || !slices.Contains(states, final) {
			t.Errorf("final record: got %s, want one of the written states", r)
		}
		list := e.sendJSON(t, http.MethodGet, "/api/admin/apps/app/permissions", "", admin)
		if records, _ := list.body["permissions"].([]any); len(records) != 1 {
			t.Errorf("records of app: got %s, want exactly 1", list)
		}
		audit := e.sendJSON(t, http.MethodGet, "/api/admin/audit?limit=200&clientId=app", "", admin)
		if entries, _ := audit.body["entries"].([]any); len(entries) != writers {
			t.Errorf("audit entries: got %d, want %d", len(entries), writers)
		}
	})
}
