package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/permissions"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// Migration v20 moves every permission audit entry into security_events: the audit
// listing answers the same entries (ids, actors, records before and after, in order)
// after it, and the trail lists them as permission.changed events.
func TestMigrationV20MovesThePermissionAuditLog(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, err := storage.Open(ctx, b.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.MigrateTo(ctx, 19); err != nil {
				t.Fatalf("migrate to v19: %v", err)
			}
			t0 := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
			before := `{"UserID":"u1","ClientID":"app","Status":"pending","Role":"none"}`
			after := `{"UserID":"u1","ClientID":"app","Status":"approved","Role":"user"}`
			for _, stmt := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO permission_audit (id, user_id, client_id, actor_type, actor_id, action, before_record, after_record, at)
					VALUES ('b-second', 'u1', 'app', 'admin', 'root', 'update', ?, ?, ?)`, []any{before, after, t0.Add(time.Second)}},
				{`INSERT INTO permission_audit (id, user_id, client_id, actor_type, actor_id, action, before_record, after_record, at)
					VALUES ('a-first', 'u1', 'app', 'user', 'u1', 'request-access', NULL, ?, ?)`, []any{before, t0}},
			} {
				if err := s.ExecSQL(ctx, stmt.sql, stmt.args...); err != nil {
					t.Fatalf("%s: %v", stmt.sql, err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			entries, err := s.ListAuditEntries(ctx, permissions.AuditFilter{UserID: "u1"}, permissions.Cursor{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 2 {
				t.Fatalf("audit entries: got %d, want 2", len(entries))
			}
			first, second := entries[0], entries[1]
			if first.ID != "a-first" || first.Action != "request-access" || first.Actor != (permissions.Actor{Kind: "user", ID: "u1"}) ||
				first.Before != nil || first.After == nil || first.After.Status != "pending" || !first.At.Equal(t0) {
				t.Errorf("first entry: got %+v", first)
			}
			if second.ID != "b-second" || second.Actor != (permissions.Actor{Kind: "admin", ID: "root"}) ||
				second.Before == nil || second.Before.Status != "pending" || second.After.Status != "approved" || second.After.Role != "user" {
				t.Errorf("second entry: got %+v", second)
			}
			evs, err := s.ListSecurityEvents(ctx, storage.SecurityEventFilter{Type: "permission.*"}, storage.SecurityEventCursor{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 2 || evs[1].Type != "permission.changed" || evs[1].Outcome != "update" || evs[1].ClientID != "app" {
				t.Errorf("security events: got %+v, want the two permission.changed", evs)
			}
		})
	}
}
