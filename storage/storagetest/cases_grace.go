package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/storage"
)

// testRefreshReuseGrace: a rotated refresh token is usable once more only in a refresh
// grant inside the grace window; of concurrent graced rotations exactly one wins, and the
// token's first successor dies with it; a revoked family has no grace.
func testRefreshReuseGrace(t *testing.T, s *storage.Store) {
	s.SetRefreshReuseGrace(time.Hour)
	defer s.SetRefreshReuseGrace(0)
	bg := context.Background()
	grant := storage.WithReuseGrace(bg)
	req := newRequest(t, mustCreateClient(t, s, "app"), "user-1", t0)
	mustNoErr(t, "create rt-0", s.CreateRefreshTokenSession(bg, "rt-0", "at-0", req))
	mustNoErr(t, "rotate rt-0", s.InTx(bg, func(ctx context.Context) error {
		if err := s.RotateRefreshToken(ctx, req.ID, "rt-0"); err != nil {
			return err
		}
		return s.CreateRefreshTokenSession(ctx, "rt-1", "at-1", req)
	}))

	_, err := s.GetRefreshTokenSession(bg, "rt-0", newSession())
	checkErr(t, "the rotated token outside a refresh grant", err, fosite.ErrInactiveToken)
	_, err = s.GetRefreshTokenSession(grant, "rt-0", newSession())
	checkErr(t, "the rotated token in a refresh grant inside the window", err, nil)

	const n = 8
	errs := runConcurrently(n, func(i int) error {
		ctx := storage.WithRequestMemo(grant)
		if _, err := s.GetRefreshTokenSession(ctx, "rt-0", newSession()); err != nil {
			return err
		}
		return s.InTx(ctx, func(ctx context.Context) error {
			if err := s.RotateRefreshToken(ctx, req.ID, "rt-0"); err != nil {
				return err
			}
			return s.CreateRefreshTokenSession(ctx, fmt.Sprintf("rt-g%d", i), "at-g", req)
		})
	})
	checkOneWinner(t, "RotateRefreshToken in grace", errs, fosite.ErrInactiveToken)
	_, err = s.GetRefreshTokenSession(bg, "rt-1", newSession())
	checkErr(t, "the first successor after the graced rotation", err, fosite.ErrInactiveToken)
	_, err = s.GetRefreshTokenSession(grant, "rt-1", newSession())
	checkErr(t, "the first successor has no grace of its own", err, fosite.ErrInactiveToken)
	_, err = s.GetRefreshTokenSession(grant, "rt-0", newSession())
	checkErr(t, "the rotated token after its one graced use", err, fosite.ErrInactiveToken)

	// A revoked family: its rotated tokens lose their grace.
	req2 := newRequest(t, mustCreateClient(t, s, "app2"), "user-2", t0)
	mustNoErr(t, "create rt-a", s.CreateRefreshTokenSession(bg, "rt-a", "at-a", req2))
	mustNoErr(t, "rotate rt-a", s.RotateRefreshToken(bg, req2.ID, "rt-a"))
	mustNoErr(t, "revoke", s.RevokeRefreshToken(bg, req2.ID))
	_, err = s.GetRefreshTokenSession(grant, "rt-a", newSession())
	checkErr(t, "a rotated token of a revoked family", err, fosite.ErrInactiveToken)
}

// graceRaceTrials is how many times testRefreshReuseGraceRace races a graced reuse against
// the successor's rotation.
const graceRaceTrials = 40

// graceRaceHold is how long the successor's rotation keeps its transaction open after
// writing: long enough that the graced reuse meets it in the middle of its work, which is
// where a family forked when the reuse did not wait for it.
const graceRaceHold = 25 * time.Millisecond

// testRefreshReuseGraceRace: a graced reuse of a rotated refresh token racing the rotation
// of its successor (the client retried with the old token while its answer did arrive
// after all) never leaves the family with two live tokens, whichever commits first.
func testRefreshReuseGraceRace(t *testing.T, s *storage.Store) {
	s.SetRefreshReuseGrace(time.Hour)
	defer s.SetRefreshReuseGrace(0)
	bg := context.Background()
	grant := storage.WithReuseGrace(bg)
	client := mustCreateClient(t, s, "app")
	// refresh exchanges old for next as a refresh grant does; written, if not nil, runs
	// inside its transaction once both writes are done.
	refresh := func(req *fosite.Request, old, next string, written func()) error {
		ctx := storage.WithRequestMemo(grant)
		if _, err := s.GetRefreshTokenSession(ctx, old, newSession()); err != nil {
			return err
		}
		return s.InTx(ctx, func(ctx context.Context) error {
			if err := s.RotateRefreshToken(ctx, req.ID, old); err != nil {
				return err
			}
			if err := s.CreateRefreshTokenSession(ctx, next, "at-"+next, req); err != nil {
				return err
			}
			if written != nil {
				written()
			}
			return nil
		})
	}
	forked := 0
	for trial := range graceRaceTrials {
		req := newRequest(t, client, "user-1", t0)
		id := func(name string) string { return fmt.Sprintf("t%d-%s", trial, name) }
		mustNoErr(t, "create rt-0", s.CreateRefreshTokenSession(bg, id("rt-0"), "at-0", req))
		mustNoErr(t, "rotate rt-0", refresh(req, id("rt-0"), id("rt-1"), nil))

		successorWritten := make(chan struct{})
		var successorErr, graceErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			successorErr = refresh(req, id("rt-1"), id("rt-2"), func() {
				close(successorWritten)
				time.Sleep(graceRaceHold)
			})
		})
		wg.Go(func() {
			<-successorWritten
			graceErr = refresh(req, id("rt-0"), id("rt-g"), nil)
		})
		wg.Wait()
		for what, err := range map[string]error{"the successor's rotation": successorErr, "the graced reuse": graceErr} {
			if err != nil && !errors.Is(err, fosite.ErrInactiveToken) {
				t.Fatalf("trial %d, %s: %v", trial, what, err)
			}
		}
		var live []string
		for _, sig := range []string{id("rt-0"), id("rt-1"), id("rt-2"), id("rt-g")} {
			if _, err := s.GetRefreshTokenSession(bg, sig, newSession()); err == nil {
				live = append(live, sig)
			}
		}
		if len(live) > 1 {
			forked++
			t.Errorf("trial %d: live refresh tokens %v, want at most one (successor's rotation: %v, graced reuse: %v)",
				trial, live, successorErr, graceErr)
		}
	}
	if forked > 0 {
		t.Errorf("the family forked in %d of %d trials", forked, graceRaceTrials)
	}
}
