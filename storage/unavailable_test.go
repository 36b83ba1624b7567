package storage_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// A database that refuses connections is reported as ErrUnavailable, which the HTTP surfaces
// answer with 503 rather than 500.
func TestOpenUnreachablePostgresIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there any more: connections are refused

	_, err = storage.Open(context.Background(), "postgres://gatehouse@"+addr+"/gatehouse?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open succeeded against a closed port")
	}
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("got %v, want an error wrapping storage.ErrUnavailable", err)
	}
	var u interface{ Unavailable() bool }
	if !errors.As(err, &u) || !u.Unavailable() {
		t.Errorf("got %v, want an error with Unavailable() true", err)
	}
}

// openStore opens dsn (unmigrated) and closes it at the end of t.
func openStore(t *testing.T, dsn string) *storage.Store {
	t.Helper()
	s, err := storage.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// checkRefused fails t unless err is a refused write of kind want: an ErrUnavailable (the
// surfaces answer 503) whose message names the cause for the operator.
func checkRefused(t *testing.T, what string, err, want error, cause string) {
	t.Helper()
	if !errors.Is(err, want) || !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("%s: got %v, want an error wrapping %v and storage.ErrUnavailable", what, err, want)
	}
	var u interface{ Unavailable() bool }
	if !errors.As(err, &u) || !u.Unavailable() {
		t.Errorf("%s: got %v, want an error with Unavailable() true", what, err)
	}
	if !strings.Contains(err.Error(), cause) {
		t.Errorf("%s: %q does not name the cause %q", what, err, cause)
	}
}

// A database that refuses writes because it is read-only — an SQLite file opened read-only
// (SQLITE_READONLY), a Postgres session with default_transaction_read_only as on a standby
// (25006) — is ErrReadOnly, an ErrUnavailable; reads keep working.
func TestReadOnlyDatabaseIsUnavailable(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := b.DSN(t)
			rw := openStore(t, dsn)
			if err := rw.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rw.CreateClient(ctx, &storage.Client{ID: "before", Public: true}); err != nil {
				t.Fatal(err)
			}
			var roDSN string
			if b.Name == "sqlite" {
				roDSN = "sqlite:file:" + strings.TrimPrefix(dsn, "sqlite:") + "?mode=ro"
			} else {
				u, err := url.Parse(dsn)
				if err != nil {
					t.Fatal(err)
				}
				q := u.Query()
				q.Set("options", "-c default_transaction_read_only=on")
				u.RawQuery = q.Encode()
				roDSN = u.String()
			}
			ro := openStore(t, roDSN)
			if _, err := ro.ClientByID(ctx, "before"); err != nil {
				t.Errorf("a read on the read-only database: %v", err)
			}
			err := ro.CreateClient(ctx, &storage.Client{ID: "after", Public: true})
			checkRefused(t, "a write on the read-only database", err, storage.ErrReadOnly, "read-only")
			if _, err := rw.ClientByID(ctx, "after"); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("the refused client: %v, want storage.ErrNotFound", err)
			}
		})
	}
}

// SQLite's "database or disk is full" (SQLITE_FULL), here from max_page_count, is
// ErrDiskFull, an ErrUnavailable; the refused write leaves nothing, and writes work again
// once there is room.
func TestDiskFullSQLiteIsUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "full.db")
	rw := openStore(t, "sqlite:"+path)
	if err := rw.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	// max_page_count cannot shrink a database: 1 means "no page beyond its size now".
	full := openStore(t, "sqlite:"+path+"?_pragma=max_page_count(1)")
	var err error
	var n int
	for n = 0; n < 100000 && err == nil; n++ {
		err = full.CreateClient(ctx, &storage.Client{ID: fmt.Sprintf("c%06d", n), Public: true})
	}
	checkRefused(t, fmt.Sprintf("write %d on the full database", n), err, storage.ErrDiskFull, "disk full")
	refused := fmt.Sprintf("c%06d", n-1)
	if _, err := full.ClientByID(ctx, "c000000"); err != nil && n > 1 {
		t.Errorf("a read on the full database: %v", err)
	}
	if err := full.Close(); err != nil {
		t.Fatal(err)
	}
	room := openStore(t, "sqlite:"+path)
	if _, err := room.ClientByID(ctx, refused); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the refused client %s: %v, want storage.ErrNotFound", refused, err)
	}
	if err := room.CreateClient(ctx, &storage.Client{ID: refused, Public: true}); err != nil {
		t.Errorf("a write once there is room: %v", err)
	}
}
