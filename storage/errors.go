package storage

import "errors"

// Errors of the storage records that are not fosite's or a domain package's.
var (
	// ErrNotFound: no row with that key (or it has expired).
	ErrNotFound = errors.New("storage: not found")
	// ErrConflict: a row with that key already exists.
	ErrConflict = errors.New("storage: already exists")
)
