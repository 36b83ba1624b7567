package provider_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// logoutReceiver is a relying party's back-channel logout endpoint: a real HTTP server on
// 127.0.0.1 that records every logout token posted to it.
type logoutReceiver struct {
	srv *httptest.Server
	// down answers this many requests with 503 before accepting any.
	down atomic.Int32
	// hold is how long each accepted delivery takes, to widen the window in which two
	// workers could overlap.
	hold time.Duration

	mu       sync.Mutex
	tokens   []string
	inFlight map[string]int // deliveries being answered, by jti
	overlaps int            // deliveries of a jti that began while another was in flight
}

func newLogoutReceiver(t *testing.T) *logoutReceiver {
	t.Helper()
	r := &logoutReceiver{inFlight: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// uri is the back-channel logout URI clients register.
func (r *logoutReceiver) uri() string { return r.srv.URL + "/backchannel-logout" }

func (r *logoutReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/backchannel-logout" ||
		req.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if r.down.Add(-1) >= 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	token := req.PostFormValue("logout_token")
	jti := unverifiedClaim(token, "jti")
	r.mu.Lock()
	if r.inFlight[jti] > 0 {
		r.overlaps++
	}
	r.inFlight[jti]++
	r.mu.Unlock()
	time.Sleep(r.hold)
	r.mu.Lock()
	r.inFlight[jti]--
	r.tokens = append(r.tokens, token)
	r.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// received returns the tokens accepted so far.
func (r *logoutReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.tokens...)
}

// unverifiedClaim reads one string claim of a JWT without verifying it ("" when absent).
func unverifiedClaim(raw, name string) string {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims map[string]any
	_ = json.Unmarshal(b, &claims)
	s, _ := claims[name].(string)
	return s
}

// wantLogoutToken verifies raw as the relying party must (Back-Channel Logout 1.0 §2.6):
// its signature through the JWKS, typ logout+jwt, iss, aud, iat and a short exp, a jti, the
// backchannel-logout event, sid and sub as given, and no nonce.
func (e *env) wantLogoutToken(t *testing.T, raw, clientID, sid, sub string) {
	t.Helper()
	header, _ := decodeJWT(t, raw)
	if header["typ"] != "logout+jwt" {
		t.Errorf("logout token typ: got %v, want logout+jwt", header["typ"])
	}
	if header["kid"] == nil {
		t.Errorf("logout token has no kid")
	}
	claims := e.verifyJWT(t, raw)
	for name, want := range map[string]string{"iss": e.issuer, "aud": clientID, "sid": sid, "sub": sub} {
		if got := claims[name]; got != want {
			t.Errorf("logout token %s: got %v, want %q", name, got, want)
		}
	}
	if jti, _ := claims["jti"].(string); len(jti) < 16 {
		t.Errorf("logout token jti: got %q, want a unique id", jti)
	}
	if _, ok := claims["nonce"]; ok {
		t.Errorf("logout token carries a nonce: %v", claims["nonce"])
	}
	iat, exp := unixClaim(t, claims, "iat"), unixClaim(t, claims, "exp")
	if exp-iat != 120 {
		t.Errorf("logout token lifetime: got %d s, want 120 s", exp-iat)
	}
	events, _ := claims["events"].(map[string]any)
	event, ok := events["http://schemas.openid.net/event/backchannel-logout"].(map[string]any)
	if len(events) != 1 || !ok || len(event) != 0 {
		t.Errorf("logout token events: got %v, want exactly the empty backchannel-logout event", claims["events"])
	}
}

// bclEnv is a provider whose back-channel logout worker is off (the test steps it with
// DeliverLogouts), whose clock the test moves, and which mails through a test SMTP server.
type bclEnv struct {
	*env
	mail   *smtptest.Server
	offset *atomic.Int64
	rcv    *logoutReceiver
}

func (e *bclEnv) now() time.Time { return time.Now().Add(time.Duration(e.offset.Load())) }

func (e *bclEnv) advance(d time.Duration) { e.offset.Add(int64(d)) }

func newBCLEnv(t *testing.T, b storagetest.Backend) *bclEnv {
	t.Helper()
	mail := smtptest.Start(t)
	offset := &atomic.Int64{}
	e := newEnv(t, b, provider.Config{
		JanitorInterval:   -1,
		BackchannelLogout: provider.BackchannelLogoutConfig{Interval: -1, Timeout: 5 * time.Second},
		PublicAuth:        provider.PublicAuthConfig{SMTPURL: mail.URL(), MailFrom: "Gatehouse <no-reply@example.com>"},
	}, provider.WithClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }))
	return &bclEnv{env: e, mail: mail, offset: offset, rcv: newLogoutReceiver(t)}
}

