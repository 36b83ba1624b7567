package publicauth

import (
	"io"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/argon2id"
)

// Internals reached by the external tests (package publicauth_test).

var (
	CheckPassword        = checkPassword
	CheckAccountPassword = checkAccountPassword
	ErrMalformedHash     = errMalformedHash
	DummyPasswordHash    = dummyPasswordHash
	HashToken            = hashToken
)

// testKDF derives the tests' hashes as a server on this host would (natively where it
// can); the tests that compare backends open their own engines.
var testKDF = func() *argon2id.Engine {
	e, err := argon2id.Open(argon2id.Options{})
	if err != nil {
		panic(err)
	}
	return e
}()

// HashPassword hashes pw with the given argon2id parameters.
func HashPassword(pw string, memory, time uint32, threads uint8, random io.Reader) (string, error) {
	return hashPassword(testKDF, pw, argon2Params{memory: memory, time: time, threads: threads}, random)
}

// VerifyPassword checks pw against the PHC string encoded.
func VerifyPassword(pw, encoded string) (bool, error) { return verifyPassword(testKDF, pw, encoded) }

// HashPasswordWith and VerifyPasswordWith are HashPassword and VerifyPassword with the
// given backend.
func HashPasswordWith(t testing.TB, backend string, pw string, random io.Reader) string {
	t.Helper()
	h, err := hashPassword(openKDF(t, backend), pw, defaultArgon2(), random)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func VerifyPasswordWith(t testing.TB, backend, pw, encoded string) (bool, error) {
	t.Helper()
	return verifyPassword(openKDF(t, backend), pw, encoded)
}

func openKDF(t testing.TB, backend string) *argon2id.Engine {
	t.Helper()
	e, err := argon2id.Open(argon2id.Options{Backend: argon2id.Backend(backend)})
	if err != nil {
		t.Skipf("%s: %v", backend, err)
	}
	return e
}

// PasswordHasherOf is the backend a Service derives with.
func PasswordHasherOf(s *Service) string { return string(s.kdf.Backend()) }

// DefaultPasswordParams returns the parameters new hashes are made with.
func DefaultPasswordParams() (memory, time uint32, threads uint8) {
	p := defaultArgon2()
	return p.memory, p.time, p.threads
}

// PasswordHashParams returns the parameters stored in a PHC string.
func PasswordHashParams(encoded string) (memory, time uint32, threads uint8, err error) {
	p, _, _, err := decodePHC(encoded)
	return p.memory, p.time, p.threads, err
}

// BreachedPasswords returns the embedded breached-password set, failing t when it does not
// load.
func BreachedPasswords(t testing.TB) map[string]struct{} {
	t.Helper()
	set, err := breachedPasswords()
	if err != nil {
		t.Fatalf("load breached-password list: %v", err)
	}
	return set
}

// NewMailTemplates exposes newMailTemplates.
var NewMailTemplates = newMailTemplates

// Render exposes render.
func (t *mailTemplates) Render(kind string, d MailData) (Message, error) { return t.render(kind, d) }

// HoldPasswordHashing takes every slot and queue place of s's hashing pool, so the next
// hash or verification is refused with ErrBusy, until release is called.
func (s *Service) HoldPasswordHashing() (release func()) {
	p := s.hashing
	for range cap(p.slots) {
		p.slots <- struct{}{}
	}
	for range cap(p.waiting) {
		p.waiting <- struct{}{}
	}
	return func() {
		for range cap(p.waiting) {
			<-p.waiting
		}
		for range cap(p.slots) {
			<-p.slots
		}
	}
}
