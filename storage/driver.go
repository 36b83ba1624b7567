package storage

import (
	"database/sql"
	"fmt"
	"sync"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// Driver builds the GORM dialectors of one SQL dialect. Postgres is built in; the SQLite
// driver lives in package storage/sqlite, which registers itself when imported, so a
// program that never opens SQLite does not link it:
//
//	import _ "github.com/gatehouse-id/gatehouse/storage/sqlite"
type Driver struct {
	// Open returns the dialector of a DSN: the whole URL for Postgres, the path after
	// "sqlite:" (never empty) for SQLite.
	Open func(dsn string) gorm.Dialector
	// Conn returns a dialector on a pool the caller opened (FromDB, FromGorm). caller is
	// the caller's dialector for FromGorm, whose settings Conn may copy, and nil for FromDB.
	// Conn fails when the pool belongs to another driver of the dialect: the errors the
	// store classifies (duplicate keys, foreign keys) are the driver's own.
	Conn func(pool *sql.DB, caller gorm.Dialector) (gorm.Dialector, error)
}

// Dialect names, as in a DSN's scheme, FromDB's argument and gorm.Dialector.Name.
const (
	DialectPostgres = "postgres"
	DialectSQLite   = "sqlite"
)

// drivers is the registry Register fills, keyed by dialect name. It is the one piece of
// package-level mutable state in Gatehouse, sanctioned for the reason database/sql keeps
// its own: a driver package registers itself on import, so the programs that do not import
// it (a Postgres-only embedder) do not link it. It is written only by Register, normally
// from a driver package's init, and guarded like database/sql's.
var drivers = struct {
	sync.RWMutex
	m map[string]Driver
}{m: map[string]Driver{DialectPostgres: postgresDriver()}}

// Register makes the driver of dialect name available to Open, FromDB and FromGorm. It
// panics when name is registered twice or when a function of d is nil, as sql.Register
// does; driver packages call it from their init.
func Register(name string, d Driver) {
	if d.Open == nil || d.Conn == nil {
		panic("storage: Register driver " + name + " with a nil function")
	}
	drivers.Lock()
	defer drivers.Unlock()
	if _, dup := drivers.m[name]; dup {
		panic("storage: Register called twice for driver " + name)
	}
	drivers.m[name] = d
}

// driverFor returns the registered driver of dialect name, or an error that says which
// package to import.
func driverFor(name string) (Driver, dialect, error) {
	var d dialect
	switch name {
	case DialectPostgres:
		d = dialectPostgres
	case DialectSQLite:
		d = dialectSQLite
	default:
		return Driver{}, 0, fmt.Errorf("storage: unsupported dialect %q (want %q or %q)", name, DialectPostgres, DialectSQLite)
	}
	drivers.RLock()
	drv, ok := drivers.m[name]
	drivers.RUnlock()
	if !ok {
		return Driver{}, 0, fmt.Errorf(`storage: the %s driver is not linked into this program: add import _ "github.com/gatehouse-id/gatehouse/storage/%s"`, name, name)
	}
	return drv, d, nil
}

// postgresDriver is the built-in Postgres driver (pgx).
func postgresDriver() Driver {
	return Driver{
		Open: func(dsn string) gorm.Dialector { return postgres.Open(dsn) },
		Conn: func(pool *sql.DB, caller gorm.Dialector) (gorm.Dialector, error) {
			var cfg postgres.Config
			switch c := caller.(type) {
			case nil:
			case *postgres.Dialector:
				if c.Config != nil {
					cfg = *c.Config
				}
			case postgres.Dialector:
				if c.Config != nil {
					cfg = *c.Config
				}
			default:
				return nil, fmt.Errorf("storage: Postgres through %T is not supported (want gorm.io/driver/postgres)", caller)
			}
			cfg.Conn, cfg.DSN = pool, ""
			return postgres.New(cfg), nil
		},
	}
}
