package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// auditEvent is one event of GET /api/admin/events or /api/public/me/events.
type auditEvent struct {
	ID        string          `json:"id"`
	At        string          `json:"at"`
	Type      string          `json:"type"`
	UserID    *string         `json:"userId"`
	ClientID  *string         `json:"clientId"`
	IP        *string         `json:"ip"`
	UserAgent string          `json:"userAgent"`
	Method    string          `json:"method"`
	Outcome   string          `json:"outcome"`
	Details   json.RawMessage `json:"details"`
}

// listAudit reads every event of path (a listing with its query) through pages of two,
// following nextCursor, and fails the test on any answer but 200.
func (e *permEnv) listAudit(t *testing.T, path string, auth func(*http.Request)) []auditEvent {
	t.Helper()
	var out []auditEvent
	cursor := ""
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for range 500 {
		r := e.sendJSON(t, http.MethodGet, path+sep+"limit=2&cursor="+url.QueryEscape(cursor), "", auth)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: got %s, want 200", path, r)
		}
		var page struct {
			Events     []auditEvent `json:"events"`
			NextCursor *string      `json:"nextCursor"`
		}
		if err := json.Unmarshal([]byte(r.raw), &page); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, r.raw)
		}
		out = append(out, page.Events...)
		if page.NextCursor == nil {
			return out
		}
		cursor = *page.NextCursor
	}
	t.Fatalf("GET %s: paging did not end", path)
	return nil
}

