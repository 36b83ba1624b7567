package storagetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
)

// deviceCases are the cases of the device authorization grant's codes.
func deviceCases() []storageCase {
	return []storageCase{
		{"DeviceCodeLifecycle", testDeviceCodeLifecycle},
		{"DeviceCodeSpentOnce", testDeviceCodeSpentOnce},
		{"DeviceCodeRevokedUser", testDeviceCodeRevokedUser},
	}
}

func newDeviceCode(hash, userCode string, now time.Time) *storage.DeviceCode {
	return &storage.DeviceCode{DeviceCodeHash: hash, UserCode: userCode, ClientID: "tv", RequestID: "grant-" + hash,
		Form: "scope=openid", RequestedAt: now, ExpiresAt: now.Add(10 * time.Minute), PollInterval: 5 * time.Second}
}

// testDeviceCodeLifecycle: a code is found by its user code while pending, polls judged
// too soon lengthen the interval and a racing poll slows down, the first decision is the only one,
// and a taken user code conflicts.
func testDeviceCodeLifecycle(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	mustNoErr(t, "CreateDeviceCode", s.CreateDeviceCode(ctx, newDeviceCode("h1", "BCDFGHJK", now)))
	if err := s.CreateDeviceCode(ctx, newDeviceCode("h2", "BCDFGHJK", now)); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("second code with the same user code: got %v, want ErrConflict", err)
	}
	d, err := s.PendingDeviceCode(ctx, "BCDFGHJK", now)
	mustNoErr(t, "PendingDeviceCode", err)
	if d.DeviceCodeHash != "h1" || d.ClientID != "tv" || d.Status != storage.DeviceCodePending || d.PollInterval != 5*time.Second {
		t.Errorf("PendingDeviceCode: got %+v", d)
	}
	if _, err := s.PendingDeviceCode(ctx, "BCDFGHJK", now.Add(11*time.Minute)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("PendingDeviceCode after expiry: got %v, want ErrNotFound", err)
	}

	// The caller judges whether a poll came too soon; the store records it and lengthens
	// the interval of a poll too soon.
	for _, step := range []struct {
		at       time.Duration
		tooSoon  bool
		interval time.Duration
	}{
		{0, false, 5 * time.Second},                 // the first poll
		{2 * time.Second, true, 10 * time.Second},   // too soon: slow_down, +5 s
		{8 * time.Second, true, 15 * time.Second},   // too soon again
		{30 * time.Second, false, 15 * time.Second}, // on time
	} {
		d, err := s.DeviceCodeByHash(ctx, "h1")
		mustNoErr(t, "DeviceCodeByHash", err)
		slowDown, err := s.PollDeviceCode(ctx, d, now.Add(step.at), step.tooSoon)
		mustNoErr(t, "PollDeviceCode", err)
		if slowDown != step.tooSoon || d.PollInterval != step.interval || !d.LastPolledAt.Equal(now.Add(step.at)) {
			t.Errorf("poll at +%v: slow down %v with interval %v, last poll %v; want %v with %v at %v", step.at, slowDown,
				d.PollInterval, d.LastPolledAt, step.tooSoon, step.interval, now.Add(step.at))
		}
		if stored, err := s.DeviceCodeByHash(ctx, "h1"); err != nil || stored.PollInterval != step.interval {
			t.Errorf("poll at +%v: stored interval %v, %v; want %v", step.at, stored.PollInterval, err, step.interval)
		}
	}
	// A poll that read the row before another poll wrote it loses: it slows down, on time
	// or not.
	stale, err := s.DeviceCodeByHash(ctx, "h1")
	mustNoErr(t, "DeviceCodeByHash", err)
	fresh := *stale
	if _, err := s.PollDeviceCode(ctx, &fresh, now.Add(time.Minute), false); err != nil {
		t.Fatal(err)
	}
	if slowDown, err := s.PollDeviceCode(ctx, stale, now.Add(time.Minute), false); err != nil || !slowDown {
		t.Errorf("racing poll: slow down %v, %v; want true", slowDown, err)
	}

	mustNoErr(t, "DecideDeviceCode", s.DecideDeviceCode(ctx, "h1", true, "user-1", `{"subject":"user-1"}`, now.Add(time.Minute)))
	if err := s.DecideDeviceCode(ctx, "h1", false, "", "", now.Add(time.Minute)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("second decision: got %v, want ErrNotFound", err)
	}
	d, err = s.DeviceCodeByHash(ctx, "h1")
	mustNoErr(t, "DeviceCodeByHash", err)
	if d.Status != storage.DeviceCodeApproved || d.Subject != "user-1" || d.Session != `{"subject":"user-1"}` || d.DecidedAt == nil {
		t.Errorf("after approval: got %+v", d)
	}
	if _, err := s.PendingDeviceCode(ctx, "BCDFGHJK", now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("PendingDeviceCode of a decided code: got %v, want ErrNotFound", err)
	}

	mustNoErr(t, "CreateDeviceCode", s.CreateDeviceCode(ctx, newDeviceCode("h3", "CDFGHJKL", now)))
	if err := s.DecideDeviceCode(ctx, "h3", true, "user-1", "{}", now.Add(11*time.Minute)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("decision after expiry: got %v, want ErrNotFound", err)
	}
	n, err := s.DeleteExpired(ctx, now.Add(11*time.Minute), 0)
	mustNoErr(t, "DeleteExpired", err)
	if _, err := s.DeviceCodeByHash(ctx, "h3"); !errors.Is(err, storage.ErrNotFound) || n < 2 {
		t.Errorf("after the janitor (%d rows): DeviceCodeByHash got %v, want ErrNotFound", n, err)
	}
}

