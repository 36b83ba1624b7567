package storage

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// ErrUnavailable marks an error caused by a database that cannot serve the statement for
// now: it cannot be reached (refused, lost or shutting-down connections), or it refuses
// writes (ErrReadOnly, ErrDiskFull). It is wrapped together with the driver's error, so
// errors.Is(err, ErrUnavailable) holds. Packages that do not import storage recognise it by
// its method Unavailable() bool, and answer 503 with Retry-After: the fault is the
// operator's to fix, and a retry succeeds once it is fixed. The process needs no restart:
// database/sql reconnects on the next query once the database is back, and reads keep
// working while writes are refused.
var ErrUnavailable error = &unavailableError{msg: "storage: database unavailable"}

// ErrReadOnly marks a write the database refused because it is read-only: an SQLite file
// opened read-only or on a read-only file system (SQLITE_READONLY), a Postgres standby or a
// session with default_transaction_read_only (25006). errors.Is(err, ErrUnavailable) holds
// too; the message names the cause for the operator's log.
var ErrReadOnly error = &unavailableError{msg: "storage: database unavailable: it is read-only"}

// ErrDiskFull marks a write the database refused for lack of room or resources: SQLite's
// "database or disk is full" (SQLITE_FULL, also its max_page_count), or its disk failing
// (SQLITE_IOERR, SQLITE_CANTOPEN); Postgres's disk_full (53100) and the rest of class 53,
// insufficient resources (out of memory, too many connections), and io_error (58030).
// errors.Is(err, ErrUnavailable) holds too.
var ErrDiskFull error = &unavailableError{msg: "storage: database unavailable: disk full, failing or out of resources"}

type unavailableError struct{ msg string }

func (e *unavailableError) Error() string   { return e.msg }
func (*unavailableError) Unavailable() bool { return true }

// Is makes every kind of unavailability an ErrUnavailable.
func (*unavailableError) Is(target error) bool { return target == ErrUnavailable }

// markUnavailable is a GORM callback run after every statement: it tags connection failures
// and refused writes with their kind of ErrUnavailable, in this one place rather than in
// every method.
func markUnavailable(db *gorm.DB) {
	db.Error = unavailable(db.Error)
}

// unavailable tags err like markUnavailable, for calls that bypass GORM's callbacks.
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	if kind := unavailableKind(err); kind != nil {
		return fmt.Errorf("%w: %w", kind, err)
	}
	return err
}

// Result codes of SQLite (sqlite3.h) that say the database cannot take the write; the
// driver's extended codes keep the primary code in their low byte.
const (
	sqliteReadOnly = 8  // SQLITE_READONLY
	sqliteIOErr    = 10 // SQLITE_IOERR
	sqliteFull     = 13 // SQLITE_FULL
	sqliteCantOpen = 14 // SQLITE_CANTOPEN
	sqliteCodeMask = 0xff
)

// unavailableKind is the ErrUnavailable err is a case of, or nil.
func unavailableKind(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "25006": // read_only_sql_transaction
			return ErrReadOnly
		case strings.HasPrefix(pgErr.Code, "53"), pgErr.Code == "58030": // insufficient resources, io_error
			return ErrDiskFull
		}
	}
	// SQLite's driver error has a Code method (pgconn.PgError has a Code field instead);
	// the storage package does not import the SQLite driver, which is optional.
	var sqliteErr interface{ Code() int }
	if errors.As(err, &sqliteErr) {
		switch sqliteErr.Code() & sqliteCodeMask {
		case sqliteReadOnly:
			return ErrReadOnly
		case sqliteFull, sqliteIOErr, sqliteCantOpen:
			return ErrDiskFull
		}
	}
	if isConnectionError(err) {
		return ErrUnavailable
	}
	return nil
}

func isConnectionError(err error) bool {
	var netErr *net.OpError
	var connectErr *pgconn.ConnectError
	if errors.Is(err, driver.ErrBadConn) || errors.As(err, &netErr) || errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: the server is shutting down or starting.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "unexpected EOF")
}

// registerUnavailableCallbacks installs markUnavailable after every kind of statement.
func registerUnavailableCallbacks(db *gorm.DB) error {
	cb := db.Callback()
	return errors.Join(
		cb.Create().Register("gatehouse:unavailable", markUnavailable),
		cb.Query().Register("gatehouse:unavailable", markUnavailable),
		cb.Update().Register("gatehouse:unavailable", markUnavailable),
		cb.Delete().Register("gatehouse:unavailable", markUnavailable),
		cb.Raw().Register("gatehouse:unavailable", markUnavailable),
		cb.Row().Register("gatehouse:unavailable", markUnavailable),
	)
}
