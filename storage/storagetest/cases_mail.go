package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

func mailCases() []storageCase {
	return []storageCase{
		{"MailOutboxClaim", testMailOutboxClaim},
		{"MailOutboxInTransaction", testMailOutboxInTransaction},
	}
}

// queuedMail is mail number i, queued at t0, useful for an hour, kept three days more.
func queuedMail(i int) *publicauth.QueuedMail {
	return &publicauth.QueuedMail{
		ID: fmt.Sprintf("mail-%02d", i), Kind: publicauth.MailMagicLink, UserID: "u-1",
		Sealed: []byte{0x00, byte(i), 0xff}, CreatedAt: t0,
		MailExpiresAt: t0.Add(time.Hour), PurgeAt: t0.Add(73 * time.Hour),
	}
}

// testMailOutboxClaim: concurrent claims (workers on several replicas) never take the same
// mail; a claimed mail is not due again within its lease; a failed one comes back at its
// retry time, a given-up one never, its message erased; delivered ones are gone; the
// counts follow; and the janitor deletes every row at its PurgeAt, not before.
func testMailOutboxClaim(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	const n = 12
	for i := range n {
		mustNoErr(t, "EnqueueMail", s.EnqueueMail(ctx, queuedMail(i)))
	}
	if q, err := s.MailQueueState(ctx, t0); err != nil || q != (publicauth.MailQueue{Queued: n, Due: n}) {
		t.Errorf("MailQueueState at t0 = %+v, %v; want %d queued and due", q, err, n)
	}
	if early, err := s.ClaimMail(ctx, t0.Add(-time.Second), time.Minute, n); err != nil || len(early) != 0 {
		t.Errorf("claim before the mails were queued: got %d, %v; want none", len(early), err)
	}
	now := t0.Add(time.Second)
	const lease = time.Minute
	var mu sync.Mutex
	claimed := map[string]int{}
	errs := runConcurrently(6, func(int) error {
		mails, err := s.ClaimMail(ctx, now, lease, 5)
		mu.Lock()
		defer mu.Unlock()
		for _, m := range mails {
			claimed[m.ID]++
			if m.Attempts != 1 || m.Kind != publicauth.MailMagicLink || m.UserID != "u-1" || len(m.Sealed) != 3 ||
				!m.MailExpiresAt.Equal(t0.Add(time.Hour)) || !m.CreatedAt.Equal(t0) {
				t.Errorf("claimed %+v, want it as queued at attempt 1", m)
			}
		}
		return err
	})
	for _, err := range errs {
		mustNoErr(t, "ClaimMail", err)
	}
	total := 0
	for id, c := range claimed {
		total += c
		if c != 1 {
			t.Errorf("mail %s claimed %d times at once", id, c)
		}
	}
	rest, err := s.ClaimMail(ctx, now, lease, n)
	mustNoErr(t, "ClaimMail", err)
	if total+len(rest) != n {
		t.Errorf("claimed %d + %d mails, want %d", total, len(rest), n)
	}
	if more, err := s.ClaimMail(ctx, now.Add(lease-time.Second), lease, n); err != nil || len(more) != 0 {
		t.Errorf("claim within the lease: got %d mails, %v; want none", len(more), err)
	}
	if q, err := s.MailQueueState(ctx, now); err != nil || q != (publicauth.MailQueue{Queued: n}) {
		t.Errorf("MailQueueState while leased = %+v, %v; want %d queued, none due", q, err, n)
	}

	after := now.Add(lease + time.Second)
	again, err := s.ClaimMail(ctx, after, lease, n)
	mustNoErr(t, "ClaimMail after the lease", err)
	if len(again) != n || again[0].Attempts != 2 {
		t.Fatalf("claim after the lease: got %d mails (attempts %d), want %d at attempt 2", len(again), again[0].Attempts, n)
	}
	mustNoErr(t, "MailDelivered", s.MailDelivered(ctx, again[0].ID))
	mustNoErr(t, "MailDelivered (again)", s.MailDelivered(ctx, again[0].ID))
	retryAt := after.Add(10 * time.Second)
	mustNoErr(t, "MailFailed (retry)", s.MailFailed(ctx, again[1].ID, "421 try later", retryAt, false, after))
	mustNoErr(t, "MailFailed (give up)", s.MailFailed(ctx, again[2].ID, "expired", retryAt, true, after))
	if q, err := s.MailQueueState(ctx, retryAt); err != nil || q != (publicauth.MailQueue{Queued: n - 2, Due: 1, GivenUp: 1}) {
		t.Errorf("MailQueueState at the retry = %+v, %v; want %d queued, 1 due, 1 given up", q, err, n-2)
	}
	retry, err := s.ClaimMail(ctx, retryAt, lease, n)
	mustNoErr(t, "ClaimMail at the retry", err)
	if len(retry) != 1 || retry[0].ID != again[1].ID || retry[0].Attempts != 3 || retry[0].LastError != "421 try later" {
		t.Errorf("claim at the retry time: got %+v, want only %s at attempt 3 with its last error", retry, again[1].ID)
	}
	late, err := s.ClaimMail(ctx, after.Add(48*time.Hour), lease, n)
	mustNoErr(t, "ClaimMail much later", err)
	if len(late) != n-2 {
		t.Errorf("claim much later: got %d, want %d (not the delivered one, not the given-up one)", len(late), n-2)
	}
	pending, err := s.PendingMail(ctx)
	mustNoErr(t, "PendingMail", err)
	var gaveUp *publicauth.QueuedMail
	for _, m := range pending {
		switch m.ID {
		case again[0].ID:
			t.Errorf("the delivered mail is still in the outbox")
		case again[2].ID:
			gaveUp = &m
		}
	}
	if gaveUp == nil || gaveUp.FailedAt == nil || !gaveUp.FailedAt.Equal(after) || gaveUp.LastError != "expired" || len(gaveUp.Sealed) != 0 {
		t.Fatalf("the given-up mail: got %+v, want it kept, failed at %v, its message erased", gaveUp, after)
	}

	_, err = s.DeleteExpired(ctx, t0.Add(72*time.Hour), 0)
	mustNoErr(t, "DeleteExpired before the purge time", err)
	if pending, _ := s.PendingMail(ctx); len(pending) != n-1 {
		t.Errorf("after DeleteExpired before the purge time: %d mails, want %d", len(pending), n-1)
	}
	_, err = s.DeleteExpired(ctx, t0.Add(74*time.Hour), 0)
	mustNoErr(t, "DeleteExpired", err)
	if pending, _ := s.PendingMail(ctx); len(pending) != 0 {
		t.Errorf("after DeleteExpired past the purge time: %d mails, want none", len(pending))
	}
}

