package storage

import "errors"

// Errors of the storage records that are not fosite's or a domain package's.
var (
	// ErrNotFound: no row with that key (or it has expired).
	ErrNotFound = errors.New("storage: not found")
	// ErrConflict: a row with that key already exists.
	ErrConflict = errors.New("storage: already exists")
	// ErrForeignSchema marks a Migrate failure caused by tables Gatehouse did not create
	// where it would create or trust its own: a table of one of Gatehouse's names, or a
	// migrations table whose columns are not Gatehouse's. The message names the table and
	// the fix (usually WithTablePrefix).
	ErrForeignSchema = errors.New("storage: tables that are not Gatehouse's are in the way")
)
