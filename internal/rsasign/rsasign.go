package rsasign

import (
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
)

// Backend names who computes the signatures.
type Backend string

const (
	// Auto is OpenSSL when libcrypto can be loaded, else Go.
	Auto Backend = "auto"
	// OpenSSL is libcrypto, or an error from Open when it cannot be loaded.
	OpenSSL Backend = "openssl"
	// Go is crypto/rsa.
	Go Backend = "go"
)

// DefaultLibraries returns the libcrypto files Auto and OpenSSL try, in order: OpenSSL 3,
// then 1.1 (golang-fips/openssl supports both).
func DefaultLibraries() []string { return []string{"libcrypto.so.3", "libcrypto.so.1.1"} }

// ErrUnavailable is returned by Open with Backend OpenSSL when libcrypto cannot be used.
var ErrUnavailable = errors.New("rsasign: OpenSSL is unavailable")

// Options configures Open.
type Options struct {
	// Backend is Auto (the zero value means Auto), OpenSSL or Go.
	Backend Backend
	// Libraries are the libcrypto files to try, passed to dlopen in order; the first that
	// loads is used. Default DefaultLibraries().
	Libraries []string
}

// Engine is the chosen backend. libcrypto, once loaded, stays loaded for the life of the
// process (golang-fips/openssl initialises it once); an Engine holds nothing else, and two
// Engines with different backends may coexist.
type Engine struct {
	backend Backend // OpenSSL or Go: the one that signs
	reason  string
}

// Open chooses the backend and, for OpenSSL, loads libcrypto. With Backend OpenSSL it fails
// with ErrUnavailable when no library loads or the binary was built without cgo; with Auto
// it falls back to Go and says why in Reason.
func Open(opts Options) (*Engine, error) {
	switch opts.Backend {
	case Go:
		return &Engine{backend: Go, reason: "configured"}, nil
	case "", Auto, OpenSSL:
	default:
		return nil, fmt.Errorf("rsasign: unknown backend %q: want auto, openssl or go", opts.Backend)
	}
	libs := opts.Libraries
	if len(libs) == 0 {
		libs = DefaultLibraries()
	}
	version, err := loadOpenSSL(libs)
	if err != nil {
		if opts.Backend == OpenSSL {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return &Engine{backend: Go, reason: err.Error()}, nil
	}
	return &Engine{backend: OpenSSL, reason: version}, nil
}

// Backend is OpenSSL or Go; a nil Engine is Go.
func (e *Engine) Backend() Backend {
	if e == nil {
		return Go
	}
	return e.backend
}

// Reason says why: the loaded OpenSSL version, "configured" for Go by choice, or why
// OpenSSL could not be used.
func (e *Engine) Reason() string {
	if e == nil {
		return "no engine"
	}
	return e.reason
}

// Signer signs SHA-256 digests with one RSA key, PKCS #1 v1.5. It is safe for concurrent use.
type Signer struct {
	priv *rsa.PrivateKey
	// raw signs with OpenSSL; nil signs with crypto/rsa.
	raw func(digest []byte) ([]byte, error)
}

var _ crypto.Signer = (*Signer)(nil)

// New prepares priv for signing: with OpenSSL it copies the key into libcrypto once, so that
// no signature pays for it. priv must be precomputed (x509's parsers and rsa.GenerateKey
// do it) and must not change afterwards. A nil Engine signs with Go; so does a key with more
// than two primes, which golang-fips/openssl does not take.
func (e *Engine) New(priv *rsa.PrivateKey) (*Signer, error) {
	if priv == nil {
		return nil, errors.New("rsasign: nil key")
	}
	s := &Signer{priv: priv}
	if e.Backend() != OpenSSL || len(priv.Primes) != 2 {
		return s, nil
	}
	raw, err := newOpenSSLKey(priv)
	if err != nil {
		return nil, fmt.Errorf("rsasign: OpenSSL key: %w", err)
	}
	s.raw = raw
	return s, nil
}

// Backend is who signs with this key.
func (s *Signer) Backend() Backend {
	if s.raw != nil {
		return OpenSSL
	}
	return Go
}

// Public returns the *rsa.PublicKey.
func (s *Signer) Public() crypto.PublicKey { return &s.priv.PublicKey }

// Sign signs digest, a SHA-256 hash, with PKCS #1 v1.5 (deterministic: both backends return
// the same bytes). rand is ignored: OpenSSL blinds with its own generator, crypto/rsa needs
// none. opts must be crypto.SHA256. An OpenSSL signature that does not verify is not
// returned: the error says so.
func (s *Signer) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts == nil || opts.HashFunc() != crypto.SHA256 {
		return nil, errors.New("rsasign: only SHA-256 PKCS #1 v1.5 signatures")
	}
	if len(digest) != crypto.SHA256.Size() {
		return nil, fmt.Errorf("rsasign: digest is %d bytes, want %d", len(digest), crypto.SHA256.Size())
	}
	if s.raw == nil {
		return rsa.SignPKCS1v15(nil, s.priv, crypto.SHA256, digest)
	}
	sig, err := s.raw(digest)
	if err != nil {
		return nil, err
	}
	// A signature wrong modulo one prime only reveals the key (Boneh-DeMillo-Lipton);
	// crypto/rsa checks its own, OpenSSL checks its CRT step but not the unblinding after
	// it, nor whatever implementation an openssl.cnf may substitute. ~0.03 ms.
	if err := rsa.VerifyPKCS1v15(&s.priv.PublicKey, crypto.SHA256, digest, sig); err != nil {
		return nil, errors.New("rsasign: OpenSSL returned a signature that does not verify; withheld")
	}
	return sig, nil
}