// TestAuditTrailOverHTTP: each change a user, an admin or an operator makes leaves exactly
// its security events, in order, listed by GET /api/admin/events with its filters and, for
// the user's own, by GET /api/public/me/events, never another user's; failed logins carry
// no typed address; both listings want their session and answer bad input in the JSON
// error shape.
func TestAuditTrailOverHTTP(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		mail := smtptest.Start(t)
		e := newPermEnv(t, b, provider.Config{
			PublicAuth: provider.PublicAuthConfig{SMTPURL: mail.URL(), MailFrom: "Gatehouse <no-reply@example.com>"},
		})
		ctx := context.Background()
		names := map[string]string{e.alice.ID: "alice", e.bob.ID: "bob", e.admin.ID: "root"}
		name := func(id *string) string {
			if id == nil {
				return "-"
			}
			if n, ok := names[*id]; ok {
				return n
			}
			return *id
		}
		// describe writes an event down as "type user client method outcome via", via
		// http for a request of this test (127.0.0.1 and Go's user agent), go for a call
		// from Go (no address, no user agent).
		describe := func(ev auditEvent) string {
			via := "go"
			if ev.IP != nil {
				via = "http"
				if *ev.IP != "127.0.0.1" || !strings.HasPrefix(ev.UserAgent, "Go-http-client/") {
					via = "http from " + *ev.IP + " " + ev.UserAgent
				}
			} else if ev.UserAgent != "" {
				via = "go with user agent " + ev.UserAgent
			}
			or := func(s string) string {
				if s == "" {
					return "-"
				}
				return s
			}
			return strings.Join([]string{ev.Type, name(ev.UserID), name(ev.ClientID), or(ev.Method), or(ev.Outcome), via}, " ")
		}
		admin := e.adminSession(t, e.admin.Email)
		seen := len(e.listAudit(t, "/api/admin/events", admin))
		step := func(what string, want ...string) []auditEvent {
			t.Helper()
			all := e.listAudit(t, "/api/admin/events", admin)
			got := all[seen:]
			seen = len(all)
			lines := []string{}
			for _, ev := range got {
				lines = append(lines, describe(ev))
			}
			if !slices.Equal(lines, want) {
				t.Errorf("%s: events\n\t%s\nwant\n\t%s", what, strings.Join(lines, "\n\t"), strings.Join(want, "\n\t"))
			}
			return got
		}

		for _, login := range []struct{ email, password string }{
			{e.alice.Email, "not alice's password"}, {"nobody@example.com", "a password typed"},
		} {
			r := e.sendJSON(t, http.MethodPost, "/api/public/login", fmt.Sprintf(`{"email": %q, "password": %q}`, login.email, login.password), nil)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("login as %s with a wrong password: got %s, want 401", login.email, r)
			}
		}
		for _, ev := range step("failed logins: a known account, an unknown one",
			"login.failed alice - password bad_credentials http",
			"login.failed - - password bad_credentials http") {
			if raw, _ := json.Marshal(ev); strings.Contains(string(raw), "nobody") || strings.Contains(string(raw), "password typed") ||
				strings.Contains(string(raw), "not alice") {
				t.Errorf("a failed login's event carries what was typed: %s", raw)
			}
		}

		e.publicSession(t, e.alice.Email)
		step("a password login", "login.succeeded alice - password succeeded http")

		if r := e.sendJSON(t, http.MethodPost, "/api/public/request-password-reset", fmt.Sprintf(`{"email": %q}`, e.alice.Email), nil); r.status != http.StatusOK {
			t.Fatalf("request-password-reset: got %s, want 200", r)
		}
		resetToken := tokenOf(t, e.mailedLink(t, mail, e.alice.Email, publicauth.PathResetPassword))
		if r := e.sendJSON(t, http.MethodPost, "/api/public/reset-password", fmt.Sprintf(`{"token": %q, "password": %q}`, resetToken, testPassword), nil); r.status != http.StatusOK {
			t.Fatalf("reset-password: got %s, want 200", r)
		}
		step("a password reset",
			"password.reset alice - - - http",
			"token.family_revoked alice - - password_reset http",
			"consent.withdrawn alice - - password_reset http")

		third, err := e.p.CreateClient(ctx, provider.ClientSpec{ID: "third", Name: "Third Party",
			RedirectURIs: []string{rpRedirectURI}, Scopes: []string{"openid", "profile"}})
		if err != nil {
			t.Fatal(err)
		}
		step("an operator registers a client", "client.created - third - created go")
		br := e.browser(t)
		e.relyingParty(t, third, "openid", "profile").signIn(t, e.env, br, e.alice.Email)
		step("a sign-in at a third-party client, with consent",
			"login.succeeded alice - password succeeded http",
			"consent.granted alice third - - http")

		if r := e.sendJSON(t, http.MethodPut, adminRecordPath(e.alice.ID, "app"), `{"status":"approved","role":"user"}`, admin); r.status/100 != 2 {
			t.Fatalf("admin PUT permission: got %s, want 2xx", r)
		}
		step("an admin grants a permission", "permission.changed alice app - update http")

		name2 := "Third Party, renamed"
		if _, err := e.p.UpdateClient(ctx, "third", provider.ClientUpdate{Name: &name2}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.p.RotateClientSecret(ctx, "third"); err != nil {
			t.Fatal(err)
		}
		if err := e.p.DeleteClient(ctx, "third"); err != nil {
			t.Fatal(err)
		}
		step("an operator changes, rekeys and deletes the client",
			"client.updated - third - updated go",
			"client.secret_rotated - third - secret_rotated go",
			"client.deleted - third - deleted go")
		if _, err := e.p.UpdateClient(ctx, "third", provider.ClientUpdate{Name: &name2}); err == nil {
			t.Fatal("UpdateClient of a deleted client succeeded")
		}
		step("a change that failed leaves nothing")

		if _, err := e.p.RotateKeys(ctx); err != nil {
			t.Fatal(err)
		}
		for _, ev := range step("an operator rotates the signing keys",
			"key.added - - - - go", "key.added - - - - go", "key.added - - - - go") {
			var d struct {
				KID, Alg string
			}
			if err := json.Unmarshal(ev.Details, &d); err != nil || d.KID == "" || d.Alg == "" {
				t.Errorf("key.added details: %s, want the kid and alg", ev.Details)
			}
		}

		// The reset ended alice's sessions: she logs in again.
		alice := e.publicSession(t, e.alice.Email)
		bob := e.publicSession(t, e.bob.Email)
		step("alice and bob log in", "login.succeeded alice - password succeeded http", "login.succeeded bob - password succeeded http")

		t.Run("admin filters", func(t *testing.T) {
			tests := []struct {
				query string
				want  func(auditEvent) bool
			}{
				{"type=login.failed", func(ev auditEvent) bool { return ev.Type == "login.failed" }},
				{"type=client.*", func(ev auditEvent) bool { return strings.HasPrefix(ev.Type, "client.") }},
				{"userId=" + e.alice.ID, func(ev auditEvent) bool { return name(ev.UserID) == "alice" }},
				{"clientId=third", func(ev auditEvent) bool { return name(ev.ClientID) == "third" }},
				{"type=login.succeeded&userId=" + e.bob.ID, func(ev auditEvent) bool { return ev.Type == "login.succeeded" && name(ev.UserID) == "bob" }},
				{"since=2000-01-01T00:00:00Z&until=2000-01-02T00:00:00Z", func(auditEvent) bool { return false }},
			}
			all := e.listAudit(t, "/api/admin/events", admin)
			for _, tt := range tests {
				var want []string
				for _, ev := range all {
					if tt.want(ev) {
						want = append(want, ev.ID)
					}
				}
				var got []string
				for _, ev := range e.listAudit(t, "/api/admin/events?"+tt.query, admin) {
					got = append(got, ev.ID)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: got %v, want %v", tt.query, got, want)
				}
			}
		})

		t.Run("a user reads their own events only", func(t *testing.T) {
			for _, who := range []struct {
				name string
				auth func(*http.Request)
				id   string
			}{{"alice", alice, e.alice.ID}, {"bob", bob, e.bob.ID}} {
				var want []string
				for _, ev := range e.listAudit(t, "/api/admin/events?userId="+who.id, admin) {
					want = append(want, ev.ID)
				}
				var got []string
				for _, ev := range e.listAudit(t, "/api/public/me/events", who.auth) {
					if name(ev.UserID) != who.name {
						t.Errorf("%s reads an event of %s: %+v", who.name, name(ev.UserID), ev)
					}
					got = append(got, ev.ID)
				}
				if len(got) == 0 || !slices.Equal(got, want) {
					t.Errorf("%s's own events: got %v, want %v", who.name, got, want)
				}
				// A userId in the query does not widen a user's listing.
				for _, ev := range e.listAudit(t, "/api/public/me/events?userId="+e.admin.ID, who.auth) {
					if name(ev.UserID) != who.name {
						t.Errorf("%s reads an event of %s through userId", who.name, name(ev.UserID))
					}
				}
			}
		})

		t.Run("errors", func(t *testing.T) {
			tests := []struct {
				name, path string
				auth       func(*http.Request)
				status     int
			}{
				{"admin listing without a session", "/api/admin/events", nil, http.StatusUnauthorized},
				{"admin listing with a user's session", "/api/admin/events", bob, http.StatusForbidden},
				{"own listing without a session", "/api/public/me/events", nil, http.StatusUnauthorized},
				{"own listing with only an admin session", "/api/public/me/events", admin, http.StatusUnauthorized},
				{"limit zero", "/api/admin/events?limit=0", admin, http.StatusBadRequest},
				{"limit too large", "/api/admin/events?limit=100000", admin, http.StatusBadRequest},
				{"limit not a number", "/api/public/me/events?limit=ten", alice, http.StatusBadRequest},
				{"a forged cursor", "/api/admin/events?cursor=bm90LWEtY3Vyc29y", admin, http.StatusBadRequest},
				{"a cursor not base64", "/api/public/me/events?cursor=!!!", alice, http.StatusBadRequest},
				{"a type with a wildcard inside", "/api/admin/events?type=lo%25in.failed", admin, http.StatusBadRequest},
				{"a type with SQL", "/api/admin/events?type=x'%20OR%201=1--", admin, http.StatusBadRequest},
				{"since not a time", "/api/admin/events?since=yesterday", admin, http.StatusBadRequest},
				{"until not a time", "/api/public/me/events?until=1700000000", alice, http.StatusBadRequest},
			}
			for _, tt := range tests {
				r := e.sendJSON(t, http.MethodGet, tt.path, "", tt.auth)
				if r.status != tt.status || r.body["error"] != http.StatusText(tt.status) || r.body["message"] == "" {
					t.Errorf("%s: got %s, want %d in the JSON error shape", tt.name, r, tt.status)
				}
			}
		})

		t.Run("cross-origin", func(t *testing.T) {
			// Reads pass the same-origin guard, as on every cookie route, but send no CORS
			// header: a page of another origin cannot read the answer. A change is no route.
			for _, path := range []string{"/api/admin/events", "/api/public/me/events"} {
				auth := admin
				if strings.Contains(path, "/me/") {
					auth = alice
				}
				req, _ := http.NewRequest(http.MethodGet, e.issuer+path, nil)
				req.Header.Set("Origin", "https://evil.example.net")
				req.Header.Set("Sec-Fetch-Site", "cross-site")
				auth(req)
				r := e.send(t, req)
				if r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != "" {
					t.Errorf("cross-origin GET %s: got %s with ACAO %q, want 200 without CORS", path, r, r.header.Get("Access-Control-Allow-Origin"))
				}
				req, _ = http.NewRequest(http.MethodPost, e.issuer+path, strings.NewReader("{}"))
				req.Header.Set("Origin", e.issuer)
				auth(req)
				if r := e.send(t, req); r.status != http.StatusMethodNotAllowed {
					t.Errorf("POST %s: got %s, want 405", path, r)
				}
			}
		})

		t.Run("retention", func(t *testing.T) {
			// The provider hands Config.SecurityEventRetention (365 days by default) to
			// the janitor's sweep: a year and a day later every event is gone, and not
			// before. Last: the sweep ends the sessions too.
			for _, tt := range []struct {
				after time.Duration
				left  bool
			}{{364 * 24 * time.Hour, true}, {366 * 24 * time.Hour, false}} {
				if _, err := e.store.DeleteExpired(ctx, time.Now().Add(tt.after), 0); err != nil {
					t.Fatal(err)
				}
				rs, err := e.store.ListSecurityEvents(ctx, storage.SecurityEventFilter{}, storage.SecurityEventCursor{}, 1)
				if err != nil {
					t.Fatal(err)
				}
				if (len(rs) > 0) != tt.left {
					t.Errorf("after %v: got %d events, want some: %t", tt.after, len(rs), tt.left)
				}
			}
		})
	})
}

