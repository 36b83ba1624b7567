package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// eventLog collects what a provider emits through WithEvents.
type eventLog struct {
	mu     sync.Mutex
	events []provider.Event
}

func (l *eventLog) sink(_ context.Context, e provider.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// take returns what was emitted since the last take.
func (l *eventLog) take() []provider.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.events
	l.events = nil
	return got
}

// eventNames gives the random ids in events readable names, so a test can write the events
// it wants down: users by the names the test gives them, grants as g1, g2, … in the order
// they first appear. Any other id (a client's) stands for itself.
type eventNames struct {
	names  map[string]string
	grants int
}

func (n *eventNames) of(id string) string {
	if id == "" {
		return "-"
	}
	if name, ok := n.names[id]; ok {
		return name
	}
	return id
}

func (n *eventNames) grant(id string) string {
	if id == "" {
		return "-"
	}
	if _, ok := n.names[id]; !ok {
		n.grants++
		n.names[id] = fmt.Sprintf("g%d", n.grants)
	}
	return n.names[id]
}

// describe writes e down as one line: its name, its fields, and "via http" for an event
// of a request from this test (client address 127.0.0.1 and a user agent) or "via go" for
// one from a Go call (neither).
func (n *eventNames) describe(t *testing.T, e provider.Event) string {
	t.Helper()
	var s string
	switch e := e.(type) {
	case *provider.LoginSucceeded:
		s = fmt.Sprintf("%s %s %s pin=%t", n.of(e.UserID), e.Method, e.SessionKind, e.PIN)
	case *provider.LoginFailed:
		s = fmt.Sprintf("%s %s %s", n.of(e.UserID), e.Method, e.Reason)
	case *provider.UserRegistered:
		s = fmt.Sprintf("%s %s %s", n.of(e.UserID), e.Email, e.Method)
	case *provider.EmailVerified:
		s = fmt.Sprintf("%s %s", n.of(e.UserID), e.Email)
	case *provider.PasswordReset:
		s = n.of(e.UserID)
	case *provider.PasswordAdded:
		s = n.of(e.UserID)
	case *provider.TokenIssued:
		if e.TokenID == "" {
			t.Errorf("%s without a TokenID", e.Name())
		}
		s = fmt.Sprintf("%s %s %s %s scopes=%s aud=%s refresh=%t id=%t user=%t", e.GrantType, e.ClientID,
			n.of(e.Subject), n.grant(e.GrantID), strings.Join(e.Scopes, ","), strings.Join(e.Audience, ","),
			e.RefreshToken, e.IDToken, e.UserBound)
	case *provider.TokenRevoked:
		s = fmt.Sprintf("%s %s %s %s", e.Kind, e.ClientID, n.of(e.Subject), n.grant(e.GrantID))
	case *provider.FamilyRevoked:
		s = fmt.Sprintf("%s %s %s %s", e.Reason, n.of(e.Subject), n.of(e.ClientID), n.grant(e.GrantID))
	case *provider.ConsentGranted:
		s = fmt.Sprintf("%s %s %s", n.of(e.UserID), e.ClientID, strings.Join(e.Scopes, ","))
	case *provider.ConsentWithdrawn:
		s = fmt.Sprintf("%s %s %s", n.of(e.UserID), n.of(e.ClientID), e.Reason)
	case *provider.PermissionChanged:
		s = fmt.Sprintf("%s %s %s %s:%s %s/%s -> %s/%s", n.of(e.UserID), e.ClientID, e.Action,
			e.ActorKind, n.of(e.ActorID), n.of(e.OldStatus), n.of(e.OldRole), e.NewStatus, e.NewRole)
	case *provider.ClientChanged:
		s = fmt.Sprintf("%s %s", e.ClientID, e.Action)
	case *provider.IdentityLinked:
		s = fmt.Sprintf("%s %s", n.of(e.UserID), e.Provider)
	case *provider.KeyAdded:
		s = fmt.Sprintf("%s scheduled=%t", e.Algorithm, e.Scheduled)
	default:
		t.Fatalf("unknown event %T", e)
	}
	m := e.Metadata()
	if e.When().IsZero() || !e.When().Equal(m.At) {
		t.Errorf("%s: When() = %v, Meta.At = %v, want the same non-zero time", e.Name(), e.When(), m.At)
	}
	via := "via go"
	switch {
	case m.ClientIP.String() == "127.0.0.1" && m.UserAgent != "":
		via = "via http"
	case m.ClientIP.IsValid() || m.UserAgent != "":
		via = fmt.Sprintf("via %v %q", m.ClientIP, m.UserAgent)
	}
	return e.Name() + " " + s + " " + via
}

