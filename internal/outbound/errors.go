package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrRefusedAddress: a strict Client refused to connect to an address (Refused), before any
// packet left for it. An *AddressError carries the address.
var ErrRefusedAddress = errors.New("outbound: address refused")

// ErrTooLarge: the answer's body is longer than Policy.MaxBodyBytes.
var ErrTooLarge = errors.New("outbound: the answer is too large")

// ErrURL: the URL is not one the Client requests: not absolute, another scheme than https
// (or http, with Policy.AllowHTTP), without a host, or with user info.
var ErrURL = errors.New("outbound: URL refused")

// AddressError is ErrRefusedAddress for one address.
type AddressError struct {
	Addr netip.Addr
	// Block names the range the address lies in ("loopback", "private (RFC 1918)", …).
	Block string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("outbound: %s is a %s address, which is refused", e.Addr, e.Block)
}

// Is makes an *AddressError match ErrRefusedAddress.
func (e *AddressError) Is(target error) bool { return target == ErrRefusedAddress }

// StatusError is an answer whose status the caller does not accept (Response.Want).
type StatusError struct {
	Code   int
	Status string
}

func (e *StatusError) Error() string { return "outbound: answered " + e.Status }

// Reasons a request failed (Reason), for the label of a metric: a small fixed set.
const (
	ReasonRefusedAddress = "refused_address"
	ReasonURL            = "invalid_url"
	ReasonTimeout        = "timeout"
	ReasonTooLarge       = "too_large"
	ReasonStatus         = "status"
	ReasonCanceled       = "canceled"
	// ReasonConnection is every other failure to talk to the server: connection refused or
	// reset, a name that does not resolve, a TLS failure, a malformed answer.
	ReasonConnection = "connection"
)

// Reasons lists every value Reason returns for an error, so that a metric can export each
// series at zero before the first failure.
func Reasons() []string {
	return []string{ReasonRefusedAddress, ReasonURL, ReasonTimeout, ReasonTooLarge, ReasonStatus, ReasonCanceled, ReasonConnection}
}

// Reason classifies an error of a Client's request (or a StatusError from Response.Want) as
// one of the Reason constants; "" for nil.
func Reason(err error) string {
	var netErr net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrRefusedAddress):
		return ReasonRefusedAddress
	case errors.Is(err, ErrURL):
		return ReasonURL
	case errors.Is(err, ErrTooLarge):
		return ReasonTooLarge
	case errors.As(err, new(*StatusError)):
		return ReasonStatus
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	}
	return ReasonConnection
}
