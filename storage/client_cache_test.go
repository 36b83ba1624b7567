package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestClientCacheAcrossStores: a client change made through one store (another replica,
// the CLI) reaches a second store on the same database at once on Postgres while it
// listens, and within the cache's refresh bound otherwise (SQLite, or nobody listening).
func TestClientCacheAcrossStores(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			type cacheCase struct {
				name   string
				listen bool
				// refresh is the reader's bound; within is how soon the change must show.
				refresh, within time.Duration
			}
			cases := []cacheCase{{name: "refresh bound", refresh: 300 * time.Millisecond, within: 300 * time.Millisecond}}
			if b.Name == "postgres" {
				// Notified: the change shows long before the one-hour bound.
				cases = append(cases, cacheCase{name: "notified", listen: true, refresh: time.Hour})
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					dsn := b.DSN(t)
					open := func() *storage.Store {
						s, err := storage.Open(ctx, dsn, storage.WithClientCacheRefresh(c.refresh))
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { _ = s.Close() })
						if err := s.Migrate(ctx); err != nil {
							t.Fatal(err)
						}
						return s
					}
					writer, reader := open(), open()
					done := make(chan struct{})
					if c.listen {
						go func() { defer close(done); _ = reader.ListenClientChanges(ctx) }()
					} else {
						close(done)
					}
					defer func() { cancel(); <-done }()

					if err := writer.CreateClient(ctx, &storage.Client{ID: "app", Name: "Before", SecretHash: []byte("h")}); err != nil {
						t.Fatal(err)
					}
					got, err := reader.ClientByID(ctx, "app")
					if err != nil || got.Name != "Before" {
						t.Fatalf("ClientByID: got %+v, %v", got, err)
					}
					if c.listen {
						// Once listening, the reader drops every client; cache it again.
						time.Sleep(300 * time.Millisecond)
						if _, err := reader.ClientByID(ctx, "app"); err != nil {
							t.Fatal(err)
						}
					}
					got.Name = "After"
					changed := time.Now()
					if err := writer.UpdateClient(ctx, got); err != nil {
						t.Fatal(err)
					}
					if !c.listen {
						if again, _ := reader.ClientByID(ctx, "app"); again.Name != "Before" {
							t.Fatalf("ClientByID right after the change elsewhere: got %q, want the cached %q", again.Name, "Before")
						}
					}
					waitFor(t, "the change to show", func() bool {
						again, err := reader.ClientByID(ctx, "app")
						return err == nil && again.Name == "After"
					})
					if took := time.Since(changed); took > c.within+2*time.Second {
						t.Errorf("the change took %v to show, want about %v", took, c.within)
					}
					if err := writer.DeleteClient(ctx, "app"); err != nil {
						t.Fatal(err)
					}
					waitFor(t, "the delete to show", func() bool {
						_, err := reader.ClientByID(ctx, "app")
						return err == storage.ErrNotFound
					})
				})
			}
		})
	}
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
