package storage_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// Migration v17 gives every existing session its own random public id (sid), unrelated to
// its id hash, and existing clients no back-channel logout URI.
func TestMigrationV17GivesSessionsAPublicID(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, err := storage.Open(ctx, b.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.MigrateTo(ctx, 11); err != nil {
				t.Fatalf("migrate to v11: %v", err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			exp := now.Add(time.Hour)
			if err := s.ExecSQL(ctx, `INSERT INTO clients (id, created_at, updated_at) VALUES ('app', ?, ?)`, now, now); err != nil {
				t.Fatal(err)
			}
			hashes := []string{"s1", "s2", "s3"}
			for _, h := range hashes {
				if err := s.ExecSQL(ctx, `INSERT INTO sessions (id_hash, user_id, kind, method, auth_time, created_at, expires_at) VALUES (?, 'u1', ?, ?, ?, ?, ?)`,
					h, publicauth.SessionPublic, publicauth.MethodPassword, now, now, exp); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			random := regexp.MustCompile(`^[0-9a-f]{32}$`)
			seen := map[string]bool{}
			for _, h := range hashes {
				sess, _, err := s.SessionByIDHash(ctx, h, now)
				if err != nil {
					t.Fatalf("SessionByIDHash(%s): %v", h, err)
				}
				if !random.MatchString(sess.SID) || seen[sess.SID] {
					t.Errorf("session %s: got sid %q, want a fresh 128-bit hex id", h, sess.SID)
				}
				seen[sess.SID] = true
			}
			c, err := s.ClientByID(ctx, "app")
			if err != nil || c.BackchannelLogoutURI != "" || c.BackchannelLogoutSessionRequired {
				t.Errorf("client after v17: got %+v, %v; want no back-channel logout", c, err)
			}
		})
	}
}
