package server

import (
	"context"
	"crypto/rand"
)

// RequestIDHeader is the header that carries a request id in and out.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestID returns the id the request-id middleware gave the request of ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID returns ctx carrying id.
func withRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// validRequestID accepts 1 to 128 characters of [A-Za-z0-9._:-], enough for UUIDs and the
// ids of common proxies, and nothing that could forge a log line or a header.
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// newRequestID returns 128 random bits as 26 base32 characters.
func newRequestID() string { return rand.Text() }
