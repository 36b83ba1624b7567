package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// checkResult is what one AccessTokenRevoked call answered.
type checkResult struct {
	revoked bool
	err     error
}

// startCheck runs AccessTokenRevoked for ref on s in a goroutine; its answer arrives on the
// channel returned.
func startCheck(ctx context.Context, s *storage.Store, ref storage.AccessTokenRef) <-chan checkResult {
	out := make(chan checkResult, 1)
	go func() {
		revoked, err := s.AccessTokenRevoked(ctx, ref)
		out <- checkResult{revoked, err}
	}()
	return out
}

// waitPending waits until s's gathering batch holds n checks.
func waitPending(t *testing.T, s *storage.Store, n int) {
	t.Helper()
	for range 2000 {
		if s.PendingRuleChecks() == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the gathering batch holds %d checks, want %d", s.PendingRuleChecks(), n)
}

// inFlight opens two replicas of b, gates r's revocation queries, and starts a check of
// ref(first) on r, returned once its query has read and waits at the gate: the query in
// flight the checks that follow gather behind.
func inFlight(t *testing.T, b storagetest.Backend, first string) (a, r *storage.Store, ran chan []string, gate chan struct{}, firstCheck <-chan checkResult) {
	t.Helper()
	a, r = b.Replicas(t)
	ran, gate = make(chan []string, 8), make(chan struct{})
	r.GateRuleChecks(ran, gate)
	firstCheck = startCheck(context.Background(), r, ref(first))
	<-ran
	return a, r, ran, gate, firstCheck
}

func ref(jti string) storage.AccessTokenRef {
	return storage.AccessTokenRef{JTI: jti, GrantID: "g-" + jti, Subject: "u", ClientID: "c",
		IssuedAt: time.Now().Add(-time.Minute)}
}

// TestCoalescedRevocationChecks: checks that arrive while a revocation query is in flight
// wait for it to end and then share one query, which starts after they arrived: a rule
// committed on another replica after the query in flight had read, but before the checks
// began, is seen by every one of them. One check giving up does not disturb the others.
func TestCoalescedRevocationChecks(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			// A check runs alone and reads before the revocation.
			a, r, ran, gate, first := inFlight(t, b, "revoked")
			// Replica a revokes; the check on r is still in flight.
			if err := a.RevokeAccessTokenID(ctx, "revoked", time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			// Checks after the revocation committed: they gather behind the one in flight.
			again := startCheck(ctx, r, ref("revoked"))
			others := []<-chan checkResult{startCheck(ctx, r, ref("other-1")), startCheck(ctx, r, ref("other-2"))}
			gone, leave := context.WithCancel(ctx)
			abandoned := startCheck(gone, r, ref("abandoned"))
			waitPending(t, r, 4)
			leave()
			if res := <-abandoned; !errors.Is(res.err, context.Canceled) {
				t.Errorf("abandoned check: %+v, want context.Canceled", res)
			}

			gate <- struct{}{} // the first query answers
			if res := <-first; res.err != nil || res.revoked {
				t.Errorf("the check read before the revocation: %+v, want not revoked", res)
			}
			batch := <-ran // the gathered checks' one query has run
			for _, key := range []string{"jti:revoked", "jti:other-1", "jti:other-2", "jti:abandoned", "sub:u"} {
				if !slices.Contains(batch, key) {
					t.Errorf("the batch's query lacks %s: %v", key, batch)
				}
			}
			gate <- struct{}{}
			if res := <-again; res.err != nil || !res.revoked {
				t.Errorf("a check that began after the revocation committed: %+v, want revoked", res)
			}
			for i, c := range others {
				if res := <-c; res.err != nil || res.revoked {
					t.Errorf("other check %d: %+v, want not revoked", i, res)
				}
			}
			select {
			case keys := <-ran:
				t.Errorf("a third query ran for four checks behind one: %v", keys)
			default:
			}
		})
	}
}

// TestCoalescedRevocationBatchBound: a gathering batch that reaches storage.MaxCoalesced
// checks starts at once, beside the query in flight, and later checks gather in a new one.
func TestCoalescedRevocationBatchBound(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			_, r, ran, gate, first := inFlight(t, b, "first")
			var full []<-chan checkResult
			for i := range storage.MaxCoalesced {
				full = append(full, startCheck(ctx, r, ref(fmt.Sprint("full-", i))))
			}
			fullBatch := <-ran // started while the first is still in flight
			if want := 2*storage.MaxCoalesced + 3; len(fullBatch) != want {
				t.Errorf("the full batch read %d keys, want %d (a jti and a grant a check, and the shared three)", len(fullBatch), want)
			}
			late := startCheck(ctx, r, ref("late"))
			waitPending(t, r, 1)
			close(gate)
			for _, c := range append(append(full, first), late) {
				if res := <-c; res.err != nil || res.revoked {
					t.Errorf("check: %+v, want not revoked", res)
				}
			}
			if keys := <-ran; !slices.Contains(keys, "jti:late") || len(keys) != 5 {
				t.Errorf("the batch after the full one read %v, want the late check's five keys", keys)
			}
		})
	}
}

// TestCoalescedRevocationFailure: when a batch's query fails, every check of that batch gets
// the error; none is answered "not revoked".
func TestCoalescedRevocationFailure(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			_, r, _, gate, first := inFlight(t, b, "first")
			var batch []<-chan checkResult
			for i := range 3 {
				batch = append(batch, startCheck(ctx, r, ref(fmt.Sprint("batched-", i))))
			}
			waitPending(t, r, 3)
			if err := r.Close(); err != nil { // the gathered batch's query will fail
				t.Fatal(err)
			}
			close(gate)
			if res := <-first; res.err != nil {
				t.Errorf("the first check read before the pool closed: %v", res.err)
			}
			for i, c := range batch {
				if res := <-c; res.err == nil {
					t.Errorf("batched check %d: %+v, want the query's error", i, res)
				}
			}
		})
	}
}
