package sqlite

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
	gosqlite "github.com/glebarez/go-sqlite"
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
)

// busyTimeout is how long a connection Open makes waits for another writer before it
// fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// init registers the driver: importing the package is how a program asks for SQLite, as
// with database/sql drivers; storage keeps the registry for that reason alone.
func init() {
	storage.Register(storage.DialectSQLite, storage.Driver{Open: open, Conn: conn})
}

// open returns the dialector of an SQLite path, with the connection parameters Gatehouse
// relies on (see storage.Open).
func open(path string) gorm.Dialector {
	return sqlite.Open(dsn(path))
}

// dsn adds the connection parameters Gatehouse relies on to an SQLite path. The busy
// timeout comes first so the other pragmas already wait for locks.
func dsn(path string) string {
	params := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", busyTimeout.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(NORMAL)",
		"_pragma=foreign_keys(1)",
		"_txlock=immediate",
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + strings.Join(params, "&")
}

// conn returns a dialector on a caller's pool, which must be of this driver: the store
// classifies the driver's own errors (duplicate keys, foreign keys).
func conn(pool *sql.DB, _ gorm.Dialector) (gorm.Dialector, error) {
	if _, ok := pool.Driver().(*gosqlite.Driver); !ok {
		return nil, fmt.Errorf("storage/sqlite: the pool's driver is %T, not github.com/glebarez/go-sqlite's (open it with sql.Open(%q, …) or github.com/glebarez/sqlite)", pool.Driver(), sqlite.DriverName)
	}
	return &sqlite.Dialector{Conn: pool}, nil
}
