package provider_test

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestRefreshReuseGrace: with --refresh-reuse-grace a rotated refresh token works once more
// inside the window and the family keeps one live token; a second reuse, a reuse after
// the window, a revoked token, and any reuse with the window off revoke the grant.
func TestRefreshReuseGrace(t *testing.T) {
	const grace = 30 * time.Second
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		var offset atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		store := b.OpenWith(t, storage.WithClock(clock))
		e := newEnvOnStore(t, store, func(string) provider.Config {
			return provider.Config{RefreshReuseGrace: grace}
		}, provider.WithClock(clock))
		user := e.user(t, "grace@example.com", "Grace")
		client := e.client(t, provider.ClientSpec{ID: "mobile", FirstParty: true})
		rp := e.relyingParty(t, client)
		br := e.browser(t)
		// grant signs in anew and returns its first refresh token, with the clock at 0.
		grant := func(t *testing.T) string {
			t.Helper()
			offset.Store(0)
			_, tok := rp.signIn(t, e, br, user.Email)
			return tok.RefreshToken
		}
		ok := func(t *testing.T, what, rt string) jsonResponse {
			t.Helper()
			r := e.refresh(t, client, rt)
			if r.status != http.StatusOK {
				t.Fatalf("%s: got %s, want 200", what, r)
			}
			return r
		}
		refused := func(t *testing.T, what, rt string) {
			t.Helper()
			if r := e.refresh(t, client, rt); r.status != http.StatusBadRequest || r.body["error"] != "invalid_grant" {
				t.Errorf("%s: got %s, want invalid_grant", what, r)
			}
		}

		t.Run("lost answer retried inside the window", func(t *testing.T) {
			r0 := grant(t)
			lost := ok(t, "first refresh", r0)
			offset.Store(int64(10 * time.Second))
			ok(t, "retry of the spent token inside the window", r0)
			// The lost answer's tokens are dead: its refresh token without grace of its
			// own, its access token by the rule on the grant.
			wantRefused(t, e, client, lost.body["access_token"].(string))
			refused(t, "the lost answer's refresh token", lost.body["refresh_token"].(string))
			// …which was reuse, so the grant is gone: a fresh grant shows the retried
			// token goes on working when the lost one is never used.
			r0 = grant(t)
			ok(t, "first refresh", r0)
			offset.Store(int64(10 * time.Second))
			r2 := ok(t, "retry", r0).body["refresh_token"].(string)
			r3 := ok(t, "the retried answer's refresh token", r2).body["refresh_token"].(string)
			ok(t, "and its successor", r3)
		})

		t.Run("second reuse inside the window revokes the grant", func(t *testing.T) {
			r0 := grant(t)
			ok(t, "first refresh", r0)
			offset.Store(int64(5 * time.Second))
			r2 := ok(t, "first retry", r0)
			offset.Store(int64(10 * time.Second))
			refused(t, "second retry", r0)
			refused(t, "the first retry's refresh token after the second", r2.body["refresh_token"].(string))
			wantRefused(t, e, client, r2.body["access_token"].(string))
		})

		t.Run("reuse after the window revokes the grant", func(t *testing.T) {
			r0 := grant(t)
			r1 := ok(t, "first refresh", r0)
			offset.Store(int64(grace + time.Second))
			refused(t, "reuse after the window", r0)
			refused(t, "the successor after the reuse", r1.body["refresh_token"].(string))
		})

		t.Run("a revoked grant has no grace", func(t *testing.T) {
			r0 := grant(t)
			r1 := ok(t, "first refresh", r0)
			rev := e.call(t, http.MethodPost, "/api/oauth/revoke", url.Values{"token": {r1.body["refresh_token"].(string)}}, basicAuth(client))
			if rev.status != http.StatusOK {
				t.Fatalf("revoke: got %s", rev)
			}
			offset.Store(int64(time.Second))
			refused(t, "a spent token of a revoked grant inside the window", r0)
		})

		t.Run("a credential change takes the grace too", func(t *testing.T) {
			r0 := grant(t)
			ok(t, "first refresh", r0)
			if err := store.RevokeUserGrants(t.Context(), user.ID); err != nil {
				t.Fatal(err)
			}
			refused(t, "a spent token after the user's grants were revoked", r0)
		})

		t.Run("an answer cut after the commit", func(t *testing.T) {
			r0 := grant(t)
			// The refresh is sent on a raw connection that is closed before the answer is
			// read, as a phone losing its network would.
			conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			body := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r0}}.Encode()
			req, _ := http.NewRequest(http.MethodPost, e.issuer+"/api/oauth/token", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(client.ClientID, client.ClientSecret)
			w := bufio.NewWriter(conn)
			if err := req.Write(w); err != nil || w.Flush() != nil {
				t.Fatalf("send: %v", err)
			}
			// Wait (bounded) until the server has committed the rotation, then drop the
			// connection unread.
			committed := false
			for range 200 {
				if got := e.introspect(t, client, r0)["active"]; got == false {
					committed = true
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			_ = conn.Close()
			if !committed {
				t.Fatal("the cut refresh was never committed")
			}
			offset.Store(int64(3 * time.Second))
			r2 := ok(t, "the client's retry", r0)
			ok(t, "the retried answer's refresh token", r2.body["refresh_token"].(string))
		})
	})
}

// TestRefreshReuseWithoutGrace: by default every reuse revokes the grant, even a moment
// after the rotation.
func TestRefreshReuseWithoutGrace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		user := e.user(t, "strict@example.com", "Strict")
		client := e.client(t, provider.ClientSpec{ID: "mobile", FirstParty: true})
		_, tok := e.relyingParty(t, client).signIn(t, e, e.browser(t), user.Email)
		r1 := e.refresh(t, client, tok.RefreshToken)
		if r1.status != http.StatusOK {
			t.Fatalf("refresh: got %s", r1)
		}
		wantOAuthError(t, e.refresh(t, client, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
		wantOAuthError(t, e.refresh(t, client, r1.body["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")
	})
}
