package publicauth_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestAdminUpdateUser covers PATCH /api/admin/users/{userId}: who may call it and what it
// answers.
func TestAdminUpdateUser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		const pw = "correct horse battery"
		if _, err := e.svc.CreateUser(context.Background(), publicauth.UserInput{
			Email: "root@example.com", Password: pw, Name: "Root", Role: publicauth.RoleAdmin, Verified: true,
		}); err != nil {
			t.Fatal(err)
		}
		jo := e.register(t, "jo@example.com", pw, "Jo")
		admin, user := e.login(t, "root@example.com", pw), e.login(t, jo.Email, pw)
		path := "/api/admin/users/" + jo.ID
		for _, tc := range []struct {
			name    string
			path    string
			body    string
			cookies []*http.Cookie
			status  int
			want    string
		}{
			{"no session", path, `{"requirePin": true}`, nil, 401, `{"error":"Unauthorized","message":"no valid session"}`},
			{"a user who is not an admin", path, `{"requirePin": true}`, []*http.Cookie{user}, 403, `{"error":"Forbidden","message":"admin role required"}`},
			{"nothing to change", path, `{}`, []*http.Cookie{admin}, 400, `{"error":"Bad Request","message":"requirePin, status or a profile field is required"}`},
			{"a bad profile value", path, `{"phoneNumber": "12345"}`, []*http.Cookie{admin}, 400, `{"error":"Bad Request","message":"phoneNumber must be an E.164 number such as +14155550100"}`},
			{"an unknown status", path, `{"status": "gone"}`, []*http.Cookie{admin}, 400, `{"error":"Bad Request","message":"status must be active or disabled"}`},
			{"a status that is not a string", path, `{"status": false}`, []*http.Cookie{admin}, 400, `{"error":"Bad Request","message":"status must be a JSON string"}`},
			{"not a boolean", path, `{"requirePin": "yes"}`, []*http.Cookie{admin}, 400, `{"error":"Bad Request","message":"requirePin must be a JSON bool"}`},
			{"unknown user", "/api/admin/users/no-such-user", `{"requirePin": true}`, []*http.Cookie{admin}, 404, `{"error":"Not Found","message":"user not found"}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := e.do(t, http.MethodPatch, tc.path, "application/json", tc.body, tc.cookies...)
				wantStatus(t, res, tc.status)
				wantBody(t, res, tc.want)
			})
		}

		res := e.do(t, http.MethodPatch, path, "application/json", `{"requirePin": true}`, admin)
		wantStatus(t, res, http.StatusOK)
		if got := res.json(t); got["requirePin"] != true || got["id"] != jo.ID {
			t.Errorf("PATCH answered %s, want jo with requirePin true", res.body)
		}
		// The admin sets what the user cannot: a verified phone number, with the profile.
		res = e.do(t, http.MethodPatch, path, "application/json", `{"phoneNumber": "+14155550100", "phoneNumberVerified": true, "givenName": "Jo"}`, admin)
		wantStatus(t, res, http.StatusOK)
		if got, _ := res.json(t)["profile"].(map[string]any); got["phoneNumber"] != "+14155550100" || got["phoneNumberVerified"] != true || got["givenName"] != "Jo" {
			t.Errorf("PATCH of the profile answered %s", res.body)
		}
		login := e.postJSON(t, "/api/public/login", map[string]string{"email": jo.Email, "password": pw})
		if login.json(t)["pinRequired"] != true {
			t.Errorf("login after the admin turned the gate on: %s, want pinRequired", login.body)
		}
	})
}

// TestAdminDisablesUser: PATCH {"status": "disabled"} ends the user's sessions and stops
// logins; {"status": "active"} lets the user log in again, and brings no session back.
func TestAdminDisablesUser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, publicauth.Config{})
		const pw = "correct horse battery"
		if _, err := e.svc.CreateUser(context.Background(), publicauth.UserInput{
			Email: "root@example.com", Password: pw, Name: "Root", Role: publicauth.RoleAdmin, Verified: true,
		}); err != nil {
			t.Fatal(err)
		}
		jo := e.register(t, "jo@example.com", pw, "Jo")
		admin, user := e.login(t, "root@example.com", pw), e.login(t, jo.Email, pw)
		path := "/api/admin/users/" + jo.ID

		res := e.do(t, http.MethodPatch, path, "application/json", `{"status": "disabled"}`, admin)
		wantStatus(t, res, http.StatusOK)
		if got := res.json(t); got["status"] != publicauth.StatusDisabled {
			t.Errorf("PATCH answered %s, want status disabled", res.body)
		}
		wantStatus(t, e.do(t, http.MethodGet, "/api/public/session", "", "", user), http.StatusUnauthorized)
		// The admin sets what the user cannot: a verified phone number, with the profile.
		res = e.do(t, http.MethodPatch, path, "application/json", `{"phoneNumber": "+14155550100", "phoneNumberVerified": true, "givenName": "Jo"}`, admin)
		wantStatus(t, res, http.StatusOK)
		if got, _ := res.json(t)["profile"].(map[string]any); got["phoneNumber"] != "+14155550100" || got["phoneNumberVerified"] != true || got["givenName"] != "Jo" {
			t.Errorf("PATCH of the profile answered %s", res.body)
		}
		login := e.postJSON(t, "/api/public/login", map[string]string{"email": jo.Email, "password": pw})
		wantStatus(t, login, http.StatusForbidden)

		res = e.do(t, http.MethodPatch, path, "application/json", `{"status": "active", "requirePin": false}`, admin)
		wantStatus(t, res, http.StatusOK)
		if got := res.json(t); got["status"] != publicauth.StatusActive {
			t.Errorf("PATCH answered %s, want status active", res.body)
		}
		// The session was ended, not only refused while the account was disabled.
		wantStatus(t, e.do(t, http.MethodGet, "/api/public/session", "", "", user), http.StatusUnauthorized)
		e.login(t, jo.Email, pw)
	})
}
