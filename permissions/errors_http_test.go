package permissions_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/permissions"
)

// TestRequestErrors covers the refusals that do not depend on the caller (Describe's
// table): bad bodies and parameters (400, 413, 415), unknown users, clients and records
// (404). None of them changes anything.
func TestRequestErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, permissions.Config{})
	aliceBearer, manager, admin := bearer(aliceAppToken), bearer(appManagerToken), session(rootSession)
	path := recordPath(alice, "app")
	withType := func(a auth, contentType string) auth {
		return func(r *http.Request) {
			a(r)
			r.Header.Set("Content-Type", contentType)
		}
	}
	cases := []struct {
		name, method, path, body string
		a                        auth
		status                   int
		message                  string
	}{
		{"GET without a record", http.MethodGet, path, "", aliceBearer, 404, "no permission record for this user and application"},
		{"GET of an unknown user", http.MethodGet, recordPath("nobody", "app"), "", manager, 404, "user not found"},
		{"GET of an unknown client by admin", http.MethodGet, recordPath(alice, "nope"), "", admin, 404, "application not found"},
		{"PUT for an unknown user", http.MethodPut, recordPath("nobody", "app"), `{"status":"approved","role":"user"}`, manager, 404, "user not found"},
		{"admin PUT for an unknown client", http.MethodPut, adminRecordPath(alice, "nope"), `{"status":"approved","role":"user"}`, admin, 404, "application not found"},
		{"admin DELETE for an unknown user", http.MethodDelete, adminRecordPath("nobody", "app"), "", admin, 404, "user not found"},
		{"request-access for an unknown client", http.MethodPost, requestAccessPath(alice, "nope"), "", bearer(aliceOtherToken), 403, "access token client does not match the requested client"},
		{"PUT without status", http.MethodPut, path, `{"role":"user"}`, manager, 400, "status is required"},
		{"PUT with an unknown status", http.MethodPut, path, `{"status":"granted","role":"user"}`, manager, 400, "status must be one of pending, approved, revoked"},
		{"PUT without role", http.MethodPut, path, `{"status":"approved"}`, manager, 400, "role is required"},
		{"PUT with an unknown role", http.MethodPut, path, `{"status":"approved","role":"owner"}`, manager, 400, "role must be one of none, user, admin"},
		{"PUT with a number for status", http.MethodPut, path, `{"status":1,"role":"user"}`, manager, 400, "status must be a JSON string"},
		{"PUT with broken JSON", http.MethodPut, path, `{"status":`, manager, 400, "request body is not valid JSON"},
		{"PUT as a form", http.MethodPut, path, "status=approved&role=user", withType(manager, "application/x-www-form-urlencoded"), 415, "Content-Type must be application/json"},
		{"PUT of 17 KiB", http.MethodPut, path, `{"status":"approved","role":"user","pad":"` + strings.Repeat("x", 17<<10) + `"}`, manager, 413, "request body must be at most 16384 bytes"},
		{"request-access with a number for email", http.MethodPost, requestAccessPath(alice, "app"), `{"email":5}`, aliceBearer, 400, "email must be a JSON string"},
		{"admin list of an unknown client", http.MethodGet, "/api/admin/apps/nope/permissions", "", admin, 404, "application not found"},
		{"admin list with an unknown status", http.MethodGet, "/api/admin/apps/app/permissions?status=granted", "", admin, 400, "status must be one of pending, approved, revoked"},
		{"admin list with limit 0", http.MethodGet, "/api/admin/apps/app/permissions?limit=0", "", admin, 400, "limit must be between 1 and 200"},
		{"admin list with limit 201", http.MethodGet, "/api/admin/apps/app/permissions?limit=201", "", admin, 400, "limit must be between 1 and 200"},
		{"admin list with a forged cursor", http.MethodGet, "/api/admin/apps/app/permissions?cursor=bm9wZQ", "", admin, 400, "cursor is not a cursor this listing returned"},
		{"admin audit with a word for limit", http.MethodGet, "/api/admin/audit?limit=ten", "", admin, 400, "limit must be a whole number"},
		{"admin audit with a forged cursor", http.MethodGet, "/api/admin/audit?cursor=bm9wZQ", "", admin, 400, "cursor is not a cursor this listing returned"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, e.send(t, c.method, c.path, c.body, c.a), c.status, c.message)
		})
	}
	if st := e.store.snapshot(); len(st.records) != 0 || len(st.audit) != 0 {
		t.Errorf("refused requests left %d records and %d audit entries", len(st.records), len(st.audit))
	}
}

// TestNewNeedsItsCollaborators: New refuses a missing collaborator and a BaseURL that is no
// absolute http(s) URL (the same-origin guard needs it).
func TestNewNeedsItsCollaborators(t *testing.T) {
	t.Parallel()
	s := newMemStore()
	ok := permissions.Config{BaseURL: "https://sso.example"}
	for _, c := range []struct {
		name  string
		cfg   permissions.Config
		store permissions.Store
		toks  permissions.Tokens
		adm   permissions.Admins
		dir   permissions.Directory
	}{
		{"no store", ok, nil, s, memAdmins{s}, s},
		{"no tokens", ok, s, nil, memAdmins{s}, s},
		{"no admins", ok, s, s, nil, s},
		{"no directory", ok, s, s, memAdmins{s}, nil},
		{"no BaseURL", permissions.Config{}, s, s, memAdmins{s}, s},
		{"relative BaseURL", permissions.Config{BaseURL: "/sso"}, s, s, memAdmins{s}, s},
	} {
		if _, err := permissions.New(c.cfg, c.store, c.toks, c.adm, c.dir); err == nil {
			t.Errorf("%s: New succeeded", c.name)
		}
	}
	if _, err := permissions.New(ok, s, s, memAdmins{s}, s); err != nil {
		t.Errorf("complete: %v", err)
	}
}
