package permissions_test

import (
	"net/http"
	"testing"

	"github.com/gatehouse-id/gatehouse/permissions"
)

// outcome is the answer a cell of the access table expects: an error (status and message),
// or success (message empty) whose body the route checks.
type outcome struct {
	status  int
	message string
}

var (
	allowed         = outcome{status: http.StatusOK}
	noCredentials   = outcome{http.StatusUnauthorized, "a bearer access token is required"}
	badToken        = outcome{http.StatusUnauthorized, "access token is invalid, expired or revoked"}
	noAdminSession  = outcome{http.StatusUnauthorized, "an admin-session or public-session of an admin is required"}
	notAdmin        = outcome{http.StatusForbidden, "admin role required"}
	clientMismatch  = outcome{http.StatusForbidden, "access token client does not match the requested client"}
	subjectMismatch = outcome{http.StatusForbidden, "access token subject does not match the requested user"}
	scopeMissing    = outcome{http.StatusForbidden, "access token lacks scope manage_permissions"}
	clientTokenOnly = outcome{http.StatusForbidden, "a client token (client_credentials) is required"}
	userTokenOnly   = outcome{http.StatusForbidden, "a user-bound access token is required"}
	alreadyApproved = outcome{http.StatusConflict, "access is already approved"}
)

// accessCallers are every kind of caller of the access table.
var accessCallers = map[string]auth{
	"no credentials":                     nil,
	"unknown bearer":                     bearer("not-a-token"),
	"basic credentials":                  func(r *http.Request) { r.SetBasicAuth("app", "secret") },
	"user token":                         bearer(aliceAppToken),
	"user token with manage_permissions": bearer(aliceAppScopedToken),
	"user token of another user":         bearer(bobAppToken),
	"user token of another client":       bearer(aliceOtherToken),
	"client token":                       bearer(appManagerToken),
	"client token without scope":         bearer(appPlainToken),
	"client token of another client":     bearer(otherManagerToken),
	"admin session":                      session(rootSession),
	"session of the user":                session(aliceSession),
	"session of another user":            session(bobSession),
	"unknown session":                    session("forged"),
}

// TestAccessTable covers every route × every kind of caller through the package's own
// routes: who may call each permission route (SSO interface §4 items 15–20, §5; DESIGN §4)
// and what everyone else gets, status and body. Each cell runs on a fresh store in which
// alice's record at app is approved/user, set by app's client token.
func TestAccessTable(t *testing.T) {
	t.Parallel()
	type route struct {
		method, path, body string
		// status is the success status; check asserts its body.
		status int
		check  func(t *testing.T, r response)
	}
	putBody := `{"status": "approved", "role": "admin"}`
	routes := map[string]route{
		"GET": {http.MethodGet, recordPath(alice, "app"), "", http.StatusOK, func(t *testing.T, r response) {
			wantRecord(t, r.body, alice, "app", "approved", "user", "client:app")
		}},
		"PUT": {http.MethodPut, recordPath(alice, "app"), putBody, http.StatusOK, func(t *testing.T, r response) {
			wantRecord(t, r.body, alice, "app", "approved", "admin", "client:app")
		}},
		"DELETE": {http.MethodDelete, recordPath(alice, "app"), "", http.StatusOK, func(t *testing.T, r response) {
			wantRecord(t, r.body, alice, "app", "revoked", "none", "client:app")
		}},
		"request-access": {http.MethodPost, requestAccessPath(alice, "app"), `{"email": "alice@example.com", "name": "Alice"}`, 0, nil},
		"admin PUT": {http.MethodPut, adminRecordPath(alice, "app"), putBody, http.StatusOK, func(t *testing.T, r response) {
			wantRecord(t, r.body, alice, "app", "approved", "admin", root)
		}},
		"admin DELETE": {http.MethodDelete, adminRecordPath(alice, "app"), "", http.StatusOK, func(t *testing.T, r response) {
			wantRecord(t, r.body, alice, "app", "revoked", "none", "client:app")
		}},
		"admin list": {http.MethodGet, "/api/admin/apps/app/permissions?status=approved", "", http.StatusOK, func(t *testing.T, r response) {
			list, _ := r.body["permissions"].([]any)
			if len(list) != 1 || r.body["nextCursor"] != nil {
				t.Fatalf("got %s, want alice's one approved record and no next cursor", r.raw)
			}
			wantRecord(t, list[0].(map[string]any), alice, "app", "approved", "user", "client:app")
		}},
		"admin audit": {http.MethodGet, "/api/admin/audit?clientId=app&userId=" + alice, "", http.StatusOK, func(t *testing.T, r response) {
			if list, _ := r.body["entries"].([]any); len(list) != 1 {
				t.Errorf("got %s, want the one entry of the seeding PUT", r.raw)
			}
		}},
	}

	// table[route][caller]; the bearer routes first get what every caller without a valid
	// bearer token gets, the admin routes what every caller without an admin session gets.
	table := map[string]map[string]outcome{}
	bearerRoute := map[string]outcome{
		"no credentials": noCredentials, "unknown bearer": badToken, "basic credentials": noCredentials,
		"admin session": noCredentials, "session of the user": noCredentials, "session of another user": noCredentials,
		"unknown session": noCredentials,
	}
	adminRoute := map[string]outcome{
		"admin session": allowed, "session of the user": notAdmin, "session of another user": notAdmin,
	}
	for caller := range accessCallers {
		if _, ok := adminRoute[caller]; !ok {
			adminRoute[caller] = noAdminSession
		}
	}
	set := func(route string, base map[string]outcome, cells map[string]outcome) {
		table[route] = map[string]outcome{}
		for caller, o := range base {
			table[route][caller] = o
		}
		for caller, o := range cells {
			table[route][caller] = o
		}
	}
	set("GET", bearerRoute, map[string]outcome{
		"user token": allowed, "user token with manage_permissions": allowed, "user token of another user": subjectMismatch,
		"user token of another client": clientMismatch, "client token": allowed, "client token without scope": scopeMissing,
		"client token of another client": clientMismatch,
		// Without a bearer token a GET may come from an admin session.
		"admin session": allowed, "session of the user": notAdmin, "session of another user": notAdmin,
	})
	for _, name := range []string{"PUT", "DELETE"} {
		set(name, bearerRoute, map[string]outcome{
			"user token": clientTokenOnly, "user token with manage_permissions": clientTokenOnly,
			"user token of another user": clientTokenOnly, "user token of another client": clientMismatch,
			"client token": allowed, "client token without scope": scopeMissing, "client token of another client": clientMismatch,
		})
	}
	set("request-access", bearerRoute, map[string]outcome{
		"user token": alreadyApproved, "user token with manage_permissions": alreadyApproved,
		"user token of another user": subjectMismatch, "user token of another client": clientMismatch,
		"client token": userTokenOnly, "client token without scope": userTokenOnly, "client token of another client": clientMismatch,
	})
	for _, name := range []string{"admin PUT", "admin DELETE", "admin list", "admin audit"} {
		set(name, adminRoute, nil)
	}

	for routeName, rt := range routes {
		for callerName, a := range accessCallers {
			want, ok := table[routeName][callerName]
			if !ok {
				t.Errorf("the table has no cell for %s × %s", routeName, callerName)
				continue
			}
			t.Run(routeName+"/"+callerName, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, permissions.Config{})
				if r := e.send(t, http.MethodPut, recordPath(alice, "app"), `{"status": "approved", "role": "user"}`, bearer(appManagerToken)); r.status != http.StatusCreated {
					t.Fatalf("seed: got %s", r)
				}
				before := e.store.snapshot().audit
				r := e.send(t, rt.method, rt.path, rt.body, a)
				if want.message != "" {
					wantError(t, r, want.status, want.message)
					if after := e.store.snapshot().audit; len(after) != len(before) {
						t.Errorf("a refused call changed the audit log: %d entries, want %d", len(after), len(before))
					}
					return
				}
				if r.status != rt.status {
					t.Fatalf("got %s, want %d", r, rt.status)
				}
				rt.check(t, r)
			})
		}
	}
}

