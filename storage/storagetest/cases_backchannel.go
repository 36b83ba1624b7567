package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

func backchannelCases() []storageCase {
	return []storageCase{
		{"SessionEndQueuesLogouts", testSessionEndQueuesLogouts},
		{"ClaimLogouts", testClaimLogouts},
		{"ClaimLogoutsOnePerClient", testClaimLogoutsOnePerClient},
		{"LogoutEndpointBackoff", testLogoutEndpointBackoff},
		{"SessionEndRacesAuthorization", testSessionEndRacesAuthorization},
	}
}

// sidSession is a fosite session of a grant made in the browser session sid, as the
// provider's is.
type sidSession struct {
	openid.DefaultSession
	SID string `json:"sid"`
}

func (s *sidSession) BrowserSessionID() string { return s.SID }

var _ storage.BrowserSessionIDer = (*sidSession)(nil)

// grantIn is newRequest with its session made in the browser session sid.
func grantIn(t *testing.T, client *storage.Client, subject, sid string) *fosite.Request {
	t.Helper()
	r := newRequest(t, client, subject, t0.Add(24*time.Hour)) // outlives the sessions
	r.Session = &sidSession{DefaultSession: *r.Session.(*openid.DefaultSession), SID: sid}
	return r
}

// mustSession starts a session of userID expiring at exp; CreateSession draws its SID.
func mustSession(t *testing.T, s *storage.Store, userID string, exp time.Time) *publicauth.Session {
	t.Helper()
	sess := &publicauth.Session{IDHash: randomID(t), UserID: userID, Kind: publicauth.SessionPublic,
		Method: publicauth.MethodPassword, AuthTime: exp.Add(-time.Hour), ExpiresAt: exp}
	mustNoErr(t, "CreateSession", s.CreateSession(context.Background(), sess))
	if len(sess.SID) < 32 {
		t.Fatalf("CreateSession: got SID %q, want a random id", sess.SID)
	}
	return sess
}

func pending(t *testing.T, s *storage.Store) []storage.LogoutMessage {
	t.Helper()
	msgs, err := s.PendingLogouts(context.Background())
	mustNoErr(t, "PendingLogouts", err)
	return msgs
}

