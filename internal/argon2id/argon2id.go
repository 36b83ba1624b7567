package argon2id

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/crypto/argon2"
)

// Backend names who derives the keys.
type Backend string

const (
	// Auto is Native when this build has it (BuildTag), the CPU can run it and it passes
	// the self-test, else Go. In a build without the tag it is always Go.
	Auto Backend = "auto"
	// Native is the AVX2 fill, or an error from Open when this build lacks it or it cannot
	// run here.
	Native Backend = "native"
	// Go is golang.org/x/crypto/argon2.
	Go Backend = "go"
)

// BuildTag is the build tag that compiles the native fill in (with cgo, on Linux amd64).
const BuildTag = "gatehouse_native_argon2"

// ErrUnavailable is returned by Open with Backend Native when the native fill is not
// compiled in or cannot run here; the error says which.
var ErrUnavailable = errors.New("argon2id: the native fill is unavailable")

// Options configures Open.
type Options struct {
	// Backend is Auto (the zero value means Auto), Native or Go.
	Backend Backend
	// KeepBuffers is how many hashes' memory the native path keeps for the next hashes
	// once they end; set it to the number of hashes that run at once (publicauth's pool
	// size). Memory beyond it is left to the collector. Default runtime.GOMAXPROCS(0).
	// Buffers over KeepBufferMaxBytes are never kept.
	KeepBuffers int
	// KeepFor is how long the kept memory outlives the last hash before it is left to
	// the collector, so an idle server does not hold it. Default DefaultKeepFor.
	KeepFor time.Duration
}

const (
	// KeepBufferMaxBytes bounds the memory of one kept buffer (64 MiB): a stored hash with
	// a larger m still verifies, in memory allocated for it alone.
	KeepBufferMaxBytes = 64 << 20
	// DefaultKeepFor is Options.KeepFor's default.
	DefaultKeepFor = 5 * time.Second
)

// Engine is the chosen backend. It is safe for concurrent use.
//
// The native path reuses each hash's memory for the next one instead of allocating it
// afresh: fresh memory costs a page fault per 4 KiB, which on a virtual machine costs about
// as much as the hash's arithmetic, and leaves garbage for the collector. The kept memory
// is ordinary Go heap, so the runtime's memory limit (GOMEMLIMIT) accounts for it.
type Engine struct {
	backend Backend // Native or Go: the one that derives
	reason  string
	// buffers holds the memory kept for reuse, at most KeepBuffers (native only).
	buffers chan []byte
	keepFor time.Duration
	mu      sync.Mutex
	// release drops the kept memory keepFor after the last hash; nil until a hash ends.
	release *time.Timer
}

