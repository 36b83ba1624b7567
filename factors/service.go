package factors

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/gatehouse-id/gatehouse/events"
)

// Config is what the service is configured with; the zero value of every field but the
// required ones takes the default stated on it.
type Config struct {
	// Issuer is the OpenID Connect issuer URL. Passkeys' relying party id is its host and
	// their one accepted origin its origin (scheme, host and port); see the package doc
	// for what a move of the issuer does. Required.
	Issuer string
	// ServiceName is the issuer label of TOTP entries in authenticator apps and the
	// relying party name passkey prompts show: default "Gatehouse".
	ServiceName string
	// RecoveryCodeKey is the HMAC-SHA-256 key recovery codes are stored under: at least
	// 32 bytes, derived from the system secret for this use alone (rotating the secret
	// voids every stored code). Required.
	RecoveryCodeKey []byte
	// TOTPEnrolmentLifespan is how long a TOTP enrolment waits for its first code:
	// default 10 minutes.
	TOTPEnrolmentLifespan time.Duration
	// CeremonyLifespan is how long a passkey ceremony may take from begin to finish, and
	// the timeout the browser is given: default 5 minutes.
	CeremonyLifespan time.Duration
}

// Defaults of Config.
const (
	DefaultServiceName           = "Gatehouse"
	DefaultTOTPEnrolmentLifespan = 10 * time.Minute
	DefaultCeremonyLifespan      = 5 * time.Minute
)

// Sealer encrypts secrets at rest (TOTP secrets), as the provider seals its signing keys:
// an AEAD under a key derived from the system secret for this use alone.
// additionalData binds a sealed value to its place (the account), so it cannot be moved.
type Sealer interface {
	Seal(plaintext, additionalData []byte) ([]byte, error)
	// Open fails for a value sealed under another key or with other additional data.
	Open(sealed, additionalData []byte) ([]byte, error)
}

// AEADSealer is a Sealer over aead (AES-256-GCM in the provider) that puts a fresh nonce
// from random in front of each sealed value.
func AEADSealer(aead cipher.AEAD, random io.Reader) Sealer {
	return aeadSealer{aead: aead, random: random}
}

type aeadSealer struct {
	aead   cipher.AEAD
	random io.Reader
}

func (s aeadSealer) Seal(plaintext, additionalData []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := io.ReadFull(s.random, nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plaintext, additionalData), nil
}

