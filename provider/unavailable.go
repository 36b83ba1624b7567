package provider

import (
	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// asTemporarilyUnavailable turns an unreachable database into RFC 6749's
// temporarily_unavailable (503), which tells the client to retry, instead of server_error.
func asTemporarilyUnavailable(err error) error {
	if err != nil && httpjson.Unavailable(err) {
		return fosite.ErrTemporarilyUnavailable.WithHint("The database is unreachable; try again shortly.").WithWrap(err)
	}
	return err
}
