package permissions_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/permissions"
)

// TestLifecycle follows alice's record at app through the whole state machine (SSO
// interface §3, DESIGN §4) over HTTP: a request (201, then 200 unchanged), a client
// approval (grantedAt/grantedBy stamped), an admin promotion, a refused request (409), a
// client revocation that also kills her tokens for app only, and a fresh request after
// it. Every change, and nothing else, lands in the audit log.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, permissions.Config{})
	path := recordPath(alice, "app")
	aliceBearer, manager, admin := bearer(aliceAppToken), bearer(appManagerToken), session(rootSession)

	wantError(t, e.send(t, http.MethodGet, path, "", aliceBearer), 404, "no permission record for this user and application")

	requested := e.clock.Now()
	r := e.send(t, http.MethodPost, requestAccessPath(alice, "app"), `{"email": "alice@example.com", "name": "Alice"}`, aliceBearer)
	if r.status != http.StatusCreated || r.body["message"] != "access requested" {
		t.Fatalf("first request: got %s, want 201 access requested", r)
	}
	rec := wantRecord(t, r.body["permission"].(map[string]any), alice, "app", "pending", "none", nil)
	if rec["requestedAt"] != at(requested) || rec["grantedAt"] != nil || rec["createdAt"] != at(requested) {
		t.Errorf("first request: got %v, want requestedAt and createdAt %s, no grantedAt", rec, at(requested))
	}

	e.clock.advance(time.Minute)
	r = e.send(t, http.MethodPost, requestAccessPath(alice, "app"), "", aliceBearer)
	if r.status != http.StatusOK || r.body["message"] != "access request already pending" {
		t.Fatalf("second request: got %s, want 200 already pending", r)
	}
	if rec := r.body["permission"].(map[string]any); rec["requestedAt"] != at(requested) || rec["updatedAt"] != at(requested) {
		t.Errorf("second request changed the record: got %v", rec)
	}

	e.clock.advance(time.Minute)
	approved := e.clock.Now()
	r = e.send(t, http.MethodPut, path, `{"status": "approved", "role": "user"}`, manager)
	if r.status != http.StatusOK {
		t.Fatalf("client approval of an existing record: got %s, want 200", r)
	}
	rec = wantRecord(t, r.body, alice, "app", "approved", "user", "client:app")
	if rec["grantedAt"] != at(approved) || rec["requestedAt"] != at(requested) || rec["updatedAt"] != at(approved) {
		t.Errorf("client approval: got %v, want grantedAt %s and the request kept", rec, at(approved))
	}
	if got := e.send(t, http.MethodGet, path, "", aliceBearer); got.status != http.StatusOK || got.raw != r.raw {
		t.Errorf("read after approval: got %s, want what the PUT answered %s", got, r.raw)
	}

	e.clock.advance(time.Minute)
	promoted := e.clock.Now()
	r = e.send(t, http.MethodPut, adminRecordPath(alice, "app"), `{"status": "approved", "role": "admin"}`, admin)
	if r.status != http.StatusOK {
		t.Fatalf("admin promotion: got %s", r)
	}
	if rec := wantRecord(t, r.body, alice, "app", "approved", "admin", root); rec["grantedAt"] != at(promoted) {
		t.Errorf("admin promotion: grantedAt %v, want %s", rec["grantedAt"], at(promoted))
	}

	wantError(t, e.send(t, http.MethodPost, requestAccessPath(alice, "app"), "", aliceBearer), 409, "access is already approved")

	e.clock.advance(time.Minute)
	r = e.send(t, http.MethodDelete, path, "", manager)
	if r.status != http.StatusOK {
		t.Fatalf("client revocation: got %s", r)
	}
	if rec := wantRecord(t, r.body, alice, "app", "revoked", "none", root); rec["grantedAt"] != at(promoted) {
		t.Errorf("revocation: got %v, want the last grant kept", rec)
	}
	// Her tokens for app are gone; those for other and bob's for app are not.
	wantError(t, e.send(t, http.MethodGet, path, "", aliceBearer), 401, "access token is invalid, expired or revoked")
	wantError(t, e.send(t, http.MethodGet, path, "", bearer(aliceAppScopedToken)), 401, "access token is invalid, expired or revoked")
	wantError(t, e.send(t, http.MethodGet, recordPath(alice, "other"), "", bearer(aliceOtherToken)), 404, "no permission record for this user and application")
	wantError(t, e.send(t, http.MethodGet, recordPath(bob, "app"), "", bearer(bobAppToken)), 404, "no permission record for this user and application")

	// After logging in again she asks afresh: pending, the old grant cleared.
	e.store.seed(func(st *memState) {
		st.tokens["alice-app-again"] = permissions.TokenInfo{Subject: alice, ClientID: "app", UserBound: true}
	})
	e.clock.advance(time.Minute)
	again := e.clock.Now()
	r = e.send(t, http.MethodPost, requestAccessPath(alice, "app"), "", bearer("alice-app-again"))
	if r.status != http.StatusCreated {
		t.Fatalf("request after revocation: got %s, want 201", r)
	}
	if rec := wantRecord(t, r.body["permission"].(map[string]any), alice, "app", "pending", "none", nil); rec["grantedAt"] != nil ||
		rec["requestedAt"] != at(again) || rec["createdAt"] != at(requested) {
		t.Errorf("request after revocation: got %v, want a fresh request on the same record", rec)
	}

	r = e.send(t, http.MethodGet, "/api/admin/audit?userId="+alice+"&clientId=app", "", admin)
	entries, _ := r.body["entries"].([]any)
	want := []struct{ action, actorType, actorID, before, after string }{
		{"request-access", "user", alice, "", "pending"},
		{"update", "client", "app", "pending", "approved"},
		{"update", "admin", root, "approved", "approved"},
		{"revoke", "client", "app", "approved", "revoked"},
		{"request-access", "user", alice, "revoked", "pending"},
	}
	if len(entries) != len(want) {
		t.Fatalf("audit: got %s, want %d entries", r.raw, len(want))
	}
	for i, w := range want {
		got := entries[i].(map[string]any)
		actor := got["actor"].(map[string]any)
		before, _ := got["before"].(map[string]any)
		after := got["after"].(map[string]any)
		beforeStatus, _ := before["status"].(string)
		if got["action"] != w.action || actor["type"] != w.actorType || actor["id"] != w.actorID ||
			beforeStatus != w.before || after["status"] != w.after || got["userId"] != alice || got["clientId"] != "app" {
			t.Errorf("audit entry %d: got %v, want %+v", i, got, w)
		}
	}
}

