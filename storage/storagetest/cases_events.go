package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/storage"
)

// securityEventCases are the cases of the audit trail (security_events).
func securityEventCases() []storageCase {
	return []storageCase{
		{"SecurityEventRollsBackWithItsChange", testSecurityEventRollback},
		{"SecurityEventsKeysetStable", testSecurityEventsKeyset},
		{"SecurityEventRetention", testSecurityEventRetention},
		{"SecurityEventIPTruncation", testSecurityEventIPTruncation},
	}
}

// listEvents lists every event f selects, one page at a time of size page.
func listEvents(t *testing.T, s *storage.Store, f storage.SecurityEventFilter, page int) []*storage.SecurityEvent {
	t.Helper()
	var out []*storage.SecurityEvent
	var after storage.SecurityEventCursor
	for range 1000 {
		rs, err := s.ListSecurityEvents(context.Background(), f, after, page)
		mustNoErr(t, "ListSecurityEvents", err)
		out = append(out, rs...)
		if len(rs) < page {
			return out
		}
		last := rs[len(rs)-1]
		after = storage.SecurityEventCursor{At: last.At, ID: last.ID}
	}
	t.Fatal("ListSecurityEvents: paging did not end")
	return nil
}

func testSecurityEventRollback(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "audit@example.com")
	errAbort := errors.New("abort")
	// A change that rolls back leaves no event; one that commits keeps its event.
	err := s.InTx(ctx, func(ctx context.Context) error {
		mustNoErr(t, "RecordSecurityEvent", s.RecordSecurityEvent(ctx, &events.PasswordReset{UserID: u.ID, Meta: events.Meta{At: time.Now()}}))
		return errAbort
	})
	checkErr(t, "InTx", err, errAbort)
	if got := listEvents(t, s, storage.SecurityEventFilter{}, 10); len(got) != 0 {
		t.Fatalf("after a rollback: got %d events, want none", len(got))
	}
	err = s.InTx(ctx, func(ctx context.Context) error {
		return s.RecordSecurityEvent(ctx, &events.PasswordReset{UserID: u.ID, Meta: events.Meta{At: time.Now()}})
	})
	mustNoErr(t, "InTx", err)
	got := listEvents(t, s, storage.SecurityEventFilter{}, 10)
	if len(got) != 1 || got[0].Type != "password.reset" || got[0].UserID != u.ID || got[0].ClientID != "" {
		t.Fatalf("after a commit: got %+v, want one password.reset of %s", got, u.ID)
	}
	// An event the trail does not keep writes nothing.
	mustNoErr(t, "RecordSecurityEvent", s.RecordSecurityEvent(ctx, &events.TokenIssued{ClientID: "app"}))
	if got := listEvents(t, s, storage.SecurityEventFilter{}, 10); len(got) != 1 {
		t.Errorf("TokenIssued: got %d events, want 1 (not recorded)", len(got))
	}
}

