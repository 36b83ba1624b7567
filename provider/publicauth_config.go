package provider

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage"
)

// PublicAuthConfig configures public authentication beyond passwords and sessions: mail,
// the PIN gate, magic links, email verification, password reset and rate limits. The zero
// value works: mail is logged instead of sent, limits are kept in memory. Most fields are
// publicauth.Config's under a provider-wide name; their defaults and rules are publicauth's,
// and New fills the defaults in.
type PublicAuthConfig struct {
	// SMTPURL selects the mail server: "smtp://[user:pass@]host:port" (STARTTLS whenever
	// the server offers it) or "smtps://[user:pass@]host:port" (implicit TLS). Default
	// empty: no mail is sent; each message, with its link or PIN, is written to the log so
	// a local server stays usable.
	SMTPURL string
	// MailFrom is the sender of every mail: an address or "Name <address>"
	// (publicauth.ParseSender). Required when SMTPURL is set; default "SERVICE
	// <no-reply@HOST>" with SERVICE the ServiceName and HOST the issuer's host.
	MailFrom string
	// ServiceName names the deployment in mail subjects and greetings. Default
	// publicauth.DefaultServiceName ("Gatehouse").
	ServiceName string
	// MailRetryInterval is how often this provider looks for mail in the outbox due for
	// another attempt: default publicauth.DefaultMailRetryInterval (5 seconds); negative
	// turns this replica's mail worker off (another replica's delivers). See
	// publicauth.Config.MailRetryInterval.
	MailRetryInterval time.Duration
	// MailTemplateDir, when set, holds mail templates replacing the embedded ones of the
	// same name (e.g. magic_link.subject.tmpl, magic_link.txt.tmpl, magic_link.html.tmpl).
	// Default "": the embedded templates only.
	MailTemplateDir string

	// RequirePIN turns the PIN gate on for every user: a password or magic-link login then
	// asks for a 6-digit PIN sent by mail. Default false: only users whose own flag is set.
	RequirePIN bool

	// MagicLinkLifespan is how long a magic link works: default
	// publicauth.DefaultMagicLinkLifespan (15 minutes).
	MagicLinkLifespan time.Duration
	// PINLifespan is how long a mailed PIN works: default publicauth.DefaultPINLifespan (10
	// minutes).
	PINLifespan time.Duration
	// VerificationLifespan is how long an email-verification link works: default
	// publicauth.DefaultVerificationLifespan (24 hours).
	VerificationLifespan time.Duration
	// PasswordResetLifespan is how long a password-reset link works, and a link that
	// confirms adding a password to a social-only account: default
	// publicauth.DefaultPasswordResetLifespan (1 hour).
	PasswordResetLifespan time.Duration
	// MagicLinkAllowedOrigins are origins ("https://app.example.com") whose URLs a magic
	// link may redirect to besides the redirect URIs registered by clients, by the rule of
	// publicauth.Config.MagicLinkAllowedOrigins. Default none.
	MagicLinkAllowedOrigins []string

	// TrustedProxies are the addresses (CIDRs or single IPs) of reverse proxies whose
	// X-Forwarded-For header names the client. Default none: the client is the peer of the
	// TCP connection, and the header is ignored.
	TrustedProxies []netip.Prefix
	// LoginRateLimit caps the attempts one client IP makes at one endpoint (login,
	// register, magic link, PIN, password reset, verification): default
	// publicauth.DefaultPerIPLimit a publicauth.DefaultPerIPWindow (100 a minute), so an
	// office behind one NAT is not locked out. A negative Limit turns it off.
	LoginRateLimit RateLimit
	// AccountMailLimit caps the mails (magic link, PIN, reset, verification, password
	// linking) sent to one account per kind: default publicauth.DefaultPerAccountLimit in
	// publicauth.DefaultPerAccountWindow (5 in 15 minutes).
	AccountMailLimit RateLimit
	// LockoutLimit is how many failed logins lock an account, and for how long: default
	// publicauth.DefaultLockoutLimit failures, locked until publicauth.DefaultLockoutWindow
	// after the first of them (10 in 15 minutes).
	LockoutLimit RateLimit
	// TokenErrorLimit caps the failed client authentications (401 invalid_client: a wrong
	// client secret) one IP makes at the token, revocation and introspection endpoints:
	// default DefaultTokenErrorLimit a DefaultTokenErrorWindow (100 a minute), by the rules
	// of publicauth.Rate. Over it those endpoints answer 429 slow_down until the window
	// ends, so client secrets cannot be guessed at speed. Nothing else is counted.
	TokenErrorLimit RateLimit
	// AuthorizeIPLimit caps the authorization requests one IP leaves stored: paused for the
	// login or consent page (the browser's IP; a request that finishes at once, the user
	// signed in and consent given, stores nothing and is not counted), and pushed to the
	// PAR endpoint by a public client (the pusher's IP; a confidential client's pushes are
	// counted by AuthorizeClientLimit alone, its backend sending every user's). Pauses and
	// pushes are counted apart. Default DefaultAuthorizeIPLimit a DefaultAuthorizeWindow
	// (100 a minute, as the login limit). Over it the authorization endpoint answers 429
	// with Retry-After (a page), the PAR endpoint 429 slow_down. A negative Limit turns it
	// off.
	AuthorizeIPLimit RateLimit
	// AuthorizeClientLimit caps the same per client: the requests paused for one client's
	// sign-ins, and those it pushes. Default DefaultAuthorizeClientLimit a
	// DefaultAuthorizeWindow (1,000 a minute); raise it for a client that starts more
	// sign-ins than that. A negative Limit turns it off.
	AuthorizeClientLimit RateLimit

	// PasswordHashConcurrency is how many password hashes or checks (argon2id, about 7 MiB
	// each) run at once, which bounds the memory a burst of logins takes. Default the
	// number of CPUs Go uses (GOMAXPROCS); see publicauth.Config.PasswordHashConcurrency.
	PasswordHashConcurrency int
	// PasswordHashQueue is how many more logins, registrations or resets may wait for one;
	// beyond it they are answered 503 with Retry-After. Default
	// publicauth.DefaultPasswordHashQueueFactor (16) × PasswordHashConcurrency; negative: none
	// wait.
	PasswordHashQueue int
	// PasswordHasher says who computes the argon2id password hashes:
	// publicauth.PasswordHasherAuto (default: Go's golang.org/x/crypto/argon2; the native
	// AVX2 fill only in a binary built with the build tag gatehouse_native_argon2 whose CPU
	// can run it; New logs which and why), publicauth.PasswordHasherNative (New fails without
	// it) or publicauth.PasswordHasherGo. See publicauth.Config.PasswordHasher.
	PasswordHasher string
}