// deliver runs one worker step and returns how many tokens it delivered.
func (e *bclEnv) deliver(t *testing.T) int {
	t.Helper()
	n, err := e.p.DeliverLogouts(context.Background())
	if err != nil {
		t.Fatalf("DeliverLogouts: %v", err)
	}
	return n
}

// resetPassword runs the hosted password reset of email to its end in a fresh browser.
func (e *bclEnv) resetPassword(t *testing.T, email string) {
	t.Helper()
	br := e.browser(t)
	f := br.get(t, e.issuer+"/forgot-password").form(t)
	f.fields.Set("email", email)
	if p := br.post(t, f.action, f.fields); p.status != http.StatusOK {
		t.Fatalf("forgot password: got %s", p)
	}
	rf := br.get(t, e.mailedLink(t, e.mail, email, publicauth.PathResetPassword)).form(t)
	rf.fields.Set("password", "a brand new passphrase for gatehouse")
	if p := br.post(t, rf.action, rf.fields); p.status != http.StatusOK || !strings.Contains(p.body, "Password changed") {
		t.Fatalf("reset password: got %s", p)
	}
}

// TestBackchannelLogout: every way a browser session ends sends the client that was issued
// tokens in it (and registered a back-channel logout URI) one logout token, which the
// relying party verifies: its sid is the one of the session's ID tokens, refreshed ones
// included. The session's refresh tokens stop working. A client without a back-channel
// logout URI that signed in in the same session gets nothing.
func TestBackchannelLogout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newBCLEnv(t, b)
		ctx := context.Background()
		app := e.client(t, provider.ClientSpec{ID: "app", FirstParty: true, BackchannelLogoutURI: e.rcv.uri(),
			BackchannelLogoutSessionRequired: true})
		quiet := e.client(t, provider.ClientSpec{ID: "quiet", FirstParty: true})
		rp, quietRP := e.relyingParty(t, app), e.relyingParty(t, quiet)

		ways := []struct {
			name string
			end  func(t *testing.T, br *browser, tok tokens, user provider.UserInfo)
		}{
			{"RP-initiated logout", func(t *testing.T, br *browser, tok tokens, _ provider.UserInfo) {
				p := br.get(t, e.issuer+"/api/oauth/logout?"+url.Values{"id_token_hint": {tok.rawIDToken}}.Encode())
				if p.status != http.StatusOK {
					t.Fatalf("RP-initiated logout: got %s", p)
				}
			}},
			{"public logout", func(t *testing.T, br *browser, _ tokens, _ provider.UserInfo) {
				if p := br.post(t, e.issuer+"/api/public/logout", url.Values{}); p.status != http.StatusOK {
					t.Fatalf("public logout: got %s", p)
				}
			}},
			{"password reset", func(t *testing.T, _ *browser, _ tokens, user provider.UserInfo) {
				e.resetPassword(t, user.Email)
			}},
			{"admin disable", func(t *testing.T, _ *browser, _ tokens, user provider.UserInfo) {
				if _, err := e.p.DisableUser(ctx, user.ID); err != nil {
					t.Fatal(err)
				}
			}},
			{"admin delete", func(t *testing.T, _ *browser, _ tokens, user provider.UserInfo) {
				if err := e.p.DeleteUser(ctx, user.ID); err != nil {
					t.Fatal(err)
				}
			}},
			// Last: it moves the clock past every session's lifetime.
			{"janitor expiry", func(t *testing.T, _ *browser, _ tokens, _ provider.UserInfo) {
				e.advance(publicauth.DefaultSessionLifespan + time.Minute)
				if _, err := e.store.DeleteExpired(ctx, e.now(), 0); err != nil {
					t.Fatal(err)
				}
			}},
		}
		for i, way := range ways {
			t.Run(way.name, func(t *testing.T) {
				user := e.user(t, strings.ReplaceAll(way.name, " ", "-")+"@example.com", "User")
				br := e.browser(t)
				_, tok := rp.signIn(t, e.env, br, user.Email)
				quietRP.signIn(t, e.env, br, user.Email) // the same session, no login
				sid, _ := tok.claims["sid"].(string)
				if len(sid) < 22 {
					t.Fatalf("ID token sid: got %q, want the session's public id", sid)
				}
				// The refreshed ID token names the same session.
				refreshed := e.refresh(t, app, tok.RefreshToken)
				if refreshed.status != http.StatusOK {
					t.Fatalf("refresh: %s", refreshed)
				}
				_, rc := rp.verifyIDToken(t, refreshed.body["id_token"].(string), refreshed.body["access_token"].(string))
				if rc["sid"] != sid {
					t.Errorf("refreshed ID token sid: got %v, want %q", rc["sid"], sid)
				}
				if got := e.deliver(t); got != 0 {
					t.Fatalf("before the session ends: %d tokens delivered, want 0", got)
				}

				way.end(t, br, tok, user)

				if got := e.deliver(t); got != 1 {
					t.Fatalf("%d tokens delivered, want 1", got)
				}
				got := e.rcv.received()
				if len(got) != i+1 {
					t.Fatalf("the relying party holds %d tokens, want %d", len(got), i+1)
				}
				e.wantLogoutToken(t, got[i], app.ClientID, sid, user.ID)
				if n := e.deliver(t); n != 0 {
					t.Errorf("a second step delivered %d more, want 0", n)
				}
				if way.name != "admin delete" { // a deleted user's tokens are gone outright
					wantOAuthError(t, e.refresh(t, app, refreshed.body["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")
				}
			})
		}
	})
}