// TestEventsOfFlows runs the flows an embedder hears of through WithEvents (logins,
// registration, verification, reset, the code flow with consent, refresh, reuse of a
// refresh token and of a code, revocation, permission changes) and checks, step by step,
// the events each emits, in order, with their fields.
func TestEventsOfFlows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		log := &eventLog{}
		mail := smtptest.Start(t)
		e := newEnv(t, b, provider.Config{
			PublicAuth: provider.PublicAuthConfig{SMTPURL: mail.URL(), MailFrom: "Gatehouse <no-reply@example.com>"},
		}, provider.WithEvents(log.sink))
		app := e.client(t, provider.ClientSpec{ID: "app", Name: "App",
			Scopes:     []string{"openid", "profile", "email", "offline_access", "manage_permissions"},
			GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"}})
		rp := e.relyingParty(t, app)
		log.take() // client.created app via go
		names := &eventNames{names: map[string]string{}}
		step := func(what string, want ...string) []provider.Event {
			t.Helper()
			got := log.take()
			lines := []string{}
			for _, ev := range got {
				lines = append(lines, names.describe(t, ev))
			}
			if !slices.Equal(lines, append([]string{}, want...)) {
				t.Errorf("%s: events\n\t%s\nwant\n\t%s", what, strings.Join(lines, "\n\t"), strings.Join(want, "\n\t"))
			}
			return got
		}
		postJSON := func(path, body string, auth func(*http.Request)) jsonResponse {
			t.Helper()
			req, err := http.NewRequest(http.MethodPost, e.issuer+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if auth != nil {
				auth(req)
			}
			return e.send(t, req)
		}
		const scopes = "scopes=openid,profile,email,offline_access"

		alice := e.user(t, "alice@example.com", "Alice")
		names.names[alice.ID] = "alice"
		step("an operator creates a user", "user.registered alice alice@example.com operator via go")

		for _, login := range []struct{ email, password string }{
			{alice.Email, "not alice's password"}, {"nobody@example.com", testPassword},
		} {
			if r := postJSON("/api/public/login", fmt.Sprintf(`{"email": %q, "password": %q}`, login.email, login.password), nil); r.status != http.StatusUnauthorized {
				t.Fatalf("login as %s with a wrong password: got %s, want 401", login.email, r)
			}
		}
		step("failed logins: a known account, an unknown one",
			"login.failed alice password bad_credentials via http",
			"login.failed - password bad_credentials via http")

		if r := postJSON("/api/public/login", fmt.Sprintf(`{"email": %q, "password": %q}`, alice.Email, testPassword), nil); r.status != http.StatusOK {
			t.Fatalf("login: got %s, want 200", r)
		}
		step("a password login", "login.succeeded alice password public pin=false via http")

		br := e.browser(t)
		_, tok := rp.signIn(t, e, br, alice.Email)
		got := step("the code flow: login, consent, exchange",
			"login.succeeded alice password public pin=false via http",
			"consent.granted alice app openid,profile,email,offline_access via http",
			"token.issued authorization_code app alice g1 "+scopes+" aud= refresh=true id=true user=true via http")
		if len(got) == 3 {
			_, claims := decodeJWT(t, tok.AccessToken)
			if id := got[2].(*provider.TokenIssued).TokenID; id != claims["jti"] {
				t.Errorf("TokenIssued.TokenID = %q, want the access token's jti %v", id, claims["jti"])
			}
		}

		if r := e.refresh(t, app, tok.RefreshToken); r.status != http.StatusOK {
			t.Fatalf("refresh: got %s, want 200", r)
		}
		step("a refresh", "token.issued refresh_token app alice g1 "+scopes+" aud= refresh=true id=true user=true via http")
		wantOAuthError(t, e.refresh(t, app, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
		step("the rotated refresh token used again", "token.family_revoked refresh_token_reuse alice app g1 via http")

		ar := rp.start()
		code := wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
		rp.exchange(t, ar, code)
		step("a second grant, signed in and consented", "token.issued authorization_code app alice g2 "+scopes+" aud= refresh=true id=true user=true via http")
		wantOAuthError(t, e.token(t, app, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {rpRedirectURI}, "code_verifier": {ar.verifier}}), http.StatusBadRequest, "invalid_grant")
		step("the code exchanged again", "token.family_revoked authorization_code_reuse alice app g2 via http")

		_, tok = rp.signIn(t, e, br, alice.Email)
		step("a third grant", "token.issued authorization_code app alice g3 "+scopes+" aud= refresh=true id=true user=true via http")
		for _, token := range []string{tok.AccessToken, "not-a-token-of-ours"} {
			if r := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {token}}, basicAuth(app)); r.status != http.StatusOK {
				t.Fatalf("revoke: got %s, want 200", r)
			}
		}
		step("revoking an access token, then an unknown token", "token.revoked access_token app alice g3 via http")

		const newbie = "newbie@example.com"
		if r := postJSON("/api/public/register", fmt.Sprintf(`{"email": %q, "password": %q, "name": "Newbie"}`, newbie, testPassword), nil); r.status != http.StatusCreated {
			t.Fatalf("register: got %s, want 201", r)
		}
		u, err := e.store.UserByEmail(context.Background(), newbie)
		if err != nil {
			t.Fatal(err)
		}
		names.names[u.ID] = "newbie"
		step("a registration", "user.registered newbie newbie@example.com password via http")
		vb := e.browser(t)
		f := vb.get(t, e.mailedLink(t, mail, newbie, publicauth.PathVerifyEmail)).form(t)
		f.fields.Set("password", testPassword)
		if p := vb.post(t, f.action, f.fields); p.status != http.StatusOK || !strings.Contains(p.body, "Email verified") {
			t.Fatalf("verification: got %s, want the email-verified page", p)
		}
		step("the address verified through the mailed link",
			"email.verified newbie newbie@example.com via http",
			"token.family_revoked email_verified newbie - - via http",
			"consent.withdrawn newbie - email_verified via http")

		if r := postJSON("/api/public/request-password-reset", fmt.Sprintf(`{"email": %q}`, alice.Email), nil); r.status != http.StatusOK {
			t.Fatalf("request-password-reset: got %s, want 200", r)
		}
		resetToken := tokenOf(t, e.mailedLink(t, mail, alice.Email, publicauth.PathResetPassword))
		if r := postJSON("/api/public/reset-password", fmt.Sprintf(`{"token": %q, "password": "a brand new passphrase"}`, resetToken), nil); r.status != http.StatusOK {
			t.Fatalf("reset-password: got %s, want 200", r)
		}
		step("a password reset",
			"password.reset alice via http",
			"token.family_revoked password_reset alice - - via http",
			"consent.withdrawn alice - password_reset via http")

		cc := clientcredentials.Config{ClientID: app.ClientID, ClientSecret: app.ClientSecret,
			TokenURL: e.issuer + "/api/oauth/token", Scopes: []string{"manage_permissions"}, AuthStyle: oauth2.AuthStyleInHeader}
		ct, err := cc.Token(e.ctx)
		if err != nil {
			t.Fatalf("client_credentials: %v", err)
		}
		step("a client token", "token.issued client_credentials app app g4 scopes=manage_permissions aud= refresh=false id=false user=false via http")
		path := "/api/users/" + alice.ID + "/apps/app/permissions"
		req, _ := http.NewRequest(http.MethodPut, e.issuer+path, strings.NewReader(`{"status": "approved", "role": "user"}`))
		req.Header.Set("Content-Type", "application/json")
		bearer(ct.AccessToken)(req)
		if r := e.send(t, req); r.status != http.StatusCreated {
			t.Fatalf("PUT permission: got %s, want 201", r)
		}
		step("a permission granted", "permission.changed alice app update client:app -/- -> approved/user via http")
		if r := e.call(t, http.MethodDelete, path, nil, bearer(ct.AccessToken)); r.status != http.StatusOK {
			t.Fatalf("DELETE permission: got %s, want 200", r)
		}
		step("a permission revoked",
			"permission.changed alice app revoke client:app approved/user -> revoked/none via http",
			"token.family_revoked permission_revoked alice app - via http")
	})
}