func (s aeadSealer) Open(sealed, additionalData []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("factors: sealed value too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], additionalData)
}

// Lockout counts wrong second-factor codes per account, with the login lockout's rate
// (publicauth's Service implements it).
type Lockout interface {
	// ReserveFactorAttempt counts one attempt of the account before its code is checked;
	// ok false, with how long until the lockout ends, means the code must not be checked.
	ReserveFactorAttempt(ctx context.Context, accountID string) (ok bool, retryAfter time.Duration)
	// ClearFactorAttempts forgets them, after a right code.
	ClearFactorAttempts(ctx context.Context, accountID string)
}

// Notifier mails an account's owner about a change of their factors (publicauth's
// Service implements it).
type Notifier interface {
	// MailFactorNotice queues the mail e calls for (FactorAdded, FactorRemoved,
	// RecoveryCodeUsed) inside the transaction ctx carries, so it goes out exactly when
	// the change commits. Its error rolls the change back.
	MailFactorNotice(ctx context.Context, e events.Event) error
}

// Option supplies a collaborator of the service.
type Option func(*Service)

// WithSealer seals TOTP secrets at rest. Required.
func WithSealer(s Sealer) Option { return func(svc *Service) { svc.sealer = s } }

// WithLockout counts wrong codes. Required.
func WithLockout(l Lockout) Option { return func(svc *Service) { svc.lockout = l } }

// WithNotifier mails the owner about changes. Required.
func WithNotifier(n Notifier) Option { return func(svc *Service) { svc.notifier = n } }

// WithEvents emits the service's events through em; none without it.
func WithEvents(em *events.Emitter) Option { return func(svc *Service) { svc.events = em } }

// WithClock reads the time from clock; time.Now when nil or not given.
func WithClock(clock func() time.Time) Option { return func(svc *Service) { svc.clock = clock } }

// WithRandom reads randomness (secrets, codes, handles, ceremony ids) from random, which
// must be cryptographically secure outside tests; crypto/rand.Reader when nil or not given.
func WithRandom(random io.Reader) Option { return func(svc *Service) { svc.random = random } }

// WithLogger logs to logger (a suspected clone, failures recording a refusal);
// slog.Default() when nil or not given.
func WithLogger(logger *slog.Logger) Option { return func(svc *Service) { svc.logger = logger } }

// Service keeps and checks the second factors of accounts. It is safe for concurrent use.
type Service struct {
	cfg      Config
	store    Store
	sealer   Sealer
	lockout  Lockout
	notifier Notifier
	events   *events.Emitter
	clock    func() time.Time
	random   io.Reader
	logger   *slog.Logger

	// webauthn is the relying party; nil when passkeys cannot work with the issuer, for
	// the reason in noPasskeys.
	webauthn   *webauthn.WebAuthn
	rpID       string
	noPasskeys error
}

// New returns a service over store. It fails for a missing or malformed Issuer, a
// RecoveryCodeKey under 32 bytes, a negative lifespan or a missing required collaborator,
// naming each. An issuer passkeys cannot work with does not fail it: see
// PasskeysAvailable.
func New(cfg Config, store Store, opts ...Option) (*Service, error) {
	s := &Service{store: store}
	for _, o := range opts {
		o(s)
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = DefaultServiceName
	}
	if cfg.TOTPEnrolmentLifespan == 0 {
		cfg.TOTPEnrolmentLifespan = DefaultTOTPEnrolmentLifespan
	}
	if cfg.CeremonyLifespan == 0 {
		cfg.CeremonyLifespan = DefaultCeremonyLifespan
	}
	var errs []error
	issuer, err := url.Parse(cfg.Issuer)
	if cfg.Issuer == "" || err != nil || issuer.Host == "" || (issuer.Scheme != "https" && issuer.Scheme != "http") {
		errs = append(errs, fmt.Errorf("Issuer %q must be an http or https URL", cfg.Issuer))
	}
	if len(cfg.RecoveryCodeKey) < 32 {
		errs = append(errs, errors.New("RecoveryCodeKey must be at least 32 bytes"))
	}
	if cfg.TOTPEnrolmentLifespan < 0 || cfg.CeremonyLifespan < 0 {
		errs = append(errs, errors.New("TOTPEnrolmentLifespan and CeremonyLifespan must not be negative"))
	}
	for _, missing := range []struct {
		name string
		nil  bool
	}{{"a Store", store == nil}, {"WithSealer", s.sealer == nil}, {"WithLockout", s.lockout == nil}, {"WithNotifier", s.notifier == nil}} {
		if missing.nil {
			errs = append(errs, fmt.Errorf("%s is required", missing.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("factors: %w", err)
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.random == nil {
		s.random = rand.Reader
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	s.cfg = cfg
	s.rpID = issuer.Hostname()
	s.webauthn, s.noPasskeys = newRelyingParty(cfg, issuer)
	return s, nil
}

// newRelyingParty is the WebAuthn relying party of the issuer, or why there is none.
func newRelyingParty(cfg Config, issuer *url.URL) (*webauthn.WebAuthn, error) {
	if err := protocol.ValidateRPID(issuer.Hostname()); err != nil {
		return nil, fmt.Errorf("%w: the issuer's host %q is no domain name (%v)", ErrPasskeysUnavailable, issuer.Hostname(), err)
	}
	requireResidentKey := true
	wa, err := webauthn.New(&webauthn.Config{
		RPID:                  issuer.Hostname(),
		RPDisplayName:         cfg.ServiceName,
		RPOrigins:             []string{issuer.Scheme + "://" + issuer.Host},
		AttestationPreference: protocol.PreferNoAttestation,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: &requireResidentKey,
			UserVerification:   protocol.VerificationPreferred,
		},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: cfg.CeremonyLifespan, TimeoutUVD: cfg.CeremonyLifespan},
			Registration: webauthn.TimeoutConfig{Timeout: cfg.CeremonyLifespan, TimeoutUVD: cfg.CeremonyLifespan},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPasskeysUnavailable, err)
	}
	return wa, nil
}

// PasskeysAvailable returns nil when passkeys work with the configured issuer, else why
// not (wrapping ErrPasskeysUnavailable): the pages then offer TOTP and recovery codes only.
func (s *Service) PasskeysAvailable() error { return s.noPasskeys }

// Account is what the service needs to know of an account to enrol a factor for it.
type Account struct {
	ID string
	// Name identifies the account to its owner: the email address. It labels the TOTP
	// entry in the authenticator app and the passkey in the browser's picker.
	Name string
	// DisplayName is the owner's name, shown beside Name by passkey prompts; Name when "".
	DisplayName string
}

func (s *Service) now() time.Time { return s.clock().UTC() }

// newID returns n random bytes as base64url without padding.
func (s *Service) newID(n int) (string, error) {
	b, err := s.randomBytes(n)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (s *Service) randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.random, b); err != nil {
		return nil, fmt.Errorf("factors: read random: %w", err)
	}
	return b, nil
}

// hashID is the key an opaque id is stored under: its hex SHA-256.
func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// changed emits e, stamped now, and queues the owner's mail about it, inside the
// transaction ctx carries (the change's).
func (s *Service) changed(ctx context.Context, e events.Event) error {
	if err := s.events.Emit(ctx, e); err != nil {
		return err
	}
	return s.notifier.MailFactorNotice(ctx, e)
}

// refused emits the LoginFailed of a refused code; a failure to record it is logged, since
// the refusal stands either way.
func (s *Service) refused(ctx context.Context, accountID, method, reason string) {
	e := &events.LoginFailed{Meta: events.Meta{At: s.now()}, UserID: accountID, Method: method, Reason: reason}
	if err := s.events.Emit(ctx, e); err != nil {
		s.logger.ErrorContext(ctx, "factors: recording a refused code failed", "error", err)
	}
}

// reserve counts one attempt of the account against the lockout, and returns a
// *LockedError (having emitted the refusal) when it is over.
func (s *Service) reserve(ctx context.Context, accountID, method string) error {
	if ok, retryAfter := s.lockout.ReserveFactorAttempt(ctx, accountID); !ok {
		s.refused(ctx, accountID, method, events.ReasonLocked)
		return &LockedError{RetryAfter: max(retryAfter, time.Second)}
	}
	return nil
}