// TestBackchannelLogoutRetries: a relying party that is down (refusing connections, then
// answering 503) gets the logout token once it is back, after retries with backoff driven by
// the provider's clock; one that stays down is given up on after a day, its message kept
// for operators.
func TestBackchannelLogoutRetries(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newBCLEnv(t, b)
		ctx := context.Background()
		// The relying party's address, with nobody listening yet: connection refused.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		app := e.client(t, provider.ClientSpec{ID: "app", FirstParty: true,
			BackchannelLogoutURI: "http://" + addr + "/backchannel-logout"})
		rp := e.relyingParty(t, app)
		user := e.user(t, "retry@example.com", "Retry")
		br := e.browser(t)
		_, tok := rp.signIn(t, e.env, br, user.Email)
		// A second session, ended later: signed in now, while the provider's clock agrees
		// with fosite's (which checks auth_time against the real clock).
		br2 := e.browser(t)
		rp.signIn(t, e.env, br2, user.Email)
		if p := br.post(t, e.issuer+"/api/public/logout", url.Values{}); p.status != http.StatusOK {
			t.Fatalf("public logout: got %s", p)
		}

		if n := e.deliver(t); n != 0 {
			t.Fatalf("connection refused: %d delivered, want 0", n)
		}
		// Backoff: nothing is due until 10 seconds have passed.
		if n := e.deliver(t); n != 0 {
			t.Fatalf("retry before the backoff: %d delivered, want 0", n)
		}

		// The relying party comes back on its address, answering 503 twice.
		rcv := &logoutReceiver{inFlight: map[string]int{}}
		rcv.down.Store(2)
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("cannot listen on %s again: %v", addr, err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(rcv.serve), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })

		for i, wait := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
			if n := e.deliver(t); n != 0 {
				t.Fatalf("attempt %d before its backoff passed: %d delivered", i+2, n)
			}
			e.advance(wait)
			n := e.deliver(t)
			if want := map[bool]int{true: 1, false: 0}[i == 2]; n != want {
				t.Fatalf("attempt %d after %v: %d delivered, want %d", i+2, wait, n, want)
			}
		}
		got := rcv.received()
		if len(got) != 1 {
			t.Fatalf("the relying party holds %d tokens, want 1", len(got))
		}
		e.wantLogoutToken(t, got[0], app.ClientID, tok.claims["sid"].(string), user.ID)
		if pending, err := e.store.PendingLogouts(ctx); err != nil || len(pending) != 0 {
			t.Errorf("outbox after delivery: %+v, %v; want empty", pending, err)
		}

		// A relying party that never answers 200: given up on after a day, kept, marked.
		rcv.down.Store(1 << 30)
		if p := br2.post(t, e.issuer+"/api/public/logout", url.Values{}); p.status != http.StatusOK {
			t.Fatalf("public logout: got %s", p)
		}
		for i := 0; i < 40; i++ { // bounded: 1 h steps, well past the day
			e.deliver(t)
			e.advance(time.Hour)
		}
		pending, err := e.store.PendingLogouts(ctx)
		if err != nil || len(pending) != 1 || pending[0].FailedAt == nil || !strings.Contains(pending[0].LastError, "503") {
			t.Fatalf("outbox after a day of failures: %+v, %v; want one message marked failed with the 503", pending, err)
		}
		attempts := pending[0].Attempts
		e.advance(time.Hour)
		e.deliver(t)
		if again, _ := e.store.PendingLogouts(ctx); len(again) != 1 || again[0].Attempts != attempts {
			t.Errorf("a failed message was tried again: %+v", again)
		}
		if len(rcv.received()) != 1 {
			t.Errorf("the relying party got %d tokens, want still 1", len(rcv.received()))
		}
	})
}