// TestPutStates: a PUT may set any status and role; hasAccess is approved && role != none,
// an approval stamps grantedAt/grantedBy and nothing else does, the first PUT creates
// (201) and the next updates (200).
func TestPutStates(t *testing.T) {
	t.Parallel()
	for _, status := range []string{permissions.StatusPending, permissions.StatusApproved, permissions.StatusRevoked} {
		for _, role := range []string{permissions.RoleNone, permissions.RoleUser, permissions.RoleAdmin} {
			for _, by := range []struct {
				name, path string
				a          auth
				grantedBy  string
			}{
				{"client", recordPath(bob, "app"), bearer(appManagerToken), "client:app"},
				{"admin", adminRecordPath(bob, "app"), session(rootSession), root},
			} {
				t.Run(status+"/"+role+"/"+by.name, func(t *testing.T) {
					t.Parallel()
					e := newEnv(t, permissions.Config{})
					body := fmt.Sprintf(`{"status": %q, "role": %q}`, status, role)
					var grantedBy any
					if status == permissions.StatusApproved {
						grantedBy = by.grantedBy
					}
					for i, wantStatus := range []int{http.StatusCreated, http.StatusOK} {
						r := e.send(t, http.MethodPut, by.path, body, by.a)
						if r.status != wantStatus {
							t.Fatalf("PUT %d: got %s, want %d", i+1, r, wantStatus)
						}
						rec := wantRecord(t, r.body, bob, "app", status, role, grantedBy)
						if (rec["grantedAt"] != nil) != (grantedBy != nil) || rec["requestedAt"] != nil {
							t.Errorf("PUT %d: got %v, want grantedAt only on approval, no requestedAt", i+1, rec)
						}
					}
				})
			}
		}
	}
}

