package factors

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
)

// TOTP parameters: what every authenticator app reads from an otpauth:// URI.
const (
	totpSecretBytes = 20 // 160 bits, RFC 4226 §4's recommendation
	totpPeriod      = 30 * time.Second
	totpDigits      = otp.DigitsSix
	// totpDrift is how many steps before and after the current one a code may be of
	// (RFC 6238 §5.2 recommends one).
	totpDrift = 1
	// qrSize is the width and height of the QR code image in pixels.
	qrSize = 256
)

var totpBase32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// TOTPEnrolment is a TOTP secret waiting for its first code: what the enrolment page shows.
type TOTPEnrolment struct {
	// Secret is the secret in base 32, for typing into an app that cannot scan.
	Secret string
	// URI is the otpauth:// URI the QR code holds.
	URI string
	// QRCodePNG is the URI as a QR code, a qrSize×qrSize PNG (for a data: URL).
	QRCodePNG []byte
	// ExpiresAt is when the enrolment lapses without a code.
	ExpiresAt time.Time
}

// BeginTOTP starts enrolling an authenticator app for acct: a new random secret, kept
// sealed as the account's pending enrolment (replacing an earlier one) until ConfirmTOTP
// gets a code from it. It returns ErrAlreadyEnrolled when the account has a TOTP (remove it
// first).
func (s *Service) BeginTOTP(ctx context.Context, acct Account) (*TOTPEnrolment, error) {
	if acct.ID == "" || acct.Name == "" {
		return nil, errors.New("factors: begin TOTP: account without id or name")
	}
	now := s.now()
	if _, err := s.store.TOTP(ctx, acct.ID, true, now); err == nil {
		return nil, ErrAlreadyEnrolled
	} else if !errors.Is(err, ErrNotEnrolled) {
		return nil, fmt.Errorf("factors: read TOTP: %w", err)
	}
	secret, err := s.randomBytes(totpSecretBytes)
	if err != nil {
		return nil, err
	}
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: s.cfg.ServiceName, AccountName: acct.Name, Secret: secret,
		Period: uint(totpPeriod / time.Second), Digits: totpDigits, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		return nil, fmt.Errorf("factors: TOTP key: %w", err)
	}
	img, err := key.Image(qrSize, qrSize)
	if err != nil {
		return nil, fmt.Errorf("factors: TOTP QR code: %w", err)
	}
	var qr bytes.Buffer
	if err := png.Encode(&qr, img); err != nil {
		return nil, fmt.Errorf("factors: TOTP QR code: %w", err)
	}
	sealed, err := s.sealer.Seal(secret, totpSealingData(acct.ID))
	if err != nil {
		return nil, fmt.Errorf("factors: seal TOTP secret: %w", err)
	}
	id, err := s.newID(16)
	if err != nil {
		return nil, err
	}
	expires := now.Add(s.cfg.TOTPEnrolmentLifespan)
	rec := &TOTPRecord{ID: id, AccountID: acct.ID, SealedSecret: sealed, LastStep: -1, CreatedAt: now, ExpiresAt: &expires}
	if err := s.store.SaveTOTPEnrolment(ctx, rec); err != nil {
		return nil, fmt.Errorf("factors: save TOTP enrolment: %w", err)
	}
	return &TOTPEnrolment{Secret: totpBase32.EncodeToString(secret), URI: key.URL(), QRCodePNG: qr.Bytes(), ExpiresAt: expires}, nil
}

// totpSealingData binds a sealed TOTP secret to its account.
func totpSealingData(accountID string) []byte {
	return []byte("gatehouse totp secret\x00" + accountID)
}