// TestBackchannelLogoutSurvivesRestart: the session's end commits while no worker runs; the
// provider is closed, a new one opened on the same database delivers the logout token.
func TestBackchannelLogoutSurvivesRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newBCLEnv(t, b)
		app := e.client(t, provider.ClientSpec{ID: "app", FirstParty: true, BackchannelLogoutURI: e.rcv.uri()})
		rp := e.relyingParty(t, app)
		user := e.user(t, "restart@example.com", "Restart")
		br := e.browser(t)
		_, tok := rp.signIn(t, e.env, br, user.Email)
		if p := br.post(t, e.issuer+"/api/public/logout", url.Values{}); p.status != http.StatusOK {
			t.Fatalf("public logout: got %s", p)
		}
		if err := e.p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		// The new provider's worker runs on its own: wait (bounded) for the delivery.
		next, err := provider.New(provider.Config{Issuer: e.issuer, Secret: testSecret, JanitorInterval: -1,
			BackchannelLogout: provider.BackchannelLogoutConfig{Interval: 20 * time.Millisecond}},
			provider.WithStore(e.store), provider.WithLogger(discardLogger()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = next.Close() })
		for i := 0; i < 3000 && len(e.rcv.received()) == 0; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		got := e.rcv.received()
		if len(got) != 1 {
			t.Fatalf("after the restart the relying party holds %d tokens, want 1", len(got))
		}
		e.wantLogoutToken(t, got[0], app.ClientID, tok.claims["sid"].(string), user.ID)
	})
}

