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

// ErrUnavailable marks an error caused by a database that cannot be reached (refused, lost or
// shutting-down connections). It is wrapped together with the driver's error, so
// errors.Is(err, ErrUnavailable) holds. Packages that do not import storage recognise it by
// its method Unavailable() bool. The process needs no restart: database/sql reconnects on
// the next query once the database is back.
var ErrUnavailable error = unavailableError{}

type unavailableError struct{}

func (unavailableError) Error() string     { return "storage: database unavailable" }
func (unavailableError) Unavailable() bool { return true }

// markUnavailable is a GORM callback run after every statement: it tags connection failures
// with ErrUnavailable, in this one place rather than in every method.
func markUnavailable(db *gorm.DB) {
	if db.Error != nil && isConnectionError(db.Error) && !errors.Is(db.Error, ErrUnavailable) {
		db.Error = fmt.Errorf("%w: %w", ErrUnavailable, db.Error)
	}
}

// unavailable tags err like markUnavailable, for calls that bypass GORM's callbacks.
func unavailable(err error) error {
	if err != nil && isConnectionError(err) && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
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