// TestAuditTrailTruncatesAddresses: with Config.TruncateEventIPs a login's row keeps the
// client's /24 only; without it, the whole address.
func TestAuditTrailTruncatesAddresses(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, tt := range []struct {
			truncate bool
			want     string
		}{{false, "127.0.0.1"}, {true, "127.0.0.0"}} {
			e := newPermEnv(t, b, provider.Config{TruncateEventIPs: tt.truncate})
			e.publicSession(t, e.alice.Email)
			rs, err := e.store.ListSecurityEvents(context.Background(),
				storage.SecurityEventFilter{Type: "login.succeeded", UserID: e.alice.ID}, storage.SecurityEventCursor{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].IP.String() != tt.want {
				t.Errorf("truncate=%t: got %+v, want one login from %s", tt.truncate, rs, tt.want)
			}
		}
	})
}

// TestOwnEventsShowOnlyTheUsersRequests: GET /api/public/me/events shows the address and
// user agent of a request, and the id of whoever made it, only for an event the user
// caused. An admin's change to the user's permission, an application's, and a client
// revoking its token are listed with who acted (actorType) but not the admin's or the
// client's address, user agent or the admin's id; the admin listing keeps all of it.
func TestOwnEventsShowOnlyTheUsersRequests(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{})
		admin := e.adminSession(t, e.admin.Email)
		alice := e.publicSession(t, e.alice.Email)
		as := func(userAgent string, auth func(*http.Request)) func(*http.Request) {
			return func(r *http.Request) {
				auth(r)
				r.Header.Set("User-Agent", userAgent)
			}
		}
		tok := e.userToken(t, e.browser(t), e.app, e.alice.Email)
		path := "/api/users/" + e.alice.ID + "/apps/app"
		for _, step := range []struct {
			method, path, body string
			auth               func(*http.Request)
		}{
			{http.MethodPost, path + "/request-access", "", as("alice-phone", bearer(tok.AccessToken))},
			{http.MethodPut, adminRecordPath(e.alice.ID, "app"), `{"status":"approved","role":"user"}`, as("admin-console", admin)},
			{http.MethodPut, path + "/permissions", `{"status":"approved","role":"admin"}`, as("shop-backend", bearer(e.clientToken(t, e.app, "manage_permissions")))},
		} {
			if r := e.sendJSON(t, step.method, step.path, step.body, step.auth); r.status/100 != 2 {
				t.Fatalf("%s %s: got %s", step.method, step.path, r)
			}
		}
		revoke := url.Values{"token": {tok.RefreshToken}}
		if r := e.call(t, http.MethodPost, "/api/oauth/revoke", revoke, as("shop-backend", basicAuth(e.app))); r.status != http.StatusOK {
			t.Fatalf("revoke: got %s", r)
		}

		// describe writes an event down as "type outcome ip "user agent"", and for a
		// permission change "by <actorType> <actorId> granted by <grantedBy of after>",
		// naming alice and the admin, "-" for what is absent.
		names := map[string]string{"": "-", e.alice.ID: "alice", e.admin.ID: "root"}
		name := func(id string) string {
			if n, ok := names[id]; ok {
				return n
			}
			return id
		}
		describe := func(ev auditEvent) string {
			ip := "-"
			if ev.IP != nil {
				ip = *ev.IP
			}
			line := fmt.Sprintf("%s %s %s %q", ev.Type, name(ev.Outcome), ip, ev.UserAgent)
			if ev.Type == "permission.changed" {
				var d struct {
					ActorType string `json:"actorType"`
					ActorID   string `json:"actorId"`
					After     struct {
						GrantedBy string `json:"grantedBy"`
					} `json:"after"`
				}
				_ = json.Unmarshal(ev.Details, &d)
				line += fmt.Sprintf(" by %s %s granted by %s", d.ActorType, name(d.ActorID), name(d.After.GrantedBy))
			}
			return line
		}
		list := func(path string, auth func(*http.Request)) []string {
			var lines []string
			for _, ev := range e.listAudit(t, path, auth) {
				if ev.Type == "permission.changed" || ev.Type == "token.revoked" {
					lines = append(lines, describe(ev))
				}
			}
			return lines
		}

		want := []string{
			`permission.changed request-access 127.0.0.1 "alice-phone" by user alice granted by -`,
			`permission.changed update - "" by admin - granted by -`,
			`permission.changed update - "" by client app granted by client:app`,
			`token.revoked - - ""`,
		}
		if got := list("/api/public/me/events", alice); !slices.Equal(got, want) {
			t.Errorf("alice's own events:\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
		}
		wantAdmin := []string{
			`permission.changed request-access 127.0.0.1 "alice-phone" by user alice granted by -`,
			`permission.changed update 127.0.0.1 "admin-console" by admin root granted by root`,
			`permission.changed update 127.0.0.1 "shop-backend" by client app granted by client:app`,
			`token.revoked - 127.0.0.1 "shop-backend"`,
		}
		if got := list("/api/admin/events?userId="+e.alice.ID, admin); !slices.Equal(got, wantAdmin) {
			t.Errorf("the admin's listing:\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(wantAdmin, "\n\t"))
		}
	})
}