// TestBackchannelLogoutReplicasSendOnce: two providers on one database, their workers
// running, share the outbox: every message reaches the relying party exactly once, and no
// message is ever being sent by both at the same time.
func TestBackchannelLogoutReplicasSendOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		store := b.Open(t)
		rcv := newLogoutReceiver(t)
		rcv.hold = 20 * time.Millisecond
		const issuer = "https://login.example"
		var replicas []*provider.Provider
		for range 2 {
			p, err := provider.New(provider.Config{Issuer: issuer, Secret: testSecret, JanitorInterval: -1,
				BackchannelLogout: provider.BackchannelLogoutConfig{Interval: 5 * time.Millisecond}},
				provider.WithStore(store), provider.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			replicas = append(replicas, p)
		}
		if _, err := replicas[0].CreateClient(ctx, provider.ClientSpec{ID: "app", FirstParty: true,
			RedirectURIs: []string{rpRedirectURI}, BackchannelLogoutURI: rcv.uri()}); err != nil {
			t.Fatal(err)
		}
		user, err := replicas[0].CreateUser(ctx, provider.UserSpec{Email: "many@example.com", Password: testPassword, Verified: true})
		if err != nil {
			t.Fatal(err)
		}
		// 40 sessions in which the client was issued a code, ended at once.
		const sessions = 40
		now := time.Now().UTC()
		for range sessions {
			s := &publicauth.Session{IDHash: randomString(32), UserID: user.ID, Kind: publicauth.SessionPublic,
				Method: publicauth.MethodPassword, AuthTime: now, ExpiresAt: now.Add(time.Hour)}
			if err := store.CreateSession(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := store.RecordSessionClient(ctx, s.SID, "app"); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.DeleteUserSessions(ctx, user.ID); err != nil {
			t.Fatal(err)
		}
		// Bounded wait until every message is delivered and its row deleted (a worker
		// deletes a row just after the relying party answered).
		for i := 0; i < 3000; i++ {
			if left, err := store.PendingLogouts(ctx); err == nil && len(left) == 0 && len(rcv.received()) >= sessions {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		// Give a double send the chance to show.
		for _, p := range replicas {
			if _, err := p.DeliverLogouts(ctx); err != nil {
				t.Fatal(err)
			}
		}
		got := rcv.received()
		seen := map[string]int{}
		for _, tok := range got {
			seen[unverifiedClaim(tok, "jti")]++
		}
		if len(got) != sessions || len(seen) != sessions {
			t.Errorf("the relying party got %d tokens for %d messages, want %d each once", len(got), len(seen), sessions)
		}
		rcv.mu.Lock()
		overlaps := rcv.overlaps
		rcv.mu.Unlock()
		if overlaps != 0 {
			t.Errorf("%d messages were being sent by two workers at once", overlaps)
		}
		if pending, err := store.PendingLogouts(ctx); err != nil || len(pending) != 0 {
			t.Errorf("outbox: %d messages left, %v; want none", len(pending), err)
		}
	})
}

// TestBackchannelLogoutURIRegistration: a back-channel logout URI must be https, or http on
// a loopback host, without fragment; the client shows it back.
func TestBackchannelLogoutURIRegistration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{JanitorInterval: -1})
		ctx := context.Background()
		for _, c := range []struct {
			uri string
			ok  bool
		}{
			{"https://rp.example.com/bcl", true},
			{"http://127.0.0.1:9000/bcl", true},
			{"http://[::1]:9000/bcl", true},
			{"http://localhost/bcl", true},
			{"http://rp.example.com/bcl", false},
			{"https://rp.example.com/bcl#frag", false},
			{"/relative", false},
			{"ftp://rp.example.com/bcl", false},
			{"https://user:pw@rp.example.com/bcl", false},
		} {
			info, err := e.p.CreateClient(ctx, provider.ClientSpec{FirstParty: true, RedirectURIs: []string{rpRedirectURI},
				BackchannelLogoutURI: c.uri, BackchannelLogoutSessionRequired: true})
			if c.ok != (err == nil) {
				t.Errorf("CreateClient with %q: got error %v, want ok=%v", c.uri, err, c.ok)
				continue
			}
			if err == nil && (info.BackchannelLogoutURI != c.uri || !info.BackchannelLogoutSessionRequired) {
				t.Errorf("CreateClient with %q: got %+v", c.uri, info)
			}
		}
		info := e.client(t, provider.ClientSpec{ID: "up", FirstParty: true})
		uri, required := "https://rp.example.com/logout", true
		got, err := e.p.UpdateClient(ctx, info.ClientID, provider.ClientUpdate{BackchannelLogoutURI: &uri, BackchannelLogoutSessionRequired: &required})
		if err != nil || got.BackchannelLogoutURI != uri || !got.BackchannelLogoutSessionRequired {
			t.Errorf("UpdateClient: got %+v, %v", got, err)
		}
		if stored, err := e.store.ClientByID(ctx, "up"); err != nil || stored.BackchannelLogoutURI != uri {
			t.Errorf("stored client: %+v, %v", stored, err)
		}
		bad := "http://rp.example.com/logout"
		if _, err := e.p.UpdateClient(ctx, "up", provider.ClientUpdate{BackchannelLogoutURI: &bad}); err == nil {
			t.Errorf("UpdateClient to plain http on a public host: got no error")
		}
	})
}

