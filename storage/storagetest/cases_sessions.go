package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// sessionCases are the cases of ending sessions by their public id.
func sessionCases() []storageCase {
	return []storageCase{
		{"EndSessionBySID", testEndSessionBySID},
	}
}

// testEndSessionBySID: a live public session is ended by its public id and its user's id,
// as DeleteSession ends one (a logout message queued, its refresh tokens revoked), and the
// end is reported once; another user's id, an expired session, an admin session and an
// unknown or empty sid end nothing.
func testEndSessionBySID(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	bcl := newClient("bcl")
	bcl.BackchannelLogoutURI = "https://bcl.example/logout"
	mustNoErr(t, "CreateClient", s.CreateClient(ctx, bcl))
	u := mustCreateUser(t, s, "sid@example.com")
	other := mustCreateUser(t, s, "other-sid@example.com")
	live := mustSession(t, s, u.ID, t0.Add(time.Hour))
	expired := mustSession(t, s, u.ID, t0.Add(-time.Minute))
	admin := &publicauth.Session{IDHash: randomID(t), UserID: u.ID, Kind: publicauth.SessionAdmin,
		Method: publicauth.MethodPassword, AuthTime: t0, ExpiresAt: t0.Add(time.Hour)}
	mustNoErr(t, "CreateSession admin", s.CreateSession(ctx, admin))
	mustNoErr(t, "RecordSessionClient", s.RecordSessionClient(ctx, live.SID, "bcl"))
	req := grantIn(t, bcl, u.ID, live.SID)
	mustNoErr(t, "create refresh token", s.CreateRefreshTokenSession(ctx, "rt-live", "at-live", req))

	for _, c := range []struct{ name, sid, user string }{
		{"empty sid", "", u.ID},
		{"unknown sid", "no-such-sid", u.ID},
		{"another user's id", live.SID, other.ID},
		{"an expired session", expired.SID, u.ID},
		{"an admin session", admin.SID, u.ID},
	} {
		ended, err := s.EndSessionBySID(ctx, c.sid, c.user, t0)
		mustNoErr(t, "EndSessionBySID "+c.name, err)
		if ended {
			t.Errorf("EndSessionBySID of %s: ended a session", c.name)
		}
	}
	if _, _, err := s.SessionByIDHash(ctx, live.IDHash, t0); err != nil {
		t.Fatalf("the live session after refused ends: %v", err)
	}
	if got := pending(t, s); len(got) != 0 {
		t.Fatalf("outbox after refused ends: got %+v, want empty", got)
	}

	ended, err := s.EndSessionBySID(ctx, live.SID, u.ID, t0)
	mustNoErr(t, "EndSessionBySID", err)
	if !ended {
		t.Fatal("EndSessionBySID of the live session: ended nothing")
	}
	_, _, err = s.SessionByIDHash(ctx, live.IDHash, t0)
	checkErr(t, "the session after its end", err, publicauth.ErrSessionNotFound)
	if got := pending(t, s); len(got) != 1 || got[0].ClientID != "bcl" || got[0].SID != live.SID || got[0].Subject != u.ID {
		t.Errorf("outbox after the end: got %+v, want one message to bcl for %s", got, live.SID)
	}
	_, err = s.GetRefreshTokenSession(ctx, "rt-live", newSession())
	checkErr(t, "the session's refresh token", err, fosite.ErrInactiveToken)
	if ended, err := s.EndSessionBySID(ctx, live.SID, u.ID, t0); err != nil || ended {
		t.Errorf("EndSessionBySID again: ended %v, %v; want nothing ended", ended, err)
	}
	if _, _, err := s.SessionByIDHash(ctx, admin.IDHash, t0); err != nil {
		t.Errorf("the admin session after the public one ended: %v", err)
	}
}