// RateLimit is a number of attempts allowed per window: publicauth's Rate. The zero value
// takes the default of the field it is in; a negative Limit turns the limit off.
type RateLimit = publicauth.Rate

// Defaults of the limits the provider keeps itself: PublicAuthConfig.TokenErrorLimit,
// AuthorizeIPLimit and AuthorizeClientLimit.
const (
	DefaultTokenErrorLimit      = 100
	DefaultTokenErrorWindow     = time.Minute
	DefaultAuthorizeIPLimit     = 100
	DefaultAuthorizeClientLimit = 1000
	DefaultAuthorizeWindow      = time.Minute
)

// withDefaults returns c with the defaults of the settings publicauth owns taken from auth
// (the same settings after publicauth.Config.WithDefaults) and its own settings defaulted,
// or an error naming every invalid one of them. issuer is the provider's issuer.
func (c PublicAuthConfig) withDefaults(auth publicauth.Config, issuer string) (PublicAuthConfig, error) {
	c.ServiceName = auth.ServiceName
	c.MagicLinkLifespan, c.PINLifespan = auth.MagicLinkLifespan, auth.PINLifespan
	c.VerificationLifespan, c.PasswordResetLifespan = auth.VerificationLifespan, auth.PasswordResetLifespan
	c.MailRetryInterval = auth.MailRetryInterval
	c.PasswordHasher = auth.PasswordHasher
	c.LoginRateLimit, c.AccountMailLimit, c.LockoutLimit = auth.Limits.PerIP, auth.Limits.PerAccount, auth.Limits.Lockout

	var errs []error
	var err error
	if c.TokenErrorLimit, err = c.TokenErrorLimit.WithDefault(RateLimit{Limit: DefaultTokenErrorLimit, Window: DefaultTokenErrorWindow}); err != nil {
		errs = append(errs, fmt.Errorf("TokenErrorLimit.%w", err))
	}
	if c.AuthorizeIPLimit, err = c.AuthorizeIPLimit.WithDefault(RateLimit{Limit: DefaultAuthorizeIPLimit, Window: DefaultAuthorizeWindow}); err != nil {
		errs = append(errs, fmt.Errorf("AuthorizeIPLimit.%w", err))
	}
	if c.AuthorizeClientLimit, err = c.AuthorizeClientLimit.WithDefault(RateLimit{Limit: DefaultAuthorizeClientLimit, Window: DefaultAuthorizeWindow}); err != nil {
		errs = append(errs, fmt.Errorf("AuthorizeClientLimit.%w", err))
	}
	if c.MailFrom == "" && c.SMTPURL == "" {
		host := "localhost"
		if u, err := url.Parse(issuer); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
		c.MailFrom = c.ServiceName + " <no-reply@" + host + ">"
	}
	if c.SMTPURL != "" && c.MailFrom == "" {
		errs = append(errs, errors.New("a mail sender (MailFrom) is required with an SMTP URL"))
	}
	if c.MailFrom != "" {
		if _, err := publicauth.ParseSender(c.MailFrom); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// newLimiter returns the attempt counter every rate limit of the provider uses: the one
// WithLimiter gave, else counts in this process's memory.
func newLimiter(o options) publicauth.Limiter {
	if o.limiter != nil {
		return o.limiter
	}
	return ratelimit.NewMemory(ratelimit.WithClock(o.now))
}

// Limiter counts attempts for the rate limits: publicauth's Limiter, which
// ratelimit.Memory and package ratelimit/redis's Limiter implement.
type Limiter = publicauth.Limiter

// WithLimiter makes every rate limit of the provider (login, registration, mail, PIN, token
// errors) count its attempts in l instead of in this process's memory: a limiter that
// replicas share, such as package ratelimit/redis's, so that a limit holds across them. The
// caller keeps ownership: Close does not close it. A limiter with a method
// Breaker() (ratelimit.BreakerState, uint64), as ratelimit/redis's has, reports its circuit
// breaker in Stats.
func WithLimiter(l Limiter) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("provider: WithLimiter(nil)")
		}
		o.limiter = l
		return nil
	}
}