// testMailOutboxInTransaction: a mail queued in a transaction exists exactly when the
// transaction commits, with its sealed bytes intact.
func testMailOutboxInTransaction(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	rollback := errors.New("roll back")
	err := s.InTx(ctx, func(ctx context.Context) error {
		mustNoErr(t, "EnqueueMail", s.EnqueueMail(ctx, queuedMail(1)))
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("InTx = %v, want the rollback", err)
	}
	if pending, _ := s.PendingMail(ctx); len(pending) != 0 {
		t.Fatalf("a mail queued in a rolled-back transaction exists: %+v", pending)
	}
	mustNoErr(t, "InTx", s.InTx(ctx, func(ctx context.Context) error {
		return s.EnqueueMail(ctx, queuedMail(2))
	}))
	pending, err := s.PendingMail(ctx)
	mustNoErr(t, "PendingMail", err)
	if len(pending) != 1 || pending[0].ID != "mail-02" || !bytes.Equal(pending[0].Sealed, queuedMail(2).Sealed) ||
		!pending[0].PurgeAt.Equal(t0.Add(73*time.Hour)) || pending[0].FailedAt != nil || pending[0].Attempts != 0 {
		t.Errorf("after the commit: %+v, want mail-02 as queued", pending)
	}
	if err := s.EnqueueMail(ctx, queuedMail(2)); err == nil {
		t.Errorf("queuing a mail id twice succeeded")
	}
}
