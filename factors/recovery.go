package factors

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
)

// Recovery codes: RecoveryCodeCount codes of recoveryCodeLen characters of Crockford's
// base-32 alphabet, 5 bits a character: 50 bits a code.
const (
	RecoveryCodeCount = 10
	recoveryCodeLen   = 10
	recoveryAlphabet  = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
)

// GenerateRecoveryCodes gives the account a new set of recovery codes and returns them,
// grouped for reading ("7KQ2M-X9T4B"): they are shown this once, and only their keyed
// hashes are kept. The old set, used codes and all, is revoked in the same transaction.
// It is a FactorAdded (FactorRecoveryCodes), mailed to the owner.
func (s *Service) GenerateRecoveryCodes(ctx context.Context, accountID string) ([]string, error) {
	if accountID == "" {
		return nil, errors.New("factors: generate recovery codes: no account")
	}
	codes := make([]string, 0, RecoveryCodeCount)
	hashes := make([]string, 0, RecoveryCodeCount)
	seen := map[string]bool{}
	for len(codes) < RecoveryCodeCount {
		raw, err := s.randomBytes(recoveryCodeLen)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, c := range raw {
			// 256 is a multiple of 32: the low five bits are uniform.
			b.WriteByte(recoveryAlphabet[c&31])
		}
		code := b.String()
		if seen[code] {
			continue
		}
		seen[code] = true
		codes = append(codes, code[:recoveryCodeLen/2]+"-"+code[recoveryCodeLen/2:])
		hashes = append(hashes, s.recoveryCodeHash(accountID, code))
	}
	now := s.now()
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.ReplaceRecoveryCodes(ctx, accountID, hashes, now); err != nil {
			return err
		}
		return s.changed(ctx, &events.FactorAdded{Meta: events.Meta{At: now}, UserID: accountID, Factor: events.FactorRecoveryCodes})
	})
	if err != nil {
		return nil, err
	}
	return codes, nil
}

// recoveryCodeHash is the stored form of a normalized code of the account: the hex
// HMAC-SHA-256 under Config.RecoveryCodeKey of the account id and the code, so a code is
// bound to its account and no one without the key can aim a guess at a stored hash.
func (s *Service) recoveryCodeHash(accountID, code string) string {
	m := hmac.New(sha256.New, s.cfg.RecoveryCodeKey)
	m.Write([]byte("gatehouse recovery code v1\x00" + accountID + "\x00" + code))
	return hex.EncodeToString(m.Sum(nil))
}

// normalizeRecoveryCode reads a code as typed: ASCII letters in either case, dashes and
// spaces ignored, O read as 0 and I or L as 1 (Crockford's base 32). It reports false for
// anything that cannot be a code.
func normalizeRecoveryCode(typed string) (string, bool) {
	var b strings.Builder
	for _, r := range typed {
		switch {
		case r == '-' || r == ' ' || r == '\t':
			continue
		case r >= 'a' && r <= 'z':
			r -= 'a' - 'A'
		}
		switch r {
		case 'O':
			r = '0'
		case 'I', 'L':
			r = '1'
		}
		if r > 0x7f || !strings.ContainsRune(recoveryAlphabet, r) {
			return "", false
		}
		b.WriteRune(r)
		if b.Len() > recoveryCodeLen {
			return "", false
		}
	}
	return b.String(), b.Len() == recoveryCodeLen
}

// UseRecoveryCode spends one of the account's recovery codes at a login and returns the
// method to record on the session. Every try counts against the lockout first
// (*LockedError over it); a right code clears it. The code is found by its keyed hash and
// spent by one conditional update, so of two uses of one code exactly one succeeds. A
// wrong, used or revoked code is ErrCodeInvalid (a LoginFailed). A use is a
// RecoveryCodeUsed event and mails the owner, in the transaction that spends the code.
func (s *Service) UseRecoveryCode(ctx context.Context, accountID, typed string) (acr.Method, error) {
	if err := s.reserve(ctx, accountID, events.MethodRecoveryCode); err != nil {
		return acr.Method{}, err
	}
	code, ok := normalizeRecoveryCode(typed)
	now := s.now()
	err := ErrCodeInvalid
	if ok {
		hash := s.recoveryCodeHash(accountID, code)
		err = s.store.InTx(ctx, func(ctx context.Context) error {
			remaining, err := s.store.UseRecoveryCode(ctx, accountID, hash, now)
			if err != nil {
				return err
			}
			return s.changed(ctx, &events.RecoveryCodeUsed{Meta: events.Meta{At: now}, UserID: accountID, Remaining: remaining})
		})
	}
	if errors.Is(err, ErrCodeInvalid) {
		s.refused(ctx, accountID, events.MethodRecoveryCode, events.ReasonBadCredentials)
	}
	if err != nil {
		return acr.Method{}, err
	}
	s.lockout.ClearFactorAttempts(ctx, accountID)
	return acr.Method{Name: acr.RecoveryCode, At: now}, nil
}

// RemoveRecoveryCodes revokes the account's recovery codes (FactorRemoved by actorID, and
// mail to the owner). It returns ErrNotEnrolled when it has none.
func (s *Service) RemoveRecoveryCodes(ctx context.Context, accountID, actorID string) error {
	return s.remove(ctx, s.store.DeleteRecoveryCodes, &events.FactorRemoved{UserID: accountID, Factor: events.FactorRecoveryCodes, ActorID: actorID})
}
