package storagetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
)

// parCases are the cases of pushed authorization requests (RFC 9126) and of clients that
// must push theirs.
func parCases() []storageCase {
	return []storageCase{
		{"PushedRequestRoundTrip", testPushedRequestRoundTrip},
		{"ConcurrentPushedRequestConsumption", testConcurrentPushedRequestConsumption},
		{"PushedRequestsExpireAndDieWithTheirClient", testPushedRequestsExpire},
		{"ExpiredPushedRequestDeletedWhenMet", testExpiredPushedRequestDeletedWhenMet},
		{"ClientRequirePAR", testClientRequirePAR},
	}
}

func newPushedRequest(id, clientID string) *storage.PushedRequest {
	return &storage.PushedRequest{
		IDHash: id, ClientID: clientID,
		Form:        "client_id=" + clientID + "&code_challenge=abc&response_type=code&state=xyz",
		RequestedAt: t0, ExpiresAt: t0.Add(time.Minute),
	}
}

// testPushedRequestRoundTrip: a pushed request is consumed once, by its own client, before
// it expires; a consumption by another client leaves it in place (at its expiry:
// testExpiredPushedRequestDeletedWhenMet).
func testPushedRequestRoundTrip(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	mustCreateClient(t, s, "other")
	want := newPushedRequest("par-1", "app")
	mustNoErr(t, "CreatePushedRequest", s.CreatePushedRequest(ctx, want))
	checkErr(t, "CreatePushedRequest twice", s.CreatePushedRequest(ctx, want), storage.ErrConflict)
	checkErr(t, "CreatePushedRequest of an unknown client",
		s.CreatePushedRequest(ctx, newPushedRequest("par-2", "nobody")), storage.ErrNotFound)

	for _, c := range []struct {
		name, id, client string
		now              time.Time
	}{
		{"by another client", "par-1", "other", t0},
		{"of an unknown id", "par-x", "app", t0},
	} {
		_, err := s.ConsumePushedRequest(ctx, c.id, c.client, c.now)
		checkErr(t, "ConsumePushedRequest "+c.name, err, storage.ErrNotFound)
	}
	got, err := s.ConsumePushedRequest(ctx, "par-1", "app", t0.Add(time.Minute-time.Microsecond))
	mustNoErr(t, "ConsumePushedRequest", err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ConsumePushedRequest:\ngot  %+v\nwant %+v", got, want)
	}
	_, err = s.ConsumePushedRequest(ctx, "par-1", "app", t0)
	checkErr(t, "ConsumePushedRequest again", err, storage.ErrNotFound)
}

// testConcurrentPushedRequestConsumption: of concurrent consumptions of one request, inside
// transactions or not, exactly one gets it.
func testConcurrentPushedRequestConsumption(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	for _, inTx := range []bool{false, true} {
		id := "par-tx"
		if !inTx {
			id = "par-pool"
		}
		mustNoErr(t, "CreatePushedRequest", s.CreatePushedRequest(ctx, newPushedRequest(id, "app")))
		errs := runConcurrently(10, func(int) error {
			consume := func(ctx context.Context) error {
				_, err := s.ConsumePushedRequest(ctx, id, "app", t0)
				return err
			}
			if inTx {
				return s.InTx(ctx, consume)
			}
			return consume(ctx)
		})
		checkOneWinner(t, "ConsumePushedRequest "+id, errs, storage.ErrNotFound)
	}
}