// testSessionEndQueuesLogouts: ending a session (DeleteSession, or the janitor for an
// expired one) writes one outbox message per client with a back-channel logout URI that
// was issued a code in it, and revokes the codes and refresh tokens issued in it, all in
// the transaction of the end: a rollback leaves everything as it was.
func testSessionEndQueuesLogouts(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	bcl := newClient("bcl")
	bcl.BackchannelLogoutURI = "https://bcl.example/logout"
	bcl.BackchannelLogoutSessionRequired = true
	mustNoErr(t, "CreateClient", s.CreateClient(ctx, bcl))
	if got, err := s.ClientByID(ctx, "bcl"); err != nil || got.BackchannelLogoutURI != bcl.BackchannelLogoutURI || !got.BackchannelLogoutSessionRequired {
		t.Fatalf("ClientByID: got %+v, %v; want its back-channel logout registration", got, err)
	}
	quiet := mustCreateClient(t, s, "quiet")
	u := mustCreateUser(t, s, "bcl@example.com")
	one, two := mustSession(t, s, u.ID, t0.Add(time.Hour)), mustSession(t, s, u.ID, t0.Add(2*time.Hour))
	for _, r := range []struct{ sid, client string }{{one.SID, "bcl"}, {one.SID, "quiet"}, {one.SID, "bcl"}, {two.SID, "bcl"}} {
		mustNoErr(t, "RecordSessionClient", s.RecordSessionClient(ctx, r.sid, r.client))
	}
	for _, g := range []struct {
		name, sid string
		client    *storage.Client
	}{{"one", one.SID, bcl}, {"one-quiet", one.SID, quiet}, {"two", two.SID, bcl}} {
		req := grantIn(t, g.client, u.ID, g.sid)
		mustNoErr(t, "create code", s.CreateAuthorizeCodeSession(ctx, "code-"+g.name, req))
		mustNoErr(t, "create refresh token", s.CreateRefreshTokenSession(ctx, "rt-"+g.name, "at-"+g.name, req))
	}
	wantGrants := func(when, name string, revoked bool) {
		t.Helper()
		var wantCode, wantRT error
		if revoked {
			wantCode, wantRT = fosite.ErrInvalidatedAuthorizeCode, fosite.ErrInactiveToken
		}
		_, err := s.GetAuthorizeCodeSession(ctx, "code-"+name, newSession())
		checkErr(t, when+": code "+name, err, wantCode)
		_, err = s.GetRefreshTokenSession(ctx, "rt-"+name, newSession())
		checkErr(t, when+": refresh token "+name, err, wantRT)
	}

	failed := errors.New("the logout failed")
	err := s.InTx(ctx, func(ctx context.Context) error {
		mustNoErr(t, "DeleteSession in a transaction", s.DeleteSession(ctx, one.IDHash))
		return failed
	})
	checkErr(t, "rolled-back transaction", err, failed)
	if got := pending(t, s); len(got) != 0 {
		t.Errorf("outbox after a rollback: got %+v, want empty", got)
	}
	wantGrants("after a rollback", "one", false)

	mustNoErr(t, "DeleteSession", s.DeleteSession(ctx, one.IDHash))
	mustNoErr(t, "DeleteSession again", s.DeleteSession(ctx, one.IDHash))
	checkErr(t, "RecordSessionClient of an ended session", s.RecordSessionClient(ctx, one.SID, "bcl"), storage.ErrNotFound)
	got := pending(t, s)
	if len(got) != 1 || got[0].ClientID != "bcl" || got[0].SID != one.SID || got[0].Subject != u.ID || got[0].Attempts != 0 || got[0].ID == "" {
		t.Fatalf("outbox after the session ended: got %+v, want one message to bcl for %s", got, one.SID)
	}
	wantGrants("after the end", "one", true)
	wantGrants("after the end", "one-quiet", true)
	wantGrants("after the end of another session", "two", false)

	// The janitor ends the expired session the same way.
	_, err = s.DeleteExpired(ctx, t0.Add(3*time.Hour), 0)
	mustNoErr(t, "DeleteExpired", err)
	got = pending(t, s)
	if len(got) != 2 || got[1].SID != two.SID || got[1].ID == got[0].ID {
		t.Fatalf("outbox after the janitor: got %+v, want a second message for %s", got, two.SID)
	}
	wantGrants("after the janitor", "two", true)
	_, _, err = s.SessionByIDHash(ctx, two.IDHash, t0)
	checkErr(t, "expired session after the janitor", err, publicauth.ErrSessionNotFound)
}

// queueLogouts ends, for each client named in perClient, that many sessions in which it was
// issued a code (creating the client with a back-channel logout URI), and returns the
// messages queued, oldest first.
func queueLogouts(t *testing.T, s *storage.Store, email string, perClient map[string]int) []storage.LogoutMessage {
	t.Helper()
	ctx := context.Background()
	u := mustCreateUser(t, s, email)
	for id, n := range perClient {
		c := newClient(id)
		c.BackchannelLogoutURI = "https://" + id + ".example/logout"
		mustNoErr(t, "CreateClient", s.CreateClient(ctx, c))
		for range n {
			sess := mustSession(t, s, u.ID, t0)
			mustNoErr(t, "RecordSessionClient", s.RecordSessionClient(ctx, sess.SID, id))
		}
	}
	mustNoErr(t, "DeleteUserSessions", s.DeleteUserSessions(ctx, u.ID))
	return pending(t, s)
}

// claimClients claims as c says and returns the claimed messages' clients, sorted.
func claimClients(t *testing.T, s *storage.Store, c storage.LogoutClaim) []string {
	t.Helper()
	msgs, err := s.ClaimLogouts(context.Background(), c)
	mustNoErr(t, "ClaimLogouts", err)
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.ClientID)
	}
	slices.Sort(out)
	return out
}

