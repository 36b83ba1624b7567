package argon2id

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/crypto/argon2"
)

// Backend names who derives the keys.
type Backend string

const (
	// Auto is libsodium when it can be loaded and passes the self-test, else Go.
	Auto Backend = "auto"
	// Sodium is libsodium, or an error from Open when it cannot be used.
	Sodium Backend = "libsodium"
	// Go is golang.org/x/crypto/argon2.
	Go Backend = "go"
)

// DefaultLibraries returns the libsodium files Auto and Sodium try, in order: 1.0.19 and
// later (soname 26), then 1.0.12 to 1.0.18 (soname 23; argon2id arrived in 1.0.13, and
// Open checks the function is there).
func DefaultLibraries() []string { return []string{"libsodium.so.26", "libsodium.so.23"} }

// ErrUnavailable is returned by Open with Backend Sodium when libsodium cannot be used.
var ErrUnavailable = errors.New("argon2id: libsodium is unavailable")

// Options configures Open.
type Options struct {
	// Backend is Auto (the zero value means Auto), Sodium or Go.
	Backend Backend
	// Libraries are the libsodium files to try, passed to dlopen in order; the first that
	// loads and has crypto_pwhash_argon2id is used. Default DefaultLibraries().
	Libraries []string
}

// Engine is the chosen backend. It is immutable and safe for concurrent use. A loaded
// libsodium stays loaded for the life of the process; two Engines may coexist.
type Engine struct {
	backend Backend // Sodium or Go: the one that derives
	reason  string
	sodium  sodiumFunc // set when backend is Sodium
}

// Open chooses the backend and, for libsodium, loads it and checks it against x/crypto.
// With Backend Sodium it fails with ErrUnavailable when no library loads, the self-test
// fails or the binary was built without cgo; with Auto it falls back to Go and says why in
// Reason.
func Open(opts Options) (*Engine, error) {
	switch opts.Backend {
	case Go:
		return &Engine{backend: Go, reason: "configured"}, nil
	case "", Auto, Sodium:
	default:
		return nil, fmt.Errorf("argon2id: unknown backend %q: want auto, libsodium or go", opts.Backend)
	}
	libs := opts.Libraries
	if len(libs) == 0 {
		libs = DefaultLibraries()
	}
	fn, version, err := loadSodium(libs)
	if err == nil {
		err = selfTest(fn)
	}
	if err != nil {
		if opts.Backend == Sodium {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return &Engine{backend: Go, reason: err.Error()}, nil
	}
	return &Engine{backend: Sodium, reason: version, sodium: fn}, nil
}

// selfTest derives a key with fn and with x/crypto from the same small input (64 KiB, so
// it costs well under a millisecond) and refuses fn unless both agree.
func selfTest(fn sodiumFunc) error {
	pw, salt := []byte("gatehouse self-test"), []byte("0123456789abcdef")
	const time, memory, keyLen = 2, 64, 32
	got, err := fn.key(pw, salt, time, memory, keyLen)
	if err != nil {
		return fmt.Errorf("self-test: %w", err)
	}
	if !bytes.Equal(got, argon2.IDKey(pw, salt, time, memory, 1, keyLen)) {
		return errors.New("self-test: libsodium's argon2id differs from x/crypto's; not used")
	}
	return nil
}

// Backend is Sodium or Go; a nil Engine is Go.
func (e *Engine) Backend() Backend {
	if e == nil {
		return Go
	}
	return e.backend
}

// Reason says why: the loaded library and version, "configured" for Go by choice, or why
// libsodium could not be used.
func (e *Engine) Reason() string {
	if e == nil {
		return "no engine"
	}
	return e.reason
}

// Key derives a keyLen-byte argon2id key from password and salt with time passes over
// memory KiB in threads lanes: argon2.IDKey's arguments and result, and its panics for
// time or threads below 1. libsodium derives it when the engine has it and the parameters
// are ones it takes (sodiumTakes); x/crypto otherwise, and also should libsodium fail (it
// fails only when it cannot map the memory).
func (e *Engine) Key(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	if e.handles(len(salt), memory, threads, keyLen) && time >= 1 {
		if key, err := e.sodium.key(password, salt, time, memory, keyLen); err == nil {
			return key
		}
	}
	return argon2.IDKey(password, salt, time, memory, threads, keyLen)
}

// GoHeapBytes is how much a Key with these parameters allocates in the Go heap: nothing
// when libsodium derives it (its memory is mapped outside the heap and unmapped after),
// memory KiB when x/crypto does.
func (e *Engine) GoHeapBytes(saltLen int, memory uint32, threads uint8, keyLen uint32) uint64 {
	if e.handles(saltLen, memory, threads, keyLen) {
		return 0
	}
	return uint64(memory) * 1024
}

func (e *Engine) handles(saltLen int, memory uint32, threads uint8, keyLen uint32) bool {
	return e.Backend() == Sodium && sodiumTakes(saltLen, memory, threads, keyLen)
}

// Bounds of libsodium's crypto_pwhash_argon2id (crypto_pwhash_argon2id.h): one lane, a
// crypto_pwhash_argon2id_SALTBYTES salt, at least _BYTES_MIN bytes of key and _MEMLIMIT_MIN
// bytes of memory. Its upper bounds (2^32-1 key bytes, 4 TiB) are beyond a uint32 of KiB.
const (
	sodiumSaltLen      = 16
	sodiumMinKeyLen    = 16
	sodiumMinMemoryKiB = 8
)

// sodiumTakes reports whether libsodium's argon2id accepts these parameters.
func sodiumTakes(saltLen int, memory uint32, threads uint8, keyLen uint32) bool {
	return threads == 1 && saltLen == sodiumSaltLen && keyLen >= sodiumMinKeyLen && memory >= sodiumMinMemoryKiB
}
