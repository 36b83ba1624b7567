package publicauth

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/internal/argon2id"
	"github.com/gatehouse-id/gatehouse/internal/mountpath"
	"github.com/gatehouse-id/gatehouse/internal/sameorigin"
)

// Option supplies a collaborator of a Service.
type Option func(*options)

type options struct {
	clock   func() time.Time
	random  io.Reader
	logger  *slog.Logger
	mailer  Mailer
	limiter Limiter
	events  *events.Emitter

	accounts       Accounts
	beforeRegister func(context.Context, RegisterRequest) error
}

// WithAccounts makes the service keep its accounts in accounts instead of Gatehouse's own
// users table (see Accounts). A nil store, or no WithAccounts, means the users table. The
// features that need Gatehouse's own users work only without it: the admin role (so the
// admin session and admin API), accounts created by a social login, adding a password to
// one, and the operator's CreateUser, ChangeAccount and DeleteUser.
func WithAccounts(accounts Accounts) Option {
	return func(o *options) { o.accounts = accounts }
}

// WithBeforeRegister gives the hook that Config.Registration RegistrationHook asks before it
// creates an account: nil lets the registration go on; an error from RefuseRegistration
// refuses it with its message (403); any other error is logged and answered 500. It runs
// after the request was validated and before the account is created; it is not asked when
// the email belongs to an existing account. New refuses it with any other mode.
func WithBeforeRegister(hook func(ctx context.Context, r RegisterRequest) error) Option {
	return func(o *options) { o.beforeRegister = hook }
}

// WithClock makes the service read the time from clock (expiry, timestamps). A nil clock, or
// no WithClock, means time.Now.
func WithClock(clock func() time.Time) Option {
	return func(o *options) { o.clock = clock }
}

// WithRandom makes the service read randomness (session tokens, password salts, user ids,
// link tokens, PINs) from random, which must be safe for concurrent use and
// cryptographically secure outside tests. A nil reader, or no WithRandom, means
// crypto/rand.Reader.
func WithRandom(random io.Reader) Option {
	return func(o *options) { o.random = random }
}

// WithLogger makes the service log to logger: internal errors behind a 500 answer and
// failures it recovers from. A nil logger, or no WithLogger, means slog.Default().
func WithLogger(logger *slog.Logger) Option {
	return func(o *options) { o.logger = logger }
}

// WithMailer makes the service send its mail (verification, magic link, PIN, password
// reset) through mailer. A nil mailer, or no WithMailer, means NewLogMailer(logger): the
// messages are only logged. Mail reaches it from the durable outbox (MailOutbox): a send
// that fails is retried, so Send may see a message again after an error, and, rarely
// (a crash right after a send), after a success.
func WithMailer(mailer Mailer) Option {
	return func(o *options) { o.mailer = mailer }
}

// WithLimiter makes the service count attempts for the rate limits and the login lockout
// with limiter (package ratelimit has one in memory and one in Redis). Required: New fails
// without it.
func WithLimiter(limiter Limiter) Option {
	return func(o *options) { o.limiter = limiter }
}

// Service authenticates public users and keeps their sessions. It is safe for concurrent use.
type Service struct {
	store Store
	// users reads the accounts (Accounts, WithAccounts) as Users; registrar, passwords and
	// verifier are the optional abilities of the Accounts store, nil when it lacks one.
	users     userStore
	registrar AccountRegistrar
	passwords PasswordSetter
	verifier  EmailVerifier
	// own is true when the accounts are Gatehouse's own users table.
	own            bool
	registration   RegistrationMode
	beforeRegister func(context.Context, RegisterRequest) error

	mailer  Mailer
	limiter Limiter
	events  *events.Emitter
	mail    *mailTemplates

	lifespan      map[string]time.Duration // by session kind
	cookies       map[string]cookieCodec   // by session kind
	secureCookies bool
	pinKey        []byte
	baseURL       string
	// mount is BaseURL's path (mountpath.Of): the session cookies' Path is mount+"/", and
	// a Destination.Resume must lie under it.
	mount string
	// sameOrigin refuses cookie-authenticated changes sent from other origins (Routes).
	sameOrigin     sameorigin.Guard
	serviceName    string
	requirePIN     bool
	linkLifespan   map[string]time.Duration // by token purpose
	pinLifespan    time.Duration
	allowedOrigins map[string]bool
	trustedProxies []netip.Prefix
	limits         RateLimits

	clock          func() time.Time
	random         io.Reader
	logger         *slog.Logger
	passwordParams argon2Params
	// kdf derives the argon2id keys: natively or with x/crypto (Config.PasswordHasher).
	kdf *argon2id.Engine
	// hashing bounds the argon2id work: every hash and verification runs through it.
	hashing *hashPool
	// mailing tracks the work on mail done in the background: mails being prepared
	// (mailLinkLater) until they are in the outbox, and the delivery passes a queued mail
	// starts; Wait and Close wait for them.
	mailing sync.WaitGroup
	// outbox seals queued mails and runs their delivery.
	outbox *mailOutbox
}

