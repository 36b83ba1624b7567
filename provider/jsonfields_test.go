package provider_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestJSONRoutesRefuseUnknownFields: every JSON route that reads a body refuses a member it
// does not know with 400 {"error":"Bad Request","message":"unknown field \"…\""} and changes
// nothing, so a client that misspells a field (given_name for givenName) hears of it instead
// of getting a 200 that did nothing. Client registration is the exception RFC 7591 §2
// demands: unknown metadata are ignored.
func TestJSONRoutesRefuseUnknownFields(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newPermEnv(t, b, provider.Config{OpenRegistration: true})
		alice, bob := e.alice, e.bob
		admin := e.adminSession(t, e.admin.Email)
		alicePublic := e.publicSession(t, alice.Email)
		aliceToken := e.userToken(t, e.browser(t), e.app, alice.Email).AccessToken
		clientToken := e.clientToken(t, e.app, "manage_permissions")

		named := strings.NewReplacer(alice.ID, "{alice}", bob.ID, "{bob}")
		for _, tc := range []struct {
			method, path string
			auth         func(*http.Request)
			// body is a valid request for the route; the test adds the unknown member.
			body string
			// unknown is the member added, whose name the answer must give.
			unknown string
		}{
			{http.MethodPost, "/api/public/register", nil, `"email":"new@example.com","password":"` + testPassword + `","name":"New"`, "plan"},
			{http.MethodPost, "/api/public/login", nil, `"email":"` + alice.Email + `","password":"` + testPassword + `"`, "remember"},
			{http.MethodPost, "/api/public/verify-pin", nil, `"challengeId":"no-such-challenge","pin":"123456"`, "code"},
			{http.MethodPost, "/api/public/request-magic-link", nil, `"email":"` + alice.Email + `","redirect_uri":"` + rpRedirectURI + `"`, "redirectUri"},
			{http.MethodPost, "/api/public/resend-verification", nil, `"email":"` + alice.Email + `"`, "lang"},
			{http.MethodPost, "/api/public/request-password-reset", nil, `"email":"` + alice.Email + `"`, "lang"},
			{http.MethodPost, "/api/public/reset-password", nil, `"token":"no-such-token","password":"another long passphrase"`, "confirmPassword"},
			{http.MethodPost, "/api/public/confirm-password", nil, `"token":"no-such-token","password":"` + testPassword + `"`, "name"},
			{http.MethodPost, "/api/admin/login", nil, `"email":"` + e.admin.Email + `","password":"` + testPassword + `"`, "otp"},
			{http.MethodPatch, "/api/admin/users/" + bob.ID, admin, `"requirePin":true`, "require_pin"},
			{http.MethodPatch, "/api/public/me", alicePublic, `"givenName":"Ada"`, "given_name"},
			{http.MethodPost, "/api/admin/registration-tokens", admin, `"expiresIn":3600`, "max_uses"},
			{http.MethodPut, recordPath(alice.ID, e.app.ClientID), bearer(clientToken), `"status":"approved","role":"user"`, "reason"},
			{http.MethodPut, adminRecordPath(bob.ID, e.app.ClientID), admin, `"status":"approved","role":"user"`, "note"},
			{http.MethodPost, requestAccessPath(alice.ID, e.app.ClientID), bearer(aliceToken), `"email":"` + alice.Email + `","name":"Alice"`, "message"},
		} {
			t.Run(tc.method+" "+named.Replace(tc.path), func(t *testing.T) {
				body := fmt.Sprintf(`{%s,%q:"x"}`, tc.body, tc.unknown)
				r := e.sendJSON(t, tc.method, tc.path, body, tc.auth)
				wantAppError(t, r, http.StatusBadRequest, fmt.Sprintf("unknown field %q", tc.unknown))
			})
		}

		// Nothing was changed by the refused requests.
		if _, err := e.p.UserByEmail(e.ctx, "new@example.com"); err == nil {
			t.Error("the refused registration created an account")
		}
		me := e.sendJSON(t, http.MethodGet, "/api/public/me", "", alicePublic)
		if me.status != http.StatusOK || me.body["givenName"] != nil && me.body["givenName"] != "" {
			t.Errorf("after the refused PATCH: got %s, want no givenName", me)
		}
		for _, path := range []string{recordPath(alice.ID, e.app.ClientID), recordPath(bob.ID, e.app.ClientID)} {
			if r := e.sendJSON(t, http.MethodGet, path, "", bearer(clientToken)); r.status != http.StatusNotFound {
				t.Errorf("GET %s after the refused writes: got %s, want 404", path, r)
			}
		}

		t.Run("client registration ignores unknown metadata (RFC 7591 §2)", func(t *testing.T) {
			r := e.sendJSON(t, http.MethodPost, "/api/oauth/register",
				`{"redirect_uris":["`+rpRedirectURI+`"],"client_name":"Tolerant","software_statement_extra":"x","frobnicate":true}`, nil)
			if r.status != http.StatusCreated || r.body["client_id"] == nil || strings.Contains(r.raw, "frobnicate") {
				t.Errorf("got %s, want 201 without the unknown members", r)
			}
		})
	})
}