// testDeviceCodeSpentOnce: of concurrent spends of an approved code exactly one succeeds,
// and a code neither approved nor unexpired cannot be spent.
func testDeviceCodeSpentOnce(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	mustNoErr(t, "CreateDeviceCode", s.CreateDeviceCode(ctx, newDeviceCode("spend", "DFGHJKLM", now)))
	if err := s.SpendDeviceCode(ctx, "spend", now); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("spending a pending code: got %v, want ErrNotFound", err)
	}
	mustNoErr(t, "DecideDeviceCode", s.DecideDeviceCode(ctx, "spend", true, "user-1", "{}", now))
	if err := s.SpendDeviceCode(ctx, "spend", now.Add(11*time.Minute)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("spending an expired code: got %v, want ErrNotFound", err)
	}
	const racers = 8
	var wg sync.WaitGroup
	errs := make(chan error, racers)
	for range racers {
		wg.Go(func() {
			errs <- s.InTx(ctx, func(ctx context.Context) error { return s.SpendDeviceCode(ctx, "spend", now) })
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, storage.ErrNotFound):
		default:
			t.Errorf("SpendDeviceCode: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent spends succeeded, want exactly 1", won, racers)
	}
}

// testDeviceCodeRevokedUser: revoking a user's grants, or what the user holds at the
// client, denies the codes the user approved that have not yielded tokens; deleting the
// client deletes its codes.
func testDeviceCodeRevokedUser(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("tv")))
	for _, c := range []struct{ hash, userCode string }{{"r1", "FGHJKLMN"}, {"r2", "GHJKLMNP"}, {"r3", "HJKLMNPQ"}} {
		mustNoErr(t, "CreateDeviceCode", s.CreateDeviceCode(ctx, newDeviceCode(c.hash, c.userCode, now)))
	}
	mustNoErr(t, "DecideDeviceCode", s.DecideDeviceCode(ctx, "r1", true, "user-1", "{}", now))
	mustNoErr(t, "DecideDeviceCode", s.DecideDeviceCode(ctx, "r2", true, "user-2", "{}", now))
	mustNoErr(t, "RevokeUserGrants", s.RevokeUserGrants(ctx, "user-1"))
	mustNoErr(t, "RevokeTokensOf", s.RevokeTokensOf(ctx, "user-2", "tv"))
	for _, hash := range []string{"r1", "r2"} {
		d, err := s.DeviceCodeByHash(ctx, hash)
		mustNoErr(t, "DeviceCodeByHash", err)
		if d.Status != storage.DeviceCodeDenied {
			t.Errorf("%s after revocation: status %q, want denied", hash, d.Status)
		}
	}
	mustNoErr(t, "DeleteClient", s.DeleteClient(ctx, "tv"))
	if _, err := s.DeviceCodeByHash(ctx, "r3"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a deleted client's device code: got %v, want ErrNotFound", err)
	}
}
