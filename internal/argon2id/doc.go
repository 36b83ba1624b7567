// Package argon2id derives argon2id keys (RFC 9106) with libsodium when it can, and with
// golang.org/x/crypto/argon2 when it cannot. Both compute the same function: a key is the
// same bytes whichever backend derived it, so stored password hashes never depend on it.
//
// A password hash at the OWASP minimum (m = 19 MiB, t = 2, p = 1) takes about 38 ms in
// x/crypto/argon2 and 26 ms in libsodium on the same 2-core machine: libsodium fills the
// blocks with AVX2 where the CPU has it (x/crypto with SSE4.1), and it takes the hash's
// memory from the kernel and gives it back, where x/crypto leaves 19 MiB of garbage in the
// Go heap per hash. Password login is bound by this hash.
//
// libsodium is loaded with dlopen at run time: the build needs cgo (Linux only here) but
// no libsodium headers, and a host without libsodium derives with x/crypto. libsodium's
// argon2id takes one lane and a 16-byte salt only; Key gives any other parameters to
// x/crypto.
//
//	eng, err := argon2id.Open(argon2id.Options{Backend: argon2id.Auto})
//	// eng.Backend() and eng.Reason() say who derives and why; log them once.
//	key := eng.Key(password, salt, 2, 19*1024, 1, 32)
//
// Open checks libsodium against x/crypto on a known input before choosing it, so a
// library that computes anything else is never used.
package argon2id