// testClaimLogouts: concurrent claims share the due messages out without overlap; a claim
// holds its messages for the lease; delivered messages go; a message given up on is never
// claimed again and stays until the janitor deletes it after its keep time.
func testClaimLogouts(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	const n = 12
	clients := map[string]int{}
	for i := range n {
		clients[fmt.Sprintf("bcl-%02d", i)] = 1
	}
	if got := queueLogouts(t, s, "claims@example.com", clients); len(got) != n {
		t.Fatalf("outbox: %d messages, want %d", len(got), n)
	}
	now := time.Now().Add(time.Minute)
	const lease = time.Minute
	claim := func(at time.Time, limit int) storage.LogoutClaim {
		return storage.LogoutClaim{Now: at, Lease: lease, Limit: limit}
	}

	var mu sync.Mutex
	claimed := map[string]int{}
	errs := runConcurrently(6, func(int) error {
		msgs, err := s.ClaimLogouts(ctx, claim(now, 5))
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			claimed[m.ID]++
			if m.Attempts != 1 {
				t.Errorf("claimed %s with attempts %d, want 1", m.ID, m.Attempts)
			}
		}
		return err
	})
	for _, err := range errs {
		mustNoErr(t, "ClaimLogouts", err)
	}
	total := 0
	for id, c := range claimed {
		total += c
		if c != 1 {
			t.Errorf("message %s claimed %d times at once", id, c)
		}
	}
	// Six claims of five each can take all twelve; with SKIP LOCKED or the write lock none
	// is taken twice. Claim what is left, if anything, then nothing is due.
	rest, err := s.ClaimLogouts(ctx, claim(now, n))
	mustNoErr(t, "ClaimLogouts", err)
	if total+len(rest) != n {
		t.Errorf("claimed %d + %d messages, want %d", total, len(rest), n)
	}
	if more, err := s.ClaimLogouts(ctx, claim(now.Add(lease-time.Second), n)); err != nil || len(more) != 0 {
		t.Errorf("claim within the lease: got %d messages, %v; want none", len(more), err)
	}

	after := now.Add(lease + time.Second)
	again, err := s.ClaimLogouts(ctx, claim(after, n))
	mustNoErr(t, "ClaimLogouts after the lease", err)
	if len(again) != n || again[0].Attempts != 2 {
		t.Fatalf("claim after the lease: got %d messages (attempts %d), want %d at attempt 2", len(again), again[0].Attempts, n)
	}
	mustNoErr(t, "LogoutDelivered", s.LogoutDelivered(ctx, again[0].ID))
	mustNoErr(t, "LogoutFailed (retry)", s.LogoutFailed(ctx, again[1].ID, "503", after.Add(10*time.Second), false, after, 0))
	mustNoErr(t, "LogoutFailed (give up)", s.LogoutFailed(ctx, again[2].ID, "gone", after, true, after, 24*time.Hour))
	retry, err := s.ClaimLogouts(ctx, claim(after.Add(10*time.Second), n))
	mustNoErr(t, "ClaimLogouts at the retry", err)
	if len(retry) != 1 || retry[0].ID != again[1].ID {
		t.Errorf("claim at the retry time: got %+v, want only %s", retry, again[1].ID)
	}
	late, err := s.ClaimLogouts(ctx, claim(after.Add(48*time.Hour), n))
	mustNoErr(t, "ClaimLogouts much later", err)
	if len(late) != n-2 {
		t.Errorf("claim much later: got %d, want %d (not the delivered one, not the failed one)", len(late), n-2)
	}
	var failedMsg *storage.LogoutMessage
	for _, m := range pending(t, s) {
		if m.ID == again[2].ID {
			failedMsg = &m
		}
		if m.ID == again[0].ID {
			t.Errorf("the delivered message is still in the outbox")
		}
	}
	if failedMsg == nil || failedMsg.FailedAt == nil || failedMsg.LastError != "gone" {
		t.Fatalf("the given-up message: got %+v, want it kept, marked failed", failedMsg)
	}
	_, err = s.DeleteExpired(ctx, after.Add(25*time.Hour), 0)
	mustNoErr(t, "DeleteExpired", err)
	for _, m := range pending(t, s) {
		if m.ID == again[2].ID {
			t.Errorf("the given-up message outlived its keep time")
		}
	}
}

