package provider

import (
	"net/http"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// asTemporarilyUnavailable turns a database that is unreachable, or refuses writes (read-only,
// disk full), into RFC 6749's temporarily_unavailable (503), which tells the client to retry,
// instead of server_error. The wrapped cause reaches the operator's log.
func asTemporarilyUnavailable(err error) error {
	if err != nil && httpjson.Unavailable(err) {
		return fosite.ErrTemporarilyUnavailable.WithHint("The database is unavailable; try again shortly.").WithWrap(err)
	}
	return err
}

// unavailableRetryAfter is the Retry-After, in seconds, of a 503 the provider answers
// while its database is unreachable or refuses writes.
const unavailableRetryAfter = "5"

// setRetryAfter adds Retry-After to an OAuth error answer that is temporarily_unavailable,
// so a client backs off for a moment instead of retrying at once (RFC 9110 §10.2.3). Call
// it before fosite's writer, which keeps headers already set.
func setRetryAfter(w http.ResponseWriter, err error) {
	if err != nil && fosite.ErrorToRFC6749Error(err).ErrorField == fosite.ErrTemporarilyUnavailable.ErrorField {
		w.Header().Set("Retry-After", unavailableRetryAfter)
	}
}
