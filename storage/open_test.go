package storage_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestOpenRejectsUnknownDSN(t *testing.T) {
	cases := []struct {
		name string
		dsn  string
		want string
	}{
		{"unknown scheme", "mysql://root:hunter2@db/gatehouse", `unsupported dsn scheme "mysql"`},
		{"no scheme", "gatehouse.db", "dsn has no scheme"},
		{"sqlite without path", "sqlite:", "sqlite dsn has no path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := storage.Open(context.Background(), c.dsn)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q): got no error, want %q", c.dsn, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open(%q): got error %q, want it to contain %q", c.dsn, err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Open(%q): got error %q, which leaks the password", c.dsn, err)
			}
		})
	}
}

func TestOpenInMemory(t *testing.T) {
	ctx := context.Background()
	s, err := storage.Open(ctx, "sqlite::memory:")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := s.CreateClient(ctx, &storage.Client{ID: "c"}); err != nil {
		t.Fatalf("CreateClient: %v", err)
	}
	if _, err := s.ClientByID(ctx, "c"); err != nil {
		t.Errorf("ClientByID: got error %v, want the client", err)
	}
}

// TestConcurrentMigrate migrates one fresh database from several stores at once, as
// replicas starting together do.
func TestConcurrentMigrate(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := b.DSN(t)
			const n = 4
			stores := make([]*storage.Store, n)
			for i := range stores {
				s, err := storage.Open(ctx, dsn)
				if err != nil {
					t.Fatalf("Open #%d: %v", i, err)
				}
				t.Cleanup(func() { s.Close() })
				stores[i] = s
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, s := range stores {
				wg.Go(func() { errs[i] = s.Migrate(ctx) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("Migrate #%d: got error %v, want none", i, err)
				}
			}
			if err := stores[0].CreateClient(ctx, &storage.Client{ID: "c"}); err != nil {
				t.Fatalf("CreateClient after concurrent migrations: %v", err)
			}
			if _, err := stores[n-1].ClientByID(ctx, "c"); err != nil {
				t.Errorf("ClientByID from another store: got error %v, want the client", err)
			}
		})
	}
}