// testClaimLogoutsOnePerClient: a claim takes at most one message of each client, the
// oldest, and none of a client the caller is busy with, so a client with many messages
// queued cannot fill a claim; the limit holds across clients.
func testClaimLogoutsOnePerClient(t *testing.T, s *storage.Store) {
	queueLogouts(t, s, "fair@example.com", map[string]int{"many": 3, "one": 1, "other": 1})
	now := time.Now().Add(time.Minute)
	claim := func(limit int, busy ...string) storage.LogoutClaim {
		return storage.LogoutClaim{Now: now, Lease: time.Minute, Limit: limit, Busy: busy}
	}
	for _, step := range []struct {
		name  string
		claim storage.LogoutClaim
		want  []string
	}{
		{"one of each client, none of a busy one", claim(10, "other"), []string{"many", "one"}},
		{"the next of the client with more", claim(10), []string{"many", "other"}},
		{"none of a busy client", claim(10, "many"), []string{}},
		{"the limit", claim(0), []string{}},
		{"the last one", claim(1), []string{"many"}},
		{"nothing left", claim(10), []string{}},
	} {
		if got := claimClients(t, s, step.claim); !slices.Equal(got, step.want) {
			t.Errorf("%s: claimed for %v, want %v", step.name, got, step.want)
		}
	}
}

// testLogoutEndpointBackoff: while a client's endpoint backs off after a failure none of its
// messages is claimed, new ones included; once the back-off passes they are claimed only by
// a claim for failing endpoints, the streak growing with each failure; a delivery ends the
// streak, and the janitor forgets a streak its keep time after the back-off.
func testLogoutEndpointBackoff(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	queueLogouts(t, s, "backoff@example.com", map[string]int{"down": 3, "up": 1})
	now := time.Now().Add(time.Minute).UTC().Truncate(time.Second)
	const lease = time.Minute
	healthy := func(at time.Time) []string {
		return claimClients(t, s, storage.LogoutClaim{Now: at, Lease: lease, Limit: 10})
	}
	failing := func(at time.Time) []string {
		return claimClients(t, s, storage.LogoutClaim{Now: at, Lease: lease, Limit: 10, Failing: true})
	}
	var streaks []int
	backoff := func(streak int) time.Duration {
		streaks = append(streaks, streak)
		return time.Duration(streak) * 10 * time.Second
	}
	const keep = time.Hour
	want := func(what string, got []string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: claimed for %v, want %v", what, got, want)
		}
	}

	first, err := s.ClaimLogouts(ctx, storage.LogoutClaim{Now: now, Lease: lease, Limit: 10})
	mustNoErr(t, "ClaimLogouts", err)
	if len(first) != 2 {
		t.Fatalf("first claim: got %+v, want one message of down and one of up", first)
	}
	want("failing endpoints before any failure", failing(now))
	for _, m := range first {
		if m.ClientID == "up" {
			mustNoErr(t, "LogoutDelivered", s.LogoutDelivered(ctx, m.ID))
			mustNoErr(t, "LogoutEndpointDelivered", s.LogoutEndpointDelivered(ctx, "up"))
		} else {
			mustNoErr(t, "LogoutEndpointFailed", s.LogoutEndpointFailed(ctx, "down", now, backoff, keep))
		}
	}
	eps, err := s.LogoutEndpoints(ctx)
	mustNoErr(t, "LogoutEndpoints", err)
	if len(eps) != 1 || eps[0].ClientID != "down" || eps[0].Failures != 1 || !eps[0].RetryAt.Equal(now.Add(10*time.Second)) {
		t.Fatalf("endpoints after one failure: got %+v, want down at streak 1, retried 10 s later", eps)
	}
	want("healthy claim during the back-off", healthy(now.Add(time.Second)))
	want("failing claim during the back-off", failing(now.Add(time.Second)))
	want("healthy claim after the back-off", healthy(now.Add(11*time.Second)))
	want("failing claim after the back-off", failing(now.Add(11*time.Second)), "down")
	mustNoErr(t, "LogoutEndpointFailed again", s.LogoutEndpointFailed(ctx, "down", now.Add(11*time.Second), backoff, keep))
	want("failing claim during the longer back-off", failing(now.Add(30*time.Second)))
	want("failing claim after it", failing(now.Add(32*time.Second)), "down")
	if !slices.Equal(streaks, []int{1, 2}) {
		t.Errorf("back-off asked for streaks %v, want [1 2]", streaks)
	}
	mustNoErr(t, "LogoutEndpointDelivered", s.LogoutEndpointDelivered(ctx, "down"))
	want("healthy claim once delivered", healthy(now.Add(2*lease)), "down")

	mustNoErr(t, "LogoutEndpointFailed", s.LogoutEndpointFailed(ctx, "up", now, backoff, keep))
	_, err = s.DeleteExpired(ctx, now.Add(10*time.Second+keep-time.Second), 0)
	mustNoErr(t, "DeleteExpired", err)
	if eps, _ := s.LogoutEndpoints(ctx); len(eps) != 1 {
		t.Errorf("endpoints before the keep time: got %+v, want up's streak", eps)
	}
	_, err = s.DeleteExpired(ctx, now.Add(10*time.Second+keep+time.Second), 0)
	mustNoErr(t, "DeleteExpired", err)
	if eps, _ := s.LogoutEndpoints(ctx); len(eps) != 0 {
		t.Errorf("endpoints after the keep time: got %+v, want none", eps)
	}
}

