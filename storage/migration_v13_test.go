package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// Migration v13 adds clients.require_par: a client registered before it keeps letting its
// requests go unpushed, and can be made to push them.
func TestMigrationV13LeavesExistingClientsFreeToPush(t *testing.T) {
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
			if err := s.ExecSQL(ctx, `INSERT INTO {clients} (id, created_at, updated_at) VALUES ('app', ?, ?)`, now, now); err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			c, err := s.ClientByID(ctx, "app")
			if err != nil || c.RequirePAR {
				t.Fatalf("ClientByID: got %+v, %v; want the client, not requiring PAR", c, err)
			}
			c.RequirePAR = true
			if err := s.UpdateClient(ctx, c); err != nil {
				t.Fatalf("UpdateClient: %v", err)
			}
			if c, err = s.ClientByID(ctx, "app"); err != nil || !c.RequirePAR {
				t.Errorf("ClientByID after update: got %+v, %v; want it requiring PAR", c, err)
			}
		})
	}
}
