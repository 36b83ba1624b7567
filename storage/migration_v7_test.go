package storage_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// Rows of mailed links and PIN challenges written before v7 kept the paused request's
// token in clear in their resume path. Migration v7 turns that into the reference (the
// token's hash) and empties resume; other resume paths stay as they were.
func TestMigrationV7RefersToPausedRequestsByHash(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, err := storage.Open(ctx, b.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.MigrateTo(ctx, 4); err != nil {
				t.Fatalf("migrate to v4: %v", err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			exp := now.Add(time.Hour)
			const token = "paused-request-token"
			sum := sha256.Sum256([]byte(token))
			ref := hex.EncodeToString(sum[:])
			for _, stmt := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO users (id, email, email_lower, created_at, updated_at) VALUES ('u1', 'a@example.com', 'a@example.com', ?, ?)`, []any{now, now}},
				{`INSERT INTO one_time_tokens (id_hash, purpose, user_id, email, resume, created_at, expires_at) VALUES ('in-flow', ?, 'u1', 'a@example.com', ?, ?, ?)`,
					[]any{publicauth.PurposeMagicLink, "/api/oauth/authorize/resume?request=" + token, now, exp}},
				{`INSERT INTO one_time_tokens (id_hash, purpose, user_id, email, resume, created_at, expires_at) VALUES ('no-flow', ?, 'u1', 'a@example.com', '/signed-in', ?, ?)`,
					[]any{publicauth.PurposeMagicLink, now, exp}},
				{`INSERT INTO pin_challenges (id, user_id, pin_hash, kind, method, resume, created_at, expires_at) VALUES ('ch', 'u1', 'h', ?, ?, ?, ?, ?)`,
					[]any{publicauth.SessionPublic, publicauth.MethodMagicLink, "/api/oauth/authorize/resume?request=" + token, now, exp}},
			} {
				if err := s.ExecSQL(ctx, stmt.sql, stmt.args...); err != nil {
					t.Fatalf("%s: %v", stmt.sql, err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}

			for id, want := range map[string]publicauth.Destination{
				"in-flow": {PausedRequest: ref},
				"no-flow": {Resume: "/signed-in"},
			} {
				tok, err := s.UsableOneTimeToken(ctx, id, publicauth.PurposeMagicLink, now)
				if err != nil {
					t.Fatalf("UsableOneTimeToken(%s): %v", id, err)
				}
				got := publicauth.Destination{RedirectURI: tok.RedirectURI, Resume: tok.Resume, PausedRequest: tok.PausedRequest}
				if got != want {
					t.Errorf("token %s destination %+v, want %+v", id, got, want)
				}
			}
			ch, err := s.ReservePINAttempt(ctx, "ch", 5, now)
			if err != nil {
				t.Fatalf("ReservePINAttempt: %v", err)
			}
			if want := (publicauth.Destination{PausedRequest: ref}); ch.Destination != want {
				t.Errorf("challenge destination %+v, want %+v", ch.Destination, want)
			}
		})
	}
}
