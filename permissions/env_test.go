package permissions_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/permissions"
)

// t0 is the start of the test clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// testClock is a settable clock.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Names of the env's users, applications, tokens and sessions.
const (
	alice, bob, root = "alice-id", "bob-id", "root-id"
	appName          = "The App"

	aliceAppToken       = "alice-app-token"        // user-bound: alice at app
	aliceAppScopedToken = "alice-app-scoped-token" // user-bound with manage_permissions
	aliceOtherToken     = "alice-other-token"      // user-bound: alice at other
	bobAppToken         = "bob-app-token"          // user-bound: bob at app
	appManagerToken     = "app-manager-token"      // client token of app with manage_permissions
	appPlainToken       = "app-plain-token"        // client token of app without it
	otherManagerToken   = "other-manager-token"    // client token of other with manage_permissions
	rootSession         = "root-session"           // admin session of root
	aliceSession        = "alice-session"          // session of alice, no admin
	bobSession          = "bob-session"            // session of bob, no admin
	otherAppName        = "The Other App"
)

// env is a Service over a memStore, served through Routes by a real HTTP server on
// 127.0.0.1.
type env struct {
	store *memStore
	clock *testClock
	// logPath is the file the service logs to: the test reads it without sharing memory
	// with the server goroutines.
	logPath string
	url     string
}

func newEnv(t *testing.T, cfg permissions.Config) *env {
	t.Helper()
	store := newMemStore()
	store.seed(func(st *memState) {
		st.users[alice], st.users[bob], st.users[root] = memUser{}, memUser{}, memUser{admin: true}
		st.apps["app"], st.apps["other"] = appName, otherAppName
		st.tokens[aliceAppToken] = permissions.TokenInfo{Subject: alice, ClientID: "app", UserBound: true, Scopes: []string{"openid"}}
		st.tokens[aliceAppScopedToken] = permissions.TokenInfo{Subject: alice, ClientID: "app", UserBound: true,
			Scopes: []string{"openid", permissions.ScopeManagePermissions}}
		st.tokens[aliceOtherToken] = permissions.TokenInfo{Subject: alice, ClientID: "other", UserBound: true}
		st.tokens[bobAppToken] = permissions.TokenInfo{Subject: bob, ClientID: "app", UserBound: true}
		st.tokens[appManagerToken] = permissions.TokenInfo{Subject: "app", ClientID: "app", Scopes: []string{permissions.ScopeManagePermissions}}
		st.tokens[appPlainToken] = permissions.TokenInfo{Subject: "app", ClientID: "app", Scopes: []string{"openid"}}
		st.tokens[otherManagerToken] = permissions.TokenInfo{Subject: "other", ClientID: "other", Scopes: []string{permissions.ScopeManagePermissions}}
		st.sessions[rootSession], st.sessions[aliceSession], st.sessions[bobSession] = root, alice, bob
	})
	router := mux.NewRouter()
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL
	e := &env{store: store, clock: &testClock{now: t0}, url: srv.URL}
	logFile, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	e.logPath = logFile.Name()
	logger := slog.New(slog.NewTextHandler(logFile, nil))
	svc, err := permissions.New(cfg, store, store, memAdmins{store}, store,
		permissions.WithClock(e.clock.Now), permissions.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	svc.Routes(router)
	return e
}

// auth sets a request's credentials.
type auth func(*http.Request)

func bearer(token string) auth {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func session(value string) auth {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: adminCookie, Value: value}) }
}

// response is an answer of the service, its body decoded.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r response) String() string { return http.StatusText(r.status) + " " + r.raw }

// send makes one request; a non-empty body is sent as JSON.
func (e *env) send(t *testing.T, method, path, body string, a auth) response {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if a != nil {
		a(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("%s %s: body is no JSON object: %q", method, path, raw)
	}
	return r
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

// wantError checks an answer in the spec's error shape.
func wantError(t *testing.T, r response, status int, message string) {
	t.Helper()
	if r.status != status || r.body["error"] != http.StatusText(status) || r.body["message"] != message {
		t.Fatalf("got %d %s, want %d %q", r.status, r.raw, status, message)
	}
}

// wantRecord checks a record view's identity, state and the hasAccess rule, and returns it.
func wantRecord(t *testing.T, rec map[string]any, userID, clientID, status, role string, grantedBy any) map[string]any {
	t.Helper()
	wantName := appName
	if clientID == "other" {
		wantName = otherAppName
	}
	hasAccess := status == permissions.StatusApproved && role != permissions.RoleNone
	if rec["userId"] != userID || rec["clientId"] != clientID || rec["appName"] != wantName ||
		rec["status"] != status || rec["role"] != role || rec["hasAccess"] != hasAccess || rec["grantedBy"] != grantedBy {
		t.Fatalf("record: got %v, want %s at %s (%s) %s/%s hasAccess %v grantedBy %v",
			rec, userID, clientID, wantName, status, role, hasAccess, grantedBy)
	}
	for _, field := range []string{"createdAt", "updatedAt"} {
		if _, err := time.Parse(time.RFC3339, rec[field].(string)); err != nil {
			t.Errorf("%s: %v", field, err)
		}
	}
	return rec
}

// at is the RFC 3339 form of t, as the API writes timestamps.
func at(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// logged is what the service has logged so far.
func (e *env) logged() string {
	b, _ := os.ReadFile(e.logPath)
	return string(b)
}
