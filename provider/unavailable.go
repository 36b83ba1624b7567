package provider

import (
	"errors"

	"github.com/ory/fosite"
)

// databaseDown reports whether err comes from a database that cannot be reached (storage
// marks such errors with an Unavailable method).
func databaseDown(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.As(err, &u) && u.Unavailable()
}

// asTemporarilyUnavailable turns an unreachable database into RFC 6749's
// temporarily_unavailable (503), which tells the client to retry, instead of server_error.
func asTemporarilyUnavailable(err error) error {
	if err != nil && databaseDown(err) {
		return fosite.ErrTemporarilyUnavailable.WithHint("The database is unreachable; try again shortly.").WithWrap(err)
	}
	return err
}