// testPushedRequestsExpire: the janitor deletes expired pushed requests and keeps live
// ones; deleting a client deletes its pushed requests.
func testPushedRequestsExpire(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	mustCreateClient(t, s, "gone")
	expired := newPushedRequest("par-old", "app")
	expired.ExpiresAt = t0.Add(-time.Second)
	mustNoErr(t, "CreatePushedRequest expired", s.CreatePushedRequest(ctx, expired))
	mustNoErr(t, "CreatePushedRequest live", s.CreatePushedRequest(ctx, newPushedRequest("par-live", "app")))
	mustNoErr(t, "CreatePushedRequest of a client to delete", s.CreatePushedRequest(ctx, newPushedRequest("par-gone", "gone")))

	n, err := s.DeleteExpired(ctx, t0, 0)
	mustNoErr(t, "DeleteExpired", err)
	if n != 1 {
		t.Errorf("DeleteExpired: got %d rows deleted, want 1", n)
	}
	mustNoErr(t, "DeleteClient", s.DeleteClient(ctx, "gone"))
	// Consumed as of long before any expiry, so only deletion hides a row.
	before := t0.Add(-time.Hour)
	_, err = s.ConsumePushedRequest(ctx, "par-old", "app", before)
	checkErr(t, "ConsumePushedRequest of the expired request", err, storage.ErrNotFound)
	_, err = s.ConsumePushedRequest(ctx, "par-gone", "gone", before)
	checkErr(t, "ConsumePushedRequest of the deleted client's request", err, storage.ErrNotFound)
	_, err = s.ConsumePushedRequest(ctx, "par-live", "app", before)
	checkErr(t, "ConsumePushedRequest of the live request", err, nil)
}

// testExpiredPushedRequestDeletedWhenMet: consuming an expired pushed request, by its own
// client or another, deletes it, so it does not wait for the janitor; a live request
// named by another client stays.
func testExpiredPushedRequestDeletedWhenMet(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	mustCreateClient(t, s, "other")
	for _, by := range []string{"app", "other"} {
		id := "par-expired-by-" + by
		mustNoErr(t, "CreatePushedRequest", s.CreatePushedRequest(ctx, newPushedRequest(id, "app")))
		_, err := s.ConsumePushedRequest(ctx, id, by, t0.Add(time.Minute))
		checkErr(t, "ConsumePushedRequest at its expiry by "+by, err, storage.ErrNotFound)
		// As of long before its expiry, only deletion hides it.
		_, err = s.ConsumePushedRequest(ctx, id, "app", t0)
		checkErr(t, "ConsumePushedRequest after meeting it expired, by "+by, err, storage.ErrNotFound)
	}
	mustNoErr(t, "CreatePushedRequest live", s.CreatePushedRequest(ctx, newPushedRequest("par-live", "app")))
	_, err := s.ConsumePushedRequest(ctx, "par-live", "other", t0)
	checkErr(t, "ConsumePushedRequest of a live request by another client", err, storage.ErrNotFound)
	_, err = s.ConsumePushedRequest(ctx, "par-live", "app", t0)
	checkErr(t, "ConsumePushedRequest of the live request by its client", err, nil)
	n, err := s.DeleteExpired(ctx, t0.Add(time.Hour), 0)
	mustNoErr(t, "DeleteExpired", err)
	if n != 0 {
		t.Errorf("DeleteExpired after the expired requests were met: got %d rows deleted, want 0", n)
	}
}

// testClientRequirePAR: the require-PAR mark is stored, read back and changed by
// UpdateClient.
func testClientRequirePAR(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	c := newClient("strict")
	c.RequirePAR = true
	mustNoErr(t, "CreateClient", s.CreateClient(ctx, c))
	mustCreateClient(t, s, "lax")
	for id, want := range map[string]bool{"strict": true, "lax": false} {
		got, err := s.ClientByID(ctx, id)
		mustNoErr(t, "ClientByID", err)
		if got.RequirePAR != want {
			t.Errorf("ClientByID(%s).RequirePAR: got %v, want %v", id, got.RequirePAR, want)
		}
	}
	c.RequirePAR = false
	mustNoErr(t, "UpdateClient", s.UpdateClient(ctx, c))
	got, err := s.ClientByID(ctx, "strict")
	mustNoErr(t, "ClientByID after update", err)
	if got.RequirePAR {
		t.Errorf("ClientByID(strict).RequirePAR after update: got true, want false")
	}
}