// Open chooses the backend and, for Native, checks it against x/crypto. With Backend Native
// it fails with ErrUnavailable when the native fill cannot run here or fails the self-test;
// with Auto it falls back to Go and says why in Reason.
func Open(opts Options) (*Engine, error) {
	switch opts.Backend {
	case Go:
		return &Engine{backend: Go, reason: "configured"}, nil
	case "", Auto, Native:
	default:
		return nil, fmt.Errorf("argon2id: unknown backend %q: want auto, native or go", opts.Backend)
	}
	keep := opts.KeepBuffers
	if keep <= 0 {
		keep = runtime.GOMAXPROCS(0)
	}
	keepFor := opts.KeepFor
	if keepFor <= 0 {
		keepFor = DefaultKeepFor
	}
	e := &Engine{backend: Native, reason: "AVX2", buffers: make(chan []byte, keep), keepFor: keepFor}
	err := nativeReason()
	if err == nil {
		err = e.selfTest()
	}
	if err != nil {
		if opts.Backend == Native {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return &Engine{backend: Go, reason: err.Error()}, nil
	}
	e.Close() // the self-test's memory is not worth keeping
	return e, nil
}

// selfTest derives a key natively and with x/crypto from the same small input (64 KiB, two
// passes, so both addressing modes and the XOR of later passes run; well under a
// millisecond) and refuses the native fill unless both agree.
func (e *Engine) selfTest() error {
	pw, salt := []byte("gatehouse self-test"), []byte("0123456789abcdef")
	const time, memory, keyLen = 2, 64, 32
	if !bytes.Equal(e.nativeKey(pw, salt, time, memory, keyLen), argon2.IDKey(pw, salt, time, memory, 1, keyLen)) {
		return errors.New("self-test: the native argon2id differs from x/crypto's; not used")
	}
	return nil
}

// Backend is Native or Go; a nil Engine is Go.
func (e *Engine) Backend() Backend {
	if e == nil {
		return Go
	}
	return e.backend
}

// Reason says why: "AVX2" for Native, "configured" for Go by choice, or why the native
// fill could not be used (in a default build: it is not compiled in).
func (e *Engine) Reason() string {
	if e == nil {
		return "no engine"
	}
	return e.reason
}

// Key derives a keyLen-byte argon2id key from password and salt with time passes over
// memory KiB in threads lanes: argon2.IDKey's arguments and result, and its panics for
// time or threads below 1. The native fill derives it when the engine has it and the
// parameters are ones it takes (nativeTakes); x/crypto otherwise.
func (e *Engine) Key(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	if e.handles(threads, keyLen) && time >= 1 {
		return e.nativeKey(password, salt, time, memory, keyLen)
	}
	return argon2.IDKey(password, salt, time, memory, threads, keyLen)
}

// GoHeapBytes is how much garbage a Key with these parameters leaves in the Go heap:
// nothing when the native path derives it (it reuses its memory; what it keeps is released
// once, KeepFor after the last hash), memory KiB when x/crypto does.
func (e *Engine) GoHeapBytes(memory uint32, threads uint8, keyLen uint32) uint64 {
	if e.handles(threads, keyLen) {
		return 0
	}
	return uint64(memory) * 1024
}

// Close releases the kept memory now rather than KeepFor after the last hash. The Engine
// still works after Close: it allocates memory again as it needs it.
func (e *Engine) Close() {
	if e == nil || e.buffers == nil {
		return
	}
	e.mu.Lock()
	if e.release != nil {
		e.release.Stop()
	}
	e.mu.Unlock()
	e.dropBuffers()
}

func (e *Engine) handles(threads uint8, keyLen uint32) bool {
	return e.Backend() == Native && nativeTakes(threads, keyLen)
}

// nativeMinKeyLen is the least tag length RFC 9106 §3.1 allows; x/crypto takes shorter
// ones, so they go there.
const nativeMinKeyLen = 4

// nativeTakes reports whether the native path computes a hash with these parameters: one
// lane, a tag of at least nativeMinKeyLen bytes. Any memory is rounded as RFC 9106 says.
func nativeTakes(threads uint8, keyLen uint32) bool {
	return threads == 1 && keyLen >= nativeMinKeyLen
}

// nativeKey derives a one-lane key with the native fill in a buffer of the engine's.
func (e *Engine) nativeKey(password, salt []byte, time, memory, keyLen uint32) []byte {
	blocks := laneBlocks(memory)
	mem := e.takeBuffer(int(blocks) * blockSize)
	defer e.keepBuffer(mem)
	firstBlocks(mem, password, salt, time, memory, keyLen)
	fillNative(mem, blocks, time)
	key := make([]byte, keyLen)
	hashPrime(key, mem[(blocks-1)*blockSize:blocks*blockSize])
	return key
}

// takeBuffer returns size bytes: a kept buffer large enough, else new memory. Every block
// is written before it is read, so what a reused buffer held does not matter.
func (e *Engine) takeBuffer(size int) []byte {
	select {
	case mem := <-e.buffers:
		if cap(mem) >= size {
			return mem[:size]
		}
	default:
	}
	return make([]byte, size)
}

// keepBuffer keeps mem for the next hash, unless enough are kept or it is too large to
// keep, and moves the release of the kept memory to keepFor from now.
func (e *Engine) keepBuffer(mem []byte) {
	mem = mem[:cap(mem)]
	if len(mem) <= KeepBufferMaxBytes {
		select {
		case e.buffers <- mem:
		default:
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.release == nil {
		e.release = time.AfterFunc(e.keepFor, e.dropBuffers)
	} else {
		e.release.Reset(e.keepFor)
	}
}

// dropBuffers leaves the kept memory to the collector.
func (e *Engine) dropBuffers() {
	for {
		select {
		case <-e.buffers:
		default:
			return
		}
	}
}