// TestBackchannelLogoutDeliveryRules: a redirect is not followed (it is a failed delivery,
// retried later), and a logout URI that breaks the registration rules (written to the
// database behind the provider's back) is given up on at once, never posted to.
func TestBackchannelLogoutDeliveryRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newBCLEnv(t, b)
		ctx := context.Background()
		var redirected atomic.Int32
		mover := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/moved" {
				redirected.Add(1)
				return
			}
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
		}))
		t.Cleanup(mover.Close)
		moving := e.client(t, provider.ClientSpec{ID: "moving", FirstParty: true, BackchannelLogoutURI: mover.URL + "/bcl"})
		plain := e.client(t, provider.ClientSpec{ID: "plain", FirstParty: true, BackchannelLogoutURI: "https://rp.example.com/bcl"})
		stored, err := e.store.ClientByID(ctx, plain.ClientID)
		if err != nil {
			t.Fatal(err)
		}
		stored.BackchannelLogoutURI = "http://rp.example.com/bcl" // plain http to a public host
		if err := e.store.UpdateClient(ctx, stored); err != nil {
			t.Fatal(err)
		}
		user := e.user(t, "rules@example.com", "Rules")
		br := e.browser(t)
		e.relyingParty(t, moving).signIn(t, e.env, br, user.Email)
		e.relyingParty(t, plain).signIn(t, e.env, br, user.Email)
		if p := br.post(t, e.issuer+"/api/public/logout", url.Values{}); p.status != http.StatusOK {
			t.Fatalf("public logout: got %s", p)
		}
		if n := e.deliver(t); n != 0 {
			t.Errorf("%d delivered, want 0", n)
		}
		if redirected.Load() != 0 {
			t.Errorf("the redirect was followed")
		}
		msgs, err := e.store.PendingLogouts(ctx)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("outbox: %+v, %v; want both messages", msgs, err)
		}
		for _, m := range msgs {
			switch m.ClientID {
			case "moving":
				if m.FailedAt != nil || !strings.Contains(m.LastError, "307") {
					t.Errorf("redirected delivery: got %+v, want a retry after the 307", m)
				}
			case "plain":
				if m.FailedAt == nil || !strings.Contains(m.LastError, "refused") {
					t.Errorf("delivery to plain http: got %+v, want it given up at once", m)
				}
			}
		}
	})
}

// TestBackchannelLogoutNotStarvedByHangingEndpoints: 48 clients whose back-channel logout
// endpoints accept connections and never answer, with three logout messages queued each
// before it, do not hold up a healthy client's logout token: it arrives within 5 seconds,
// while the hanging endpoints are still being waited for.
func TestBackchannelLogoutNotStarvedByHangingEndpoints(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		const hanging, perHanging = 48, 3
		holes := make([]*blackHole, hanging)
		for i := range holes {
			holes[i] = newBlackHole(t)
		}
		e := newEnv(t, b, provider.Config{JanitorInterval: -1,
			BackchannelLogout: provider.BackchannelLogoutConfig{Interval: 50 * time.Millisecond}})
		victim := newLogoutReceiver(t)
		e.client(t, provider.ClientSpec{ID: "victim", FirstParty: true, BackchannelLogoutURI: victim.uri()})
		user := e.user(t, "starved@example.com", "Starved")
		now := time.Now().UTC()
		session := func(clients ...string) *publicauth.Session {
			s := &publicauth.Session{IDHash: randomString(32), UserID: user.ID, Kind: publicauth.SessionPublic,
				Method: publicauth.MethodPassword, AuthTime: now, ExpiresAt: now.Add(time.Hour)}
			if err := e.store.CreateSession(ctx, s); err != nil {
				t.Fatal(err)
			}
			for _, c := range clients {
				if err := e.store.RecordSessionClient(ctx, s.SID, c); err != nil {
					t.Fatal(err)
				}
			}
			return s
		}
		var all []string
		for i, h := range holes {
			id := fmt.Sprintf("hanging-%02d", i)
			e.client(t, provider.ClientSpec{ID: id, FirstParty: true, BackchannelLogoutURI: h.url("/backchannel-logout")})
			all = append(all, id)
		}
		for range perHanging {
			if err := e.store.DeleteSession(ctx, session(all...).IDHash); err != nil {
				t.Fatal(err)
			}
		}
		// Bounded wait until the worker is held up by the hanging endpoints.
		reached := func() (n int32) {
			for _, h := range holes {
				n += h.conns.Load()
			}
			return n
		}
		for i := 0; i < 250 && reached() < hanging; i++ {
			time.Sleep(20 * time.Millisecond)
		}
		if err := e.store.DeleteSession(ctx, session("victim").IDHash); err != nil {
			t.Fatal(err)
		}

		// Bounded wait: the token must be there within 5 seconds of its session's end.
		deadline := time.Now().Add(5 * time.Second)
		for len(victim.received()) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		got := victim.received()
		if len(got) != 1 {
			t.Fatalf("the healthy client holds %d logout tokens 5 s after its session ended, want 1 (hanging endpoints reached: %d)", len(got), reached())
		}
		if aud := unverifiedClaim(got[0], "aud"); aud != "victim" {
			t.Errorf("token aud: got %q, want victim", aud)
		}
	})
}
