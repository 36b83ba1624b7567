// Package argon2id derives argon2id keys (RFC 9106) with a native AVX2 fill of the hash's
// memory when the CPU and the build allow it, and with golang.org/x/crypto/argon2 when
// they do not. Both compute the same function: a key is the same bytes whichever backend
// derived it, so stored password hashes never depend on it.
//
// A password hash at the OWASP minimum (m = 19 MiB, t = 2, p = 1) costs about 38 ms in
// x/crypto/argon2 on this project's 2-core test machine. Most of the difference is two
// things x/crypto cannot change behind its API:
//   - the block compression: x/crypto's assembly works on 128-bit SSE registers; the native
//     fill (fill_avx2.h, cgo) on 256-bit AVX2 ones;
//   - the memory: x/crypto allocates 19 MiB afresh for every hash and leaves it to the
//     collector; the native path keeps a few hashes' memory and reuses it while hashes keep
//     coming. On a virtual machine, faulting 19 MiB in fresh 4 KiB pages costs about as much
//     as the hash's arithmetic (libsodium, which maps afresh per hash, spent 11–15 ms of its
//     25–30 ms in the kernel here).
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
