package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/permissions"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// Migration v9 drops the foreign keys to users (SQLite rebuilds the tables): every row
// written before it survives, with its indexes, its foreign keys to clients still hold,
// and afterwards rows of an account without a users row are accepted.
func TestMigrationV9KeepsRowsAndDropsUserForeignKeys(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, err := storage.Open(ctx, b.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.MigrateTo(ctx, 8); err != nil {
				t.Fatalf("migrate to v8: %v", err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			exp := now.Add(time.Hour)
			for _, stmt := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO clients (id, created_at, updated_at) VALUES ('app', ?, ?)`, []any{now, now}},
				{`INSERT INTO users (id, email, email_lower, role, status, created_at, updated_at) VALUES ('u1', 'a@example.com', 'a@example.com', 'user', 'active', ?, ?)`, []any{now, now}},
				{`INSERT INTO sessions (id_hash, user_id, kind, method, auth_time, created_at, expires_at) VALUES ('s1', 'u1', ?, ?, ?, ?, ?)`,
					[]any{publicauth.SessionPublic, publicauth.MethodPassword, now, now, exp}},
				{`INSERT INTO consents (user_id, client_id, scopes, granted_at) VALUES ('u1', 'app', '["openid"]', ?)`, []any{now}},
				{`INSERT INTO one_time_tokens (id_hash, purpose, user_id, email, paused_request, created_at, expires_at) VALUES ('t1', ?, 'u1', 'a@example.com', 'ref', ?, ?)`,
					[]any{publicauth.PurposeMagicLink, now, exp}},
				{`INSERT INTO pin_challenges (id, user_id, pin_hash, kind, method, created_at, expires_at) VALUES ('c1', 'u1', 'h', ?, ?, ?, ?)`,
					[]any{publicauth.SessionPublic, publicauth.MethodPassword, now, exp}},
				{`INSERT INTO permissions (user_id, client_id, status, role, has_access, created_at, updated_at) VALUES ('u1', 'app', 'approved', 'user', TRUE, ?, ?)`, []any{now, now}},
				{`INSERT INTO user_identities (provider, subject, user_id, email, created_at) VALUES ('google', 'g1', 'u1', 'a@example.com', ?)`, []any{now}},
			} {
				if err := s.ExecSQL(ctx, stmt.sql, stmt.args...); err != nil {
					t.Fatalf("%s: %v", stmt.sql, err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}

			sess, u, err := s.SessionByIDHash(ctx, "s1", now)
			if err != nil || sess.UserID != "u1" || u == nil || u.Email != "a@example.com" {
				t.Errorf("SessionByIDHash: got %+v, %+v, %v; want the session of u1 with its user", sess, u, err)
			}
			if c, err := s.ConsentFor(ctx, "u1", "app"); err != nil || len(c.Scopes) != 1 {
				t.Errorf("ConsentFor: got %+v, %v; want the consent to openid", c, err)
			}
			if tok, err := s.UsableOneTimeToken(ctx, "t1", publicauth.PurposeMagicLink, now); err != nil || tok.PausedRequest != "ref" {
				t.Errorf("UsableOneTimeToken: got %+v, %v; want the token with its paused request", tok, err)
			}
			if ch, err := s.ReservePINAttempt(ctx, "c1", 5, now); err != nil || ch.UserID != "u1" {
				t.Errorf("ReservePINAttempt: got %+v, %v; want the challenge of u1", ch, err)
			}
			if r, err := s.Permission(ctx, "u1", "app"); err != nil || !r.HasAccess {
				t.Errorf("Permission: got %+v, %v; want the approved record", r, err)
			}
			if linked, err := s.UserByIdentity(ctx, "google", "g1"); err != nil || linked.ID != "u1" {
				t.Errorf("UserByIdentity: got %+v, %v; want u1", linked, err)
			}

			// The references to clients still hold; the ones to users are gone.
			err = s.ExecSQL(ctx, `INSERT INTO consents (user_id, client_id, scopes, granted_at) VALUES ('42', 'nope', '[]', ?)`, now)
			if err == nil {
				t.Error("a consent for an unknown client was stored; want the foreign key to clients to refuse it")
			}
			if err := s.SavePermission(ctx, &permissions.Record{
				UserID: "42", ClientID: "app", Status: permissions.StatusPending, Role: permissions.RoleNone,
				CreatedAt: now, UpdatedAt: now,
			}, true); err != nil {
				t.Errorf("SavePermission for an account without a users row: %v", err)
			}
			if err := s.ExecSQL(ctx, `INSERT INTO user_identities (provider, subject, user_id, email, created_at) VALUES ('google', 'g42', '42', '', ?)`, now); err != nil {
				t.Errorf("identity of an account without a users row: %v", err)
			}
			// The indexes were recreated: a second session of u1 shows in the per-user delete.
			if err := s.DeleteUserSessions(ctx, "u1"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.SessionByIDHash(ctx, "s1", now); err == nil {
				t.Error("session s1 survived DeleteUserSessions")
			}
			for _, index := range []string{"sessions_user_id_idx", "sessions_expires_at_idx", "one_time_tokens_user_purpose_idx",
				"pin_challenges_user_id_idx", "consents_client_id_idx", "permissions_client_status_created_idx", "user_identities_user_id_idx"} {
				if !s.HasIndex(ctx, index) {
					t.Errorf("index %s missing after v9", index)
				}
			}
		})
	}
}
