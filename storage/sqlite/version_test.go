package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"

	"github.com/gatehouse-id/gatehouse/storage"
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
)

// embeddedSQLite is the SQLite that github.com/glebarez/go-sqlite (through modernc.org/sqlite)
// compiles in: README's Storage section names it. A bump of the driver that changes it
// fails here, so that README changes with it.
const embeddedSQLite = "3.53.3"

// TestEmbeddedSQLiteVersion asks the driver the store runs on (a pool storage.FromDB
// accepts) which SQLite answers.
func TestEmbeddedSQLiteVersion(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open(sqlite.DriverName, filepath.Join(t.TempDir(), "v.db")+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := storage.FromDB(db, storage.DialectSQLite)
	if err != nil {
		t.Fatalf("storage.FromDB: %v", err)
	}
	defer s.Close()
	var version string
	if err := db.QueryRowContext(ctx, "select sqlite_version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != embeddedSQLite {
		t.Fatalf("sqlite_version() = %s, want %s (update README's Storage section and this test together)", version, embeddedSQLite)
	}
}