// TestEventsNotEmittedOnRollback: a change made inside a transaction that rolls back emits
// nothing, though its emit ran; the same change committed emits its events once.
func TestEventsNotEmittedOnRollback(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		log := &eventLog{}
		e := newEnv(t, b, provider.Config{}, provider.WithEvents(log.sink))
		alice := e.user(t, "alice@example.com", "Alice")
		log.take()

		rollback := errors.New("roll back")
		err := e.store.InTx(context.Background(), func(ctx context.Context) error {
			if _, err := e.p.DisableUser(ctx, alice.Email); err != nil {
				return err
			}
			if got := log.take(); len(got) != 0 {
				t.Errorf("events delivered inside the transaction: %v", got)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("InTx: %v, want the rollback", err)
		}
		if got := log.take(); len(got) != 0 {
			t.Errorf("events of a rolled-back change: %v, want none", got)
		}
		if u, err := e.store.UserByEmail(context.Background(), alice.Email); err != nil || u.Status != publicauth.StatusActive {
			t.Fatalf("after the rollback: %+v, %v; want alice still active", u, err)
		}

		if _, err := e.p.DisableUser(context.Background(), alice.Email); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ev := range log.take() {
			names = append(names, ev.Name())
		}
		if want := []string{"token.family_revoked", "consent.withdrawn"}; !slices.Equal(names, want) {
			t.Errorf("events of the committed change: %v, want %v", names, want)
		}
	})
}

// TestPanickingEventSink: a sink that panics on every event breaks no request: logins,
// the code flow and a refresh answer as they would without it.
func TestPanickingEventSink(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		var mu sync.Mutex
		panicked := 0
		e := newEnv(t, b, provider.Config{}, provider.WithEvents(func(context.Context, provider.Event) {
			mu.Lock()
			panicked++
			mu.Unlock()
			panic("the sink broke")
		}))
		app := e.client(t, provider.ClientSpec{ID: "app"})
		alice := e.user(t, "alice@example.com", "Alice")
		rp := e.relyingParty(t, app)
		_, tok := rp.signIn(t, e, e.browser(t), alice.Email)
		if r := e.refresh(t, app, tok.RefreshToken); r.status != http.StatusOK {
			t.Fatalf("refresh with a panicking sink: got %s, want 200", r)
		}
		mu.Lock()
		defer mu.Unlock()
		// client.created, user.registered, login.succeeded, consent.granted, and two
		// token.issued.
		if panicked != 6 {
			t.Errorf("the sink was called %d times, want 6", panicked)
		}
	})
}
