package factors

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
)

// Summary is what second factors an account has: for its account page, an admin's
// listing, and the methods a step-up may ask for (Available).
type Summary struct {
	// TOTP is the confirmed TOTP; nil without one.
	TOTP *TOTPRecord
	// Passkeys are every passkey, Usable or not, oldest first.
	Passkeys []Passkey
	// RecoveryCodes describes the recovery codes; nil without a set.
	RecoveryCodes *RecoveryCodeSet
}

// Available lists the second-factor methods the account can complete now, in acr's names
// (acr.TOTP, acr.Passkey, acr.RecoveryCode): the second-factor part of acr.Next's
// available. A passkey counts when one is Usable, recovery codes while one is unused.
func (s Summary) Available() []string {
	var names []string
	if s.TOTP != nil {
		names = append(names, acr.TOTP)
	}
	for _, k := range s.Passkeys {
		if k.Usable {
			names = append(names, acr.Passkey)
			break
		}
	}
	if s.RecoveryCodes != nil && s.RecoveryCodes.Remaining > 0 {
		names = append(names, acr.RecoveryCode)
	}
	return names
}

// Factors returns the account's second factors. It is what an admin lists too: every
// factor is keyed by account id, whichever store keeps the accounts.
func (s *Service) Factors(ctx context.Context, accountID string) (*Summary, error) {
	var sum Summary
	totp, err := s.store.TOTP(ctx, accountID, true, s.now())
	switch {
	case err == nil:
		totp.SealedSecret = nil // the summary goes to pages and APIs
		sum.TOTP = totp
	case !errors.Is(err, ErrNotEnrolled):
		return nil, fmt.Errorf("factors: read TOTP: %w", err)
	}
	if sum.Passkeys, err = s.Passkeys(ctx, accountID); err != nil {
		return nil, err
	}
	codes, err := s.store.RecoveryCodes(ctx, accountID)
	switch {
	case err == nil:
		sum.RecoveryCodes = &codes
	case !errors.Is(err, ErrNotEnrolled):
		return nil, fmt.Errorf("factors: read recovery codes: %w", err)
	}
	return &sum, nil
}

// ResetFactors removes every second factor of the account, for an admin (actorID; "" for an
// operator at the command line or through Go) helping a user who lost theirs: in one
// transaction, each a FactorRemoved with Reset set, mailed to the owner. It returns what
// was removed (an empty Summary when the account had none).
func (s *Service) ResetFactors(ctx context.Context, accountID, actorID string) (*Summary, error) {
	var removed *Summary
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if removed, err = s.Factors(ctx, accountID); err != nil {
			return err
		}
		reset := func(factor, id, label string) *events.FactorRemoved {
			return &events.FactorRemoved{UserID: accountID, Factor: factor, FactorID: id, Label: label, ActorID: actorID, Reset: true}
		}
		if removed.TOTP != nil {
			if err := s.remove(ctx, s.store.DeleteTOTP, reset(events.FactorTOTP, "", "")); err != nil {
				return err
			}
		}
		for _, k := range removed.Passkeys {
			del := func(ctx context.Context, accountID string) (bool, error) {
				return true, s.store.DeletePasskey(ctx, accountID, k.ID)
			}
			if err := s.remove(ctx, del, reset(events.FactorPasskey, k.ID, k.Name)); err != nil {
				return err
			}
		}
		if removed.RecoveryCodes != nil {
			return s.remove(ctx, s.store.DeleteRecoveryCodes, reset(events.FactorRecoveryCodes, "", ""))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return removed, nil
}

// remove deletes a factor with del, in a transaction with e (stamped now) and the owner's
// mail; del reporting there was none is ErrNotEnrolled.
func (s *Service) remove(ctx context.Context, del func(ctx context.Context, accountID string) (bool, error), e *events.FactorRemoved) error {
	e.At = s.now()
	return s.store.InTx(ctx, func(ctx context.Context) error {
		had, err := del(ctx, e.UserID)
		if err != nil {
			return err
		}
		if !had {
			return ErrNotEnrolled
		}
		return s.changed(ctx, e)
	})
}
