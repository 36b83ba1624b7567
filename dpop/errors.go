package dpop

import (
	"errors"
	"fmt"
)

// The two classes of refused proofs, by the OAuth error a server answers (RFC 9449 §12.2).
var (
	// ErrInvalidProof: the proof is missing, malformed or wrong (invalid_dpop_proof). Every
	// reason below but ErrUseNonce wraps it.
	ErrInvalidProof = errors.New("dpop: invalid proof")
	// ErrUseNonce: the server demands a nonce (Config.Nonces) and the proof carries none, or
	// one the server no longer accepts (use_dpop_nonce, RFC 9449 §8). The answer carries a
	// fresh nonce in the DPoP-Nonce header.
	ErrUseNonce = errors.New("dpop: a server-provided nonce is required")
)

// Reasons a proof is refused (RFC 9449 §4.3); each matches ErrInvalidProof.
var (
	ErrNoProof         = fmt.Errorf("%w: the request has no DPoP header", ErrInvalidProof)
	ErrMultipleProofs  = fmt.Errorf("%w: the request has more than one DPoP header", ErrInvalidProof)
	ErrMalformed       = fmt.Errorf("%w: not a well-formed compact JWS", ErrInvalidProof)
	ErrType            = fmt.Errorf("%w: typ is not dpop+jwt", ErrInvalidProof)
	ErrAlgorithm       = fmt.Errorf("%w: alg is not an allowed asymmetric algorithm", ErrInvalidProof)
	ErrKey             = fmt.Errorf("%w: jwk is missing, not a public key, or carries a private part", ErrInvalidProof)
	ErrSignature       = fmt.Errorf("%w: the signature does not verify under the jwk", ErrInvalidProof)
	ErrMethod          = fmt.Errorf("%w: htm does not match the request method", ErrInvalidProof)
	ErrURI             = fmt.Errorf("%w: htu does not match the request URI", ErrInvalidProof)
	ErrIssuedAt        = fmt.Errorf("%w: iat is missing or outside the accepted window", ErrInvalidProof)
	ErrMissingID       = fmt.Errorf("%w: jti is missing", ErrInvalidProof)
	ErrReplayed        = fmt.Errorf("%w: jti was used before", ErrInvalidProof)
	ErrAccessTokenHash = fmt.Errorf("%w: ath is missing or does not match the access token", ErrInvalidProof)
)

// OAuth error codes of RFC 9449 §12.2.
const (
	CodeInvalidProof = "invalid_dpop_proof"
	CodeUseNonce     = "use_dpop_nonce"
)

// ErrorCode is the OAuth error code a server answers for err: CodeUseNonce, CodeInvalidProof,
// or "" for an error that is no refused proof (a failure of the ReplayCache's store).
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, ErrUseNonce):
		return CodeUseNonce
	case errors.Is(err, ErrInvalidProof):
		return CodeInvalidProof
	}
	return ""
}