func testSecurityEventsKeyset(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	// Two events per instant, so paging must order within one time by id.
	var want []string
	for i := range 10 {
		r := &events.Record{ID: fmt.Sprintf("e%02d", i), At: t0.Add(time.Duration(i/2) * time.Second),
			Type: []string{"login.failed", "login.succeeded"}[i%2], UserID: []string{"alice", "bob"}[i%2]}
		if i == 9 {
			r.ClientID, r.Type = "app", "consent.granted"
		}
		mustNoErr(t, "AppendSecurityEvent", s.AppendSecurityEvent(ctx, r))
		want = append(want, r.ID)
	}
	ids := func(rs []*storage.SecurityEvent) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name string
		f    storage.SecurityEventFilter
		want string
	}{
		{"all", storage.SecurityEventFilter{}, strings.Join(want, ",")},
		{"one type", storage.SecurityEventFilter{Type: "login.failed"}, "e00,e02,e04,e06,e08"},
		{"a family", storage.SecurityEventFilter{Type: "login.*"}, "e00,e01,e02,e03,e04,e05,e06,e07,e08"},
		{"a user", storage.SecurityEventFilter{UserID: "bob"}, "e01,e03,e05,e07,e09"},
		{"a client", storage.SecurityEventFilter{ClientID: "app"}, "e09"},
		{"since and until", storage.SecurityEventFilter{Since: t0.Add(time.Second), Until: t0.Add(3 * time.Second)}, "e02,e03,e04,e05"},
		{"nothing", storage.SecurityEventFilter{Type: "key.added"}, ""},
	}
	for _, tt := range tests {
		for _, page := range []int{1, 3, 100} {
			if got := ids(listEvents(t, s, tt.f, page)); got != tt.want {
				t.Errorf("%s, pages of %d: got %s, want %s", tt.name, page, got, tt.want)
			}
		}
	}
	rs := listEvents(t, s, storage.SecurityEventFilter{}, 100)
	if !rs[0].At.Equal(t0) || rs[0].At.Location() != time.UTC || string(rs[0].Details) != "{}" || rs[0].IP.IsValid() {
		t.Errorf("first event: got at %v, details %s, ip %v; want %v in UTC, {} and no address", rs[0].At, rs[0].Details, rs[0].IP, t0)
	}
}

func testSecurityEventRetention(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for i, age := range []time.Duration{400 * 24 * time.Hour, 366 * 24 * time.Hour, 364 * 24 * time.Hour, time.Hour} {
		mustNoErr(t, "AppendSecurityEvent", s.AppendSecurityEvent(ctx, &events.Record{
			ID: fmt.Sprintf("r%d", i), At: now.Add(-age), Type: "login.failed"}))
	}
	// Without a retention nothing goes.
	_, err := s.DeleteExpired(ctx, now, 1)
	mustNoErr(t, "DeleteExpired", err)
	if got := listEvents(t, s, storage.SecurityEventFilter{}, 10); len(got) != 4 {
		t.Fatalf("without retention: got %d events, want 4", len(got))
	}
	s.SetSecurityEventRetention(365 * 24 * time.Hour)
	n, err := s.DeleteExpired(ctx, now, 1) // batches of one: the loop must go on
	mustNoErr(t, "DeleteExpired", err)
	got := listEvents(t, s, storage.SecurityEventFilter{}, 10)
	if n != 2 || len(got) != 2 || got[0].ID != "r2" || got[1].ID != "r3" {
		t.Errorf("with a year's retention: deleted %d, kept %v; want 2 deleted, r2 and r3 kept", n, got)
	}
}

func testSecurityEventIPTruncation(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		ip, whole, truncated string
	}{
		{"192.0.2.77", "192.0.2.77", "192.0.2.0"},
		{"2001:db8:1234:5678::1", "2001:db8:1234:5678::1", "2001:db8:1234::"},
		{"::ffff:198.51.100.9", "::ffff:198.51.100.9", "198.51.100.0"},
	}
	for i, tt := range tests {
		for _, truncate := range []bool{false, true} {
			s.SetSecurityEventIPTruncation(truncate)
			id := fmt.Sprintf("ip%d-%t", i, truncate)
			mustNoErr(t, "AppendSecurityEvent", s.AppendSecurityEvent(ctx, &events.Record{ID: id, At: at,
				Type: "login.failed", IP: netip.MustParseAddr(tt.ip), UserAgent: strings.Repeat("u", 1000),
				Details: json.RawMessage(`{"a":1}`)}))
			rs := listEvents(t, s, storage.SecurityEventFilter{}, 100)
			got := rs[len(rs)-1]
			want := tt.whole
			if truncate {
				want = tt.truncated
			}
			if got.ID != id || got.IP.String() != want || len(got.UserAgent) != events.MaxUserAgent || string(got.Details) != `{"a":1}` {
				t.Errorf("%s truncate=%t: got %s %v ua %d %s, want %s, ua %d", tt.ip, truncate, got.ID, got.IP, len(got.UserAgent), got.Details, want, events.MaxUserAgent)
			}
		}
	}
}
