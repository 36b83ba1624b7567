// Package argon2id derives argon2id keys (RFC 9106). By default it derives them with
// golang.org/x/crypto/argon2. A native AVX2 fill of the hash's memory, in C through cgo,
// is compiled in only when the build asks for it with the build tag gatehouse_native_argon2
// (BuildTag) on Linux amd64 with cgo:
//
//	go build -tags gatehouse_native_argon2 ./examples/server
//
// Both compute the same function: a key is the same bytes whichever backend derived it, so
// stored password hashes never depend on it and the backend can change at any time.
//
// The native fill is opt-in because it is C in the process that holds passwords, which a
// security review may refuse, and code nobody else maintains; it was reviewed against
// RFC 9106 (index arithmetic, address generation, buffer reuse) and its tests pass under
// -asan. What it buys, on this project's 2-core test machine, at m = 19 MiB, t = 2, p = 1:
// 14–16 ms of CPU a hash against x/crypto's 32–37 ms. Most of the difference is two things
// x/crypto cannot change behind its API:
//   - the block compression: x/crypto's assembly works on 128-bit SSE registers; the native
//     fill (fill_avx2.h) on 256-bit AVX2 ones;
//   - the memory: x/crypto allocates the hash's memory afresh for every hash and leaves it
//     to the collector; the native path keeps a few hashes' memory and reuses it while
//     hashes keep coming. On a virtual machine, faulting fresh 4 KiB pages costs about as
//     much as the hash's arithmetic.
//
// Its tests are this package's, run with the tag (make test-native, which CI runs):
//
//	go test -tags gatehouse_native_argon2 ./internal/argon2id ./publicauth
//
// The native path covers one lane (p = 1, which is what Gatehouse stores); Key gives every
// other parameter set to x/crypto. Only the fill is native: H0, the first blocks and the tag
// are computed in Go with golang.org/x/crypto/blake2b.
//
//	eng, err := argon2id.Open(argon2id.Options{Backend: argon2id.Auto, KeepBuffers: 2})
//	// eng.Backend() and eng.Reason() say who derives and why; log them once.
//	key := eng.Key(password, salt, 2, 19*1024, 1, 32)
//
// Open checks the native fill against x/crypto on a known input before choosing it.
package argon2id
