package publicauth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Config is the data that configures a Service. The zero value of every field but Secret has
// a working default, stated on the field; New validates the whole struct at once.
type Config struct {
	// SessionLifespan is how long a `public-session` lasts after login: default 7 days.
	SessionLifespan time.Duration
	// AdminSessionLifespan is how long an `admin-session` lasts after login: default 8 hours.
	AdminSessionLifespan time.Duration
	// InsecureCookies leaves the Secure attribute off the session cookies, so browsers send
	// them over plain http: for local development only. The provider sets it when the issuer
	// is plain http on a loopback host. Default false: cookies are Secure.
	InsecureCookies bool
	// Secret is the system secret, at least 32 bytes. The session cookies' HMAC keys are
	// derived from it with HKDF-SHA-256 (RFC 5869), one key per cookie name; it is never used
	// as a key itself. Required.
	Secret []byte
}

// Defaults of Config.
const (
	DefaultSessionLifespan      = 7 * 24 * time.Hour
	DefaultAdminSessionLifespan = 8 * time.Hour
	// MinSecretLen is the least length of Config.Secret in bytes.
	MinSecretLen = 32
)

// Option supplies a collaborator of a Service.
type Option func(*options)

type options struct {
	clock  func() time.Time
	random io.Reader
	logger *slog.Logger
}

// WithClock makes the service read the time from clock (expiry, timestamps). A nil clock, or
// no WithClock, means time.Now.
func WithClock(clock func() time.Time) Option {
	return func(o *options) { o.clock = clock }
}

// WithRandom makes the service read randomness (session tokens, password salts, user ids)
// from random, which must be safe for concurrent use and cryptographically secure outside
// tests. A nil reader, or no WithRandom, means crypto/rand.Reader.
func WithRandom(random io.Reader) Option {
	return func(o *options) { o.random = random }
}

// WithLogger makes the service log to logger: internal errors behind a 500 answer and
// failures it recovers from. A nil logger, or no WithLogger, means slog.Default().
func WithLogger(logger *slog.Logger) Option {
	return func(o *options) { o.logger = logger }
}

// Service authenticates public users and keeps their sessions. It is safe for concurrent use.
type Service struct {
	users    UserStore
	sessions SessionStore

	lifespan       map[string]time.Duration // by session kind
	cookies        map[string]cookieCodec   // by session kind
	secureCookies  bool
	clock          func() time.Time
	random         io.Reader
	logger         *slog.Logger
	passwordParams argon2Params
}

// New returns a Service over the given stores. It fails when cfg.Secret is shorter than
// MinSecretLen, when a lifespan is negative, or when a store is nil.
func New(cfg Config, users UserStore, sessions SessionStore, opts ...Option) (*Service, error) {
	var errs []error
	if len(cfg.Secret) < MinSecretLen {
		errs = append(errs, fmt.Errorf("Secret must be at least %d bytes, got %d", MinSecretLen, len(cfg.Secret)))
	}
	if cfg.SessionLifespan < 0 {
		errs = append(errs, fmt.Errorf("SessionLifespan must not be negative, got %s", cfg.SessionLifespan))
	}
	if cfg.AdminSessionLifespan < 0 {
		errs = append(errs, fmt.Errorf("AdminSessionLifespan must not be negative, got %s", cfg.AdminSessionLifespan))
	}
	if users == nil {
		errs = append(errs, errors.New("UserStore is nil"))
	}
	if sessions == nil {
		errs = append(errs, errors.New("SessionStore is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("publicauth: invalid configuration: %w", err)
	}
	if cfg.SessionLifespan == 0 {
		cfg.SessionLifespan = DefaultSessionLifespan
	}
	if cfg.AdminSessionLifespan == 0 {
		cfg.AdminSessionLifespan = DefaultAdminSessionLifespan
	}

	var o options
	for _, opt := range opts {
		opt(&o)
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

	s := &Service{
		users:    users,
		sessions: sessions,
		lifespan: map[string]time.Duration{
			SessionPublic: cfg.SessionLifespan,
			SessionAdmin:  cfg.AdminSessionLifespan,
		},
		cookies:        map[string]cookieCodec{},
		secureCookies:  !cfg.InsecureCookies,
		clock:          o.clock,
		random:         o.random,
		logger:         o.logger,
		passwordParams: defaultArgon2(),
	}
	for kind, lifespan := range s.lifespan {
		codec, err := newCookieCodec(cfg.Secret, kind, lifespan)
		if err != nil {
			return nil, fmt.Errorf("publicauth: %w", err)
		}
		s.cookies[kind] = codec
	}
	return s, nil
}

// now is the service's current time in UTC.
func (s *Service) now() time.Time { return s.clock().UTC() }