// TestRevokeCreatesAndKeepsTokensWhenConfigured: a DELETE of a pair without a record
// leaves a revoked record (200), and with KeepTokensOnRevoke the user's tokens live on.
func TestRevokeCreatesAndKeepsTokensWhenConfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, permissions.Config{KeepTokensOnRevoke: true})
	r := e.send(t, http.MethodDelete, adminRecordPath(alice, "app"), "", session(rootSession))
	if r.status != http.StatusOK {
		t.Fatalf("DELETE without a record: got %s, want 200", r)
	}
	wantRecord(t, r.body, alice, "app", "revoked", "none", nil)
	if got := e.send(t, http.MethodGet, recordPath(alice, "app"), "", bearer(aliceAppToken)); got.status != http.StatusOK {
		t.Errorf("alice's token after a revocation with KeepTokensOnRevoke: got %s, want it still valid", got)
	}
}

// unavailable is a database failure that says it is temporary (httpjson.Unavailable).
type unavailable struct{ error }

func (unavailable) Unavailable() bool { return true }

// TestChangeIsOneTransaction: when writing the audit entry fails, the record change of the
// same transaction is rolled back; the failure is a logged 500, or a 503 with Retry-After
// when the store says it is temporary.
func TestChangeIsOneTransaction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		err     error
		status  int
		message string
	}{
		{"store failure", errors.New("disk full"), 500, "internal error"},
		{"store unavailable", unavailable{errors.New("connection refused")}, 503, "service temporarily unavailable, try again shortly"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, permissions.Config{})
			e.store.setFailures(c.err, nil)
			wantError(t, e.send(t, http.MethodPut, recordPath(alice, "app"), `{"status": "approved", "role": "user"}`, bearer(appManagerToken)), c.status, c.message)
			wantError(t, e.send(t, http.MethodPost, requestAccessPath(alice, "app"), "", bearer(aliceAppToken)), c.status, c.message)
			if st := e.store.snapshot(); len(st.records) != 0 || len(st.audit) != 0 {
				t.Errorf("after the failed changes: %d records, %d audit entries; want none", len(st.records), len(st.audit))
			}
			r := e.send(t, http.MethodDelete, recordPath(alice, "app"), "", bearer(appManagerToken))
			if r.status != c.status {
				t.Fatalf("DELETE: got %s, want %d", r, c.status)
			}
			if _, ok := e.store.snapshot().tokens[aliceAppToken]; !ok {
				t.Error("a failed revocation revoked alice's token")
			}
			if c.status == 503 && r.header.Get("Retry-After") != "5" {
				t.Errorf("503 without Retry-After: %v", r.header)
			}
			logged := e.logged()
			if c.status == 500 && !strings.Contains(logged, "disk full") {
				t.Errorf("the 500 was not logged: %q", logged)
			}
			if c.status == 503 && logged != "" {
				t.Errorf("a 503 was logged as an internal error: %q", logged)
			}
		})
	}
}

