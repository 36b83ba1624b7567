package publicauth

import (
	"io"
	"testing"
)

// Internals reached by the external tests (package publicauth_test).

var (
	CheckPassword        = checkPassword
	CheckAccountPassword = checkAccountPassword
	VerifyPassword       = verifyPassword
	ErrMalformedHash     = errMalformedHash
	DummyPasswordHash    = dummyPasswordHash
	HashToken            = hashToken
)

// HashPassword hashes pw with the given argon2id parameters.
func HashPassword(pw string, memory, time uint32, threads uint8, random io.Reader) (string, error) {
	return hashPassword(pw, argon2Params{memory: memory, time: time, threads: threads}, random)
}

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