// New returns a Service over store. It fails when cfg is invalid (a Secret shorter than
// MinSecretLen, a negative lifespan, PINAttempts or PasswordHashConcurrency, a BaseURL that is not an absolute http(s)
// URL, an allowed origin that is not scheme://host[:port], a Rate with a positive Limit and
// no positive Window), when store is nil, when no WithLimiter is given, or when the mail
// templates do not load.
func New(cfg Config, store Store, opts ...Option) (*Service, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg, origins, errs := cfg.withDefaults()
	if store == nil {
		errs = append(errs, errors.New("Store is nil"))
	}
	if o.limiter == nil {
		errs = append(errs, errors.New("no Limiter: pass WithLimiter"))
	}
	switch {
	case cfg.Registration == RegistrationHook && o.beforeRegister == nil:
		errs = append(errs, errors.New("Registration \"hook\" needs a hook: pass WithBeforeRegister"))
	case cfg.Registration != RegistrationHook && o.beforeRegister != nil:
		errs = append(errs, fmt.Errorf("WithBeforeRegister needs Registration \"hook\", got %q", cfg.Registration))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("publicauth: invalid configuration: %w", err)
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.random == nil {
		o.random = rand.Reader
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.mailer == nil {
		o.mailer = NewLogMailer(o.logger)
	}
	templates, err := newMailTemplates(cfg.MailTemplateDir)
	if err != nil {
		return nil, fmt.Errorf("publicauth: mail templates: %w", err)
	}
	// withDefaults checked that BaseURL is an absolute http(s) URL with a plain path.
	sameOrigin, _ := sameorigin.New(cfg.BaseURL)
	mount, _ := mountpath.Of(cfg.BaseURL)
	pinKey, err := hkdf.Key(sha256.New, cfg.Secret, nil, pinKeyInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("publicauth: derive PIN key: %w", err)
	}
	kdf, err := argon2id.Open(argon2id.Options{Backend: argon2id.Backend(cfg.PasswordHasher), KeepBuffers: cfg.PasswordHashConcurrency})
	if err != nil {
		return nil, fmt.Errorf("publicauth: password hasher: %w", err)
	}
	o.logger.Info("argon2id password hashes", "backend", kdf.Backend(), "configured", cfg.PasswordHasher, "detail", kdf.Reason())
	outbox, err := newMailOutbox(cfg.Secret, cfg.MailRetryInterval)
	if err != nil {
		return nil, fmt.Errorf("publicauth: %w", err)
	}

	s := &Service{
		store:   store,
		mailer:  o.mailer,
		limiter: o.limiter,
		events:  o.events,
		mail:    templates,
		lifespan: map[string]time.Duration{
			SessionPublic: cfg.SessionLifespan,
			SessionAdmin:  cfg.AdminSessionLifespan,
		},
		cookies:       map[string]cookieCodec{},
		secureCookies: !cfg.InsecureCookies,
		pinKey:        pinKey,
		baseURL:       cfg.BaseURL,
		mount:         mount,
		sameOrigin:    sameOrigin,
		serviceName:   cfg.ServiceName,
		requirePIN:    cfg.RequirePIN,
		linkLifespan: map[string]time.Duration{
			PurposeVerifyEmail:   cfg.VerificationLifespan,
			PurposeMagicLink:     cfg.MagicLinkLifespan,
			PurposePasswordReset: cfg.PasswordResetLifespan,
			PurposeLinkPassword:  cfg.PasswordResetLifespan,
		},
		pinLifespan:    cfg.PINLifespan,
		allowedOrigins: origins,
		trustedProxies: cfg.TrustedProxies,
		limits:         cfg.Limits,
		clock:          o.clock,
		random:         o.random,
		logger:         o.logger,
		registration:   cfg.Registration,
		beforeRegister: o.beforeRegister,
		passwordParams: defaultArgon2(),
		kdf:            kdf,
		hashing:        newHashPool(cfg.PasswordHashConcurrency, cfg.PasswordHashQueue, kdf.GoHeapBytes(argon2Memory, argon2Threads, argon2KeyLen)),
		outbox:         outbox,
	}
	s.setAccounts(o.accounts)
	for kind, lifespan := range s.lifespan {
		codec, err := newCookieCodec(cfg.Secret, kind, lifespan, mount+"/")
		if err != nil {
			return nil, fmt.Errorf("publicauth: %w", err)
		}
		s.cookies[kind] = codec
	}
	s.startMailDelivery()
	return s, nil
}

// now is the service's current time in UTC.
func (s *Service) now() time.Time { return s.clock().UTC() }

// setAccounts makes accounts (nil: Gatehouse's own users table) the service's Accounts
// store and detects its optional abilities once.
func (s *Service) setAccounts(accounts Accounts) {
	if accounts == nil {
		own := ownAccounts{s: s}
		s.users, s.own = own, true
		s.registrar, s.passwords, s.verifier = own, own, own
		return
	}
	registrar, _ := accounts.(AccountRegistrar)
	s.users = accountUsers{accounts: accounts, registrar: registrar}
	s.registrar = registrar
	s.passwords, _ = accounts.(PasswordSetter)
	s.verifier, _ = accounts.(EmailVerifier)
}

// Abilities reports what the Accounts store supports beyond logins and lookups.
type Abilities struct {
	// Registration: the store is an AccountRegistrar and Config.Registration is not
	// RegistrationClosed.
	Registration bool
	// PasswordReset: the store is a PasswordSetter.
	PasswordReset bool
	// EmailVerification: the store is an EmailVerifier.
	EmailVerification bool
	// OwnAccounts: the accounts are Gatehouse's own users table (no WithAccounts).
	OwnAccounts bool
}

// Abilities reports what the Accounts store supports, for pages and discovery to offer
// only what works.
func (s *Service) Abilities() Abilities {
	return Abilities{
		Registration:      s.registrar != nil && s.registration != RegistrationClosed,
		PasswordReset:     s.passwords != nil,
		EmailVerification: s.verifier != nil,
		OwnAccounts:       s.own,
	}
}