// ConfirmTOTP confirms the account's pending enrolment with a code from the app: the
// account then has a TOTP (FactorAdded, and mail to its owner), and that code's time step
// is spent. It returns ErrNotEnrolled without an unexpired enrolment, ErrCodeInvalid for
// a wrong code (the enrolment stays for another try), and ErrAlreadyEnrolled when a
// concurrent confirmation won.
func (s *Service) ConfirmTOTP(ctx context.Context, accountID, code string) error {
	now := s.now()
	rec, err := s.store.TOTP(ctx, accountID, false, now)
	if err != nil {
		return err
	}
	step, err := s.matchTOTP(rec, code, now)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.ConfirmTOTP(ctx, accountID, step, now); err != nil {
			return err
		}
		return s.changed(ctx, &events.FactorAdded{Meta: events.Meta{At: now}, UserID: accountID, Factor: events.FactorTOTP})
	})
}

// VerifyTOTP checks a code of the account's TOTP at a login and returns the method to
// record on the session. Every try counts against the lockout first (*LockedError over
// it: the code is not checked); a right code clears it. A code is accepted once: a right
// code of a time step already accepted is ErrCodeReplayed. It returns ErrCodeInvalid for
// a wrong code and ErrNotEnrolled for an account without TOTP. Refusals are LoginFailed
// events.
func (s *Service) VerifyTOTP(ctx context.Context, accountID, code string) (acr.Method, error) {
	if err := s.reserve(ctx, accountID, events.FactorTOTP); err != nil {
		return acr.Method{}, err
	}
	now := s.now()
	rec, err := s.store.TOTP(ctx, accountID, true, now)
	if err != nil {
		return acr.Method{}, err
	}
	step, err := s.matchTOTP(rec, code, now)
	if err == nil {
		err = s.store.AcceptTOTPStep(ctx, accountID, step, now)
	}
	switch {
	case errors.Is(err, ErrCodeInvalid):
		s.refused(ctx, accountID, events.FactorTOTP, events.ReasonBadCredentials)
		return acr.Method{}, err
	case errors.Is(err, ErrCodeReplayed):
		s.refused(ctx, accountID, events.FactorTOTP, events.ReasonCodeReplayed)
		return acr.Method{}, err
	case err != nil:
		return acr.Method{}, err
	}
	s.lockout.ClearFactorAttempts(ctx, accountID)
	return acr.Method{Name: acr.TOTP, At: now}, nil
}

// matchTOTP returns the time step, within totpDrift of now's and after rec.LastStep, whose
// code code is (the earliest, should two steps share a code); ErrCodeReplayed when code is
// only the code of steps already spent, ErrCodeInvalid when it is no step's. Every step is
// compared in constant time.
func (s *Service) matchTOTP(rec *TOTPRecord, code string, now time.Time) (int64, error) {
	code = strings.TrimSpace(code)
	if len(code) != totpDigits.Length() {
		return 0, ErrCodeInvalid
	}
	secret, err := s.sealer.Open(rec.SealedSecret, totpSealingData(rec.AccountID))
	if err != nil {
		return 0, fmt.Errorf("factors: open TOTP secret (sealed under another secret?): %w", err)
	}
	encoded := totpBase32.EncodeToString(secret)
	current := now.Unix() / int64(totpPeriod/time.Second)
	found, replayed := int64(-1), false
	for step := current - totpDrift; step <= current+totpDrift; step++ {
		want, err := hotp.GenerateCodeCustom(encoded, uint64(step), hotp.ValidateOpts{Digits: totpDigits, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return 0, fmt.Errorf("factors: TOTP code: %w", err)
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) != 1 {
			continue
		}
		if step <= rec.LastStep {
			replayed = true
		} else if found < 0 {
			found = step
		}
	}
	switch {
	case found >= 0:
		return found, nil
	case replayed:
		return 0, ErrCodeReplayed
	}
	return 0, ErrCodeInvalid
}

// RemoveTOTP removes the account's TOTP (FactorRemoved by actorID, and mail to the owner).
// It returns ErrNotEnrolled when there is none.
func (s *Service) RemoveTOTP(ctx context.Context, accountID, actorID string) error {
	return s.remove(ctx, s.store.DeleteTOTP, &events.FactorRemoved{UserID: accountID, Factor: events.FactorTOTP, ActorID: actorID})
}
