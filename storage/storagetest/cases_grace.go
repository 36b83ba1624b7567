package storagetest

import (
	"context"
	"fmt"
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
