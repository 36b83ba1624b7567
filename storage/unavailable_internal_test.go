package storage

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// sqliteError stands for the SQLite driver's error, which has a Code method; the real
// driver's SQLITE_READONLY and SQLITE_FULL are covered by the tests on files.
type sqliteError int

func (e sqliteError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e sqliteError) Code() int     { return int(e) }

// The conditions a test database cannot be driven into (a full disk under Postgres, an I/O
// error) are classified by their codes.
func TestUnavailableKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"postgres disk_full", &pgconn.PgError{Code: "53100"}, ErrDiskFull},
		{"postgres out_of_memory", &pgconn.PgError{Code: "53200"}, ErrDiskFull},
		{"postgres too_many_connections", &pgconn.PgError{Code: "53300"}, ErrDiskFull},
		{"postgres io_error", &pgconn.PgError{Code: "58030"}, ErrDiskFull},
		{"postgres read_only_sql_transaction", &pgconn.PgError{Code: "25006"}, ErrReadOnly},
		{"postgres admin_shutdown", &pgconn.PgError{Code: "57P01"}, ErrUnavailable},
		{"postgres unique_violation", &pgconn.PgError{Code: "23505"}, nil},
		{"sqlite READONLY_DBMOVED", sqliteError(1032), ErrReadOnly},
		{"sqlite FULL", sqliteError(13), ErrDiskFull},
		{"sqlite IOERR_WRITE", sqliteError(778), ErrDiskFull},
		{"sqlite CANTOPEN", sqliteError(14), ErrDiskFull},
		{"sqlite CONSTRAINT", sqliteError(19), nil},
		{"sqlite BUSY", sqliteError(5), nil},
	} {
		err := unavailable(fmt.Errorf("wrapped: %w", tc.err))
		if tc.want == nil {
			if errors.Is(err, ErrUnavailable) {
				t.Errorf("%s: %v is marked unavailable", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, want %v wrapping the driver's error", tc.name, err, tc.want)
		}
	}
}