// TestLostInsertRaceIsRetried: when another transaction inserts the record between this
// change's read and its insert, the change is retried, finds that record and updates it
// (200, its audit entry showing the other's record as before).
func TestLostInsertRaceIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, permissions.Config{})
	requested := t0.Add(-time.Hour)
	e.store.setFailures(nil, &permissions.Record{UserID: alice, ClientID: "app", Status: permissions.StatusPending,
		Role: permissions.RoleNone, RequestedAt: &requested, CreatedAt: requested, UpdatedAt: requested})
	r := e.send(t, http.MethodPut, adminRecordPath(alice, "app"), `{"status": "approved", "role": "user"}`, session(rootSession))
	if r.status != http.StatusOK {
		t.Fatalf("PUT that lost the insert race: got %s, want 200 (an update of the winner's record)", r)
	}
	if rec := wantRecord(t, r.body, alice, "app", "approved", "user", root); rec["requestedAt"] != at(requested) || rec["createdAt"] != at(requested) {
		t.Errorf("got %v, want the winner's record updated", rec)
	}
	st := e.store.snapshot()
	if len(st.audit) != 1 || st.audit[0].Before == nil || st.audit[0].Before.Status != permissions.StatusPending {
		t.Errorf("audit: got %d entries, want one whose before is the winner's pending record", len(st.audit))
	}
}

// TestConcurrentChanges: concurrent PUTs of one new record end with one record, created
// once (one 201), and one audit entry per change.
func TestConcurrentChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, permissions.Config{})
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			role := []string{"none", "user", "admin"}[i%3]
			statuses[i] = e.send(t, http.MethodPut, recordPath(bob, "app"), `{"status": "approved", "role": "`+role+`"}`, bearer(appManagerToken)).status
		})
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Errorf("got status %d, want 200 or 201", s)
		}
	}
	st := e.store.snapshot()
	if created != 1 || len(st.records) != 1 || len(st.audit) != n {
		t.Errorf("got %d created, %d records, %d audit entries; want 1, 1, %d", created, len(st.records), len(st.audit), n)
	}
}

// TestListings pages through the admin listings: oldest first, limit per page, a
// nextCursor until the last page, filters by status and by user.
func TestListings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, permissions.Config{})
	admin := session(rootSession)
	users := []string{"u1", "u2", "u3", "u4", "u5"}
	e.store.seed(func(st *memState) {
		for _, u := range users {
			st.users[u] = memUser{}
		}
	})
	for i, u := range users {
		e.clock.advance(time.Second)
		status := []string{"approved", "pending"}[i%2]
		if r := e.send(t, http.MethodPut, adminRecordPath(u, "app"), `{"status": "`+status+`", "role": "user"}`, admin); r.status != http.StatusCreated {
			t.Fatalf("PUT %s: got %s", u, r)
		}
	}
	pages := func(path, field string) [][]string {
		t.Helper()
		var out [][]string
		cursor := ""
		for range len(users) + 1 {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			p := path + sep + "limit=2"
			if cursor != "" {
				p += "&cursor=" + cursor
			}
			r := e.send(t, http.MethodGet, p, "", admin)
			if r.status != http.StatusOK {
				t.Fatalf("%s: got %s", p, r)
			}
			var page []string
			for _, item := range r.body[field].([]any) {
				page = append(page, item.(map[string]any)["userId"].(string))
			}
			out = append(out, page)
			next, _ := r.body["nextCursor"].(string)
			if next == "" {
				return out
			}
			cursor = next
		}
		t.Fatalf("%s: the cursor never ended", path)
		return nil
	}
	if got := fmt.Sprint(pages("/api/admin/apps/app/permissions", "permissions")); got != "[[u1 u2] [u3 u4] [u5]]" {
		t.Errorf("all records: got %s", got)
	}
	if got := fmt.Sprint(pages("/api/admin/apps/app/permissions?status=approved", "permissions")); got != "[[u1 u3] [u5]]" {
		t.Errorf("approved records: got %s", got)
	}
	if got := fmt.Sprint(pages("/api/admin/apps/other/permissions", "permissions")); got != "[[]]" {
		t.Errorf("records of an app without any: got %s", got)
	}
	if got := fmt.Sprint(pages("/api/admin/audit?userId=u4", "entries")); got != "[[u4]]" {
		t.Errorf("audit of u4: got %s", got)
	}
	if got := fmt.Sprint(pages("/api/admin/audit?clientId=app", "entries")); got != "[[u1 u2] [u3 u4] [u5]]" {
		t.Errorf("audit of app: got %s", got)
	}
}