// TestUnauthorizedChallenges: a 401 of a bearer route carries the RFC 6750 challenge.
func TestUnauthorizedChallenges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, permissions.Config{})
	for _, c := range []struct {
		name string
		a    auth
		want string
	}{
		{"no credentials", nil, "Bearer"},
		{"unknown bearer", bearer("garbage"), `Bearer error="invalid_token"`},
		{"lower-case scheme, unknown token", func(r *http.Request) { r.Header.Set("Authorization", "bearer garbage") }, `Bearer error="invalid_token"`},
	} {
		r := e.send(t, http.MethodGet, recordPath(alice, "app"), "", c.a)
		if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != c.want {
			t.Errorf("%s: got %d, WWW-Authenticate %q; want 401, %q", c.name, r.status, r.header.Get("WWW-Authenticate"), c.want)
		}
	}
	if r := e.send(t, http.MethodGet, recordPath(alice, "app"), "", func(r *http.Request) {
		r.Header.Set("Authorization", "bEaReR "+aliceAppToken)
	}); r.status != http.StatusNotFound {
		t.Errorf("a valid token under a mixed-case scheme: got %s, want 404 (no record yet)", r)
	}
}

// TestCookieChangesMustBeSameOrigin: a change made with a session cookie from another
// origin is refused before anything happens; from the deployment's own origin it goes
// through.
func TestCookieChangesMustBeSameOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, permissions.Config{})
	fromOrigin := func(origin string) auth {
		return func(r *http.Request) {
			session(rootSession)(r)
			r.Header.Set("Origin", origin)
		}
	}
	body := `{"status": "approved", "role": "user"}`
	r := e.send(t, http.MethodPut, adminRecordPath(alice, "app"), body, fromOrigin("https://evil.example"))
	if r.status != http.StatusForbidden {
		t.Fatalf("cross-origin admin PUT: got %s, want 403", r)
	}
	if got := e.send(t, http.MethodGet, recordPath(alice, "app"), "", session(rootSession)); got.status != http.StatusNotFound {
		t.Fatalf("after the refused PUT: got %s, want no record", got)
	}
	if r := e.send(t, http.MethodPut, adminRecordPath(alice, "app"), body, fromOrigin(e.url)); r.status != http.StatusCreated {
		t.Fatalf("same-origin admin PUT: got %s, want 201", r)
	}
}
