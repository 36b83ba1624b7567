package storagetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
	// The suite always runs on SQLite: link its driver.
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Environment variables that select the database backends.
const (
	// EnvPostgresDSN names a Postgres database (postgres://…) the tests may create and drop
	// schemas in.
	EnvPostgresDSN = "GATEHOUSE_TEST_POSTGRES_DSN"
	// EnvRequirePostgres set to "1" makes a missing EnvPostgresDSN a test failure.
	EnvRequirePostgres = "GATEHOUSE_REQUIRE_POSTGRES"
)

// Backend is one database the suite runs against.
type Backend struct {
	Name string
	// Open returns a migrated store on a fresh, empty database that is removed when t ends.
	Open func(t *testing.T) *storage.Store
	// OpenWith is Open with options, e.g. storage.WithTablePrefix.
	OpenWith func(t *testing.T, opts ...storage.Option) *storage.Store
	// DSN returns the DSN of a fresh, empty, unmigrated database that is removed when t
	// ends; tests of Migrate itself use it.
	DSN func(t *testing.T) string
	// Replicas returns two stores on one fresh, migrated database, as two replicas of one
	// deployment (each with its own pool, client cache and coalescers).
	Replicas func(t *testing.T) (a, b *storage.Store)
}

// Backends returns SQLite, and Postgres when EnvPostgresDSN is set. When EnvRequirePostgres
// is "1" and EnvPostgresDSN is unset, it fails t.
func Backends(t *testing.T) []Backend {
	t.Helper()
	backends := []Backend{newBackend("sqlite", sqliteDSN)}
	base := os.Getenv(EnvPostgresDSN)
	switch {
	case base != "":
		backends = append(backends, newBackend("postgres", func(t *testing.T) string {
			t.Helper()
			return postgresSchemaDSN(t, base)
		}))
	case os.Getenv(EnvRequirePostgres) == "1":
		t.Fatalf("%s=1 but %s is unset", EnvRequirePostgres, EnvPostgresDSN)
	}
	return backends
}

func newBackend(name string, dsn func(t *testing.T) string) Backend {
	openWith := func(t *testing.T, opts ...storage.Option) *storage.Store {
		t.Helper()
		ctx := context.Background()
		s, err := storage.Open(ctx, dsn(t), opts...)
		if err != nil {
			t.Fatalf("open %s store: %v", name, err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close %s store: %v", name, err)
			}
		})
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate %s store: %v", name, err)
		}
		return s
	}
	replicas := func(t *testing.T) (*storage.Store, *storage.Store) {
		t.Helper()
		at := dsn(t)
		open := func() *storage.Store {
			s, err := storage.Open(context.Background(), at)
			if err != nil {
				t.Fatalf("open %s store: %v", name, err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		a, b := open(), open()
		if err := a.Migrate(context.Background()); err != nil {
			t.Fatalf("migrate %s store: %v", name, err)
		}
		return a, b
	}
	return Backend{
		Name:     name,
		DSN:      dsn,
		Replicas: replicas,
		OpenWith: openWith,
		Open:     func(t *testing.T) *storage.Store { t.Helper(); return openWith(t) },
	}
}

// sqliteDSN is a new database file in t's temporary directory.
func sqliteDSN(t *testing.T) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "gatehouse.db")
}

// postgresSchemaDSN creates a schema with a random name on the database base names, drops it
// (CASCADE) when t ends, and returns base with search_path set to that schema.
func postgresSchemaDSN(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPostgresDSN, err)
	}
	buf := make([]byte, 8)
	_, _ = rand.Read(buf)
	schema := "gatehouse_test_" + hex.EncodeToString(buf)

	admin, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("connect to %s: %v", EnvPostgresDSN, err)
	}
	sqlDB, err := admin.DB()
	if err != nil {
		t.Fatalf("connect to %s: %v", EnvPostgresDSN, err)
	}
	if err := admin.Exec(`CREATE SCHEMA "` + schema + `"`).Error; err != nil {
		_ = sqlDB.Close()
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if err := admin.Exec(`DROP SCHEMA "` + schema + `" CASCADE`).Error; err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		_ = sqlDB.Close()
	})

	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