// testSessionEndRacesAuthorization: a session ending while a code is issued in it either
// sees the client (and queues its logout message, and revokes the code) or makes the issue
// fail, leaving no code: a client is never recorded in a session that has ended without
// being told, and no code of an ended session can be redeemed. The issue is the provider's:
// the code, then the session's client, in one transaction.
func testSessionEndRacesAuthorization(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	bcl := newClient("bcl")
	bcl.BackchannelLogoutURI = "https://bcl.example/logout"
	mustNoErr(t, "CreateClient", s.CreateClient(ctx, bcl))
	u := mustCreateUser(t, s, "race@example.com")
	const rounds = 20
	recorded := map[string]bool{}
	for round := range rounds {
		sess := mustSession(t, s, u.ID, t0)
		code := fmt.Sprint("race-code-", round)
		var recordErr, endErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			recordErr = s.InTx(ctx, func(ctx context.Context) error {
				if err := s.CreateAuthorizeCodeSession(ctx, code, grantIn(t, bcl, u.ID, sess.SID)); err != nil {
					return err
				}
				return s.RecordSessionClient(ctx, sess.SID, "bcl")
			})
		}()
		go func() { defer wg.Done(); endErr = s.DeleteSession(ctx, sess.IDHash) }()
		wg.Wait()
		mustNoErr(t, "DeleteSession", endErr)
		if recordErr != nil && !errors.Is(recordErr, storage.ErrSessionEnded) {
			t.Fatalf("RecordSessionClient: %v", recordErr)
		}
		recorded[sess.SID] = recordErr == nil
		_, err := s.GetAuthorizeCodeSession(ctx, code, newSession())
		switch {
		case recordErr == nil && !errors.Is(err, fosite.ErrInvalidatedAuthorizeCode):
			t.Errorf("round %d: the code issued before the session ended: %v, want revoked", round, err)
		case recordErr != nil && !errors.Is(err, fosite.ErrNotFound):
			t.Errorf("round %d: the code of a refused issue: %v, want none", round, err)
		}
	}
	// A session already ended: the issue fails, in one statement or in a begun transaction
	// (another statement after the record), and leaves no code.
	ended := mustSession(t, s, u.ID, t0)
	mustNoErr(t, "DeleteSession", s.DeleteSession(ctx, ended.IDHash))
	for i, then := range []func(ctx context.Context) error{
		func(context.Context) error { return nil },
		func(ctx context.Context) error { _, err := s.ClientByID(ctx, "bcl"); return err },
		func(ctx context.Context) error { return s.InTx(ctx, func(context.Context) error { return nil }) },
	} {
		code := fmt.Sprint("ended-code-", i)
		err := s.InTx(ctx, func(ctx context.Context) error {
			mustNoErr(t, "CreateAuthorizeCodeSession", s.CreateAuthorizeCodeSession(ctx, code, grantIn(t, bcl, u.ID, ended.SID)))
			if err := s.RecordSessionClient(ctx, ended.SID, "bcl"); err != nil {
				return err
			}
			return then(ctx)
		})
		checkErr(t, fmt.Sprintf("issue %d in an ended session", i), err, storage.ErrSessionEnded)
		_, err = s.GetAuthorizeCodeSession(ctx, code, newSession())
		checkErr(t, fmt.Sprintf("code %d of an ended session", i), err, fosite.ErrNotFound)
	}
	queued := map[string]bool{}
	for _, m := range pending(t, s) {
		queued[m.SID] = true
	}
	for sid, ok := range recorded {
		if ok != queued[sid] {
			t.Errorf("session %s: client recorded %v, logout queued %v; want both or neither", sid, ok, queued[sid])
		}
	}
}