// newPublicAuth builds the public authentication service of cfg over store and limiter,
// with mail through SMTP when configured, else the log.
func newPublicAuth(cfg Config, store *storage.Store, limiter publicauth.Limiter, counts *opsCounters, o options) (svc *publicauth.Service, err error) {
	pc := cfg.PublicAuth
	mailer := o.mailer
	switch {
	case mailer != nil:
	case pc.SMTPURL != "":
		if mailer, err = publicauth.NewSMTPMailer(pc.SMTPURL, pc.MailFrom); err != nil {
			return nil, fmt.Errorf("provider: mail: %w", err)
		}
	default:
		mailer = publicauth.NewLogMailer(o.logger)
	}
	mailer = traceMailer(o.tracer, countingMailer{next: mailer, counts: counts})
	opts := []publicauth.Option{
		publicauth.WithClock(o.now), publicauth.WithRandom(o.random), publicauth.WithLogger(o.logger),
		publicauth.WithMailer(mailer), publicauth.WithLimiter(limiter), publicauth.WithEvents(o.emitter(store)),
		publicauth.WithAccounts(o.accounts),
	}
	if o.beforeRegister != nil {
		opts = append(opts, publicauth.WithBeforeRegister(o.beforeRegister))
	}
	svc, err = publicauth.New(cfg.publicAuthConfig(), store, opts...)
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	return svc, nil
}

// publicAuthConfig is the configuration of the public authentication service cfg describes.
func (cfg Config) publicAuthConfig() publicauth.Config {
	pc := cfg.PublicAuth
	return publicauth.Config{
		SessionLifespan:         cfg.PublicSessionLifespan,
		AdminSessionLifespan:    cfg.AdminSessionLifespan,
		InsecureCookies:         !secureCookies(cfg.Issuer),
		Secret:                  deriveKey(cfg.Secret, "publicauth"),
		BaseURL:                 cfg.Issuer,
		ServiceName:             pc.ServiceName,
		MailTemplateDir:         pc.MailTemplateDir,
		RequirePIN:              pc.RequirePIN,
		MagicLinkLifespan:       pc.MagicLinkLifespan,
		PINLifespan:             pc.PINLifespan,
		VerificationLifespan:    pc.VerificationLifespan,
		PasswordResetLifespan:   pc.PasswordResetLifespan,
		MagicLinkAllowedOrigins: pc.MagicLinkAllowedOrigins,
		TrustedProxies:          pc.TrustedProxies,
		PasswordHashConcurrency: pc.PasswordHashConcurrency,
		PasswordHashQueue:       pc.PasswordHashQueue,
		PasswordHasher:          pc.PasswordHasher,
		MailRetryInterval:       pc.MailRetryInterval,
		Registration:            cfg.Registration,
		Limits: publicauth.RateLimits{
			PerIP:      pc.LoginRateLimit,
			PerAccount: pc.AccountMailLimit,
			Lockout:    pc.LockoutLimit,
		},
	}
}
