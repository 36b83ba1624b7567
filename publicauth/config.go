package publicauth

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/argon2id"
	"github.com/gatehouse-id/gatehouse/internal/mountpath"
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
	// Secret is the system secret, at least 32 bytes. The session cookies' HMAC keys and the
	// PIN hashing key are derived from it with HKDF-SHA-256 (RFC 5869), one key per use; it
	// is never used as a key itself. Required.
	Secret []byte

	// BaseURL is the absolute http(s) URL the links in mail point to:
	// BaseURL+"/api/public/verify-email?token=…", BaseURL+"/api/public/magic-login?token=…"
	// and the hosted reset form BaseURL+"/reset-password?token=…". Its path is where the
	// service is mounted (package internal/mountpath): the session cookies' Path is that
	// path plus "/", and an internal path a login resumes (Destination.Resume) must lie
	// under it. The path must be plain (mountpath.Of); a trailing slash is dropped. Default
	// "http://localhost:8080".
	BaseURL string
	// ServiceName names the deployment in mail subjects and greetings: default "Gatehouse".
	ServiceName string
	// MailTemplateDir is a directory whose templates override the built-in mail templates;
	// default "" (built-in templates only).
	MailTemplateDir string
	// RequirePIN turns the PIN gate on for every user (the deployment switch); default false:
	// only users whose User.RequirePIN is set are asked for a PIN.
	RequirePIN bool
	// MagicLinkLifespan is how long a magic link works: default 15 minutes.
	MagicLinkLifespan time.Duration
	// PINLifespan is how long a mailed PIN works: default 10 minutes.
	PINLifespan time.Duration
	// VerificationLifespan is how long an email verification link works: default 24 hours.
	VerificationLifespan time.Duration
	// PasswordResetLifespan is how long a password reset link works, and a link that
	// confirms adding a password to a social-only account: default 1 hour.
	PasswordResetLifespan time.Duration
	// MagicLinkAllowedOrigins lists origins (http(s)://host[:port], at most a trailing slash,
	// compared case-insensitively) whose URLs a magic link may redirect to besides the
	// registered redirect URIs of the clients. Default none.
	MagicLinkAllowedOrigins []string
	// TrustedProxies lists the networks of reverse proxies whose forwarding header names
	// the client's address for the per-IP limits. Default none: the connection's address.
	TrustedProxies []netip.Prefix
	// Limits are the rate limits and the login lockout; see RateLimits for defaults.
	Limits RateLimits
	// PasswordHashConcurrency is how many argon2id hashes or verifications (about 7 MiB
	// each) run at once; it bounds the memory a burst of logins takes. Hashing is CPU-bound,
	// so more than the CPUs buys no throughput. Default runtime.GOMAXPROCS(0).
	PasswordHashConcurrency int
	// PasswordHashQueue is how many more may wait for a free slot; beyond that a login,
	// registration or reset is refused with ErrBusy (503 with Retry-After). A waiting
	// request holds a few KiB, not a hash's memory, so the queue absorbs ordinary bursts,
	// while its length caps the wait at about PasswordHashQueue / PasswordHashConcurrency
	// hash durations (16 × ~50 ms by default). Default 16 × PasswordHashConcurrency; a
	// negative value means none may wait.
	PasswordHashQueue int
	// PasswordHasher says who computes argon2id: PasswordHasherAuto (default: Go's
	// golang.org/x/crypto/argon2, unless the binary was built with the build tag
	// gatehouse_native_argon2, with cgo, on Linux amd64, the CPU has AVX2 and the native
	// fill passes a self-test; New logs which and why), PasswordHasherNative (New fails
	// unless the native fill is compiled in and runs here) or PasswordHasherGo. The native
	// fill is hand-written C, opt-in for that reason; it takes well under half the CPU and
	// leaves no garbage (it keeps up to PasswordHashConcurrency hashes' memory for reuse,
	// until 5 s after the last hash); both compute the same hashes, so the choice can change
	// at any time. See package internal/argon2id.
	PasswordHasher string
	// MailRetryInterval is how often this service's mail worker looks for mail in the
	// outbox due for another attempt (a mail is tried at once when queued; after a failure
	// again 5 seconds later, the wait doubling up to 5 minutes, until its link or PIN
	// expires): default DefaultMailRetryInterval (5 seconds). Negative: this service sends
	// no mail, another replica's worker does (it still queues mail).
	MailRetryInterval time.Duration
	// Registration says who may create an account: RegistrationOpen (anyone; the default),
	// RegistrationClosed (nobody: 403, and a social login creates no account) or
	// RegistrationHook (the hook given with WithBeforeRegister decides; New fails without
	// one).
	Registration RegistrationMode
}

// RateLimits configures the attempt limits. A zero Rate takes the default stated on its
// field; a Rate with a negative Limit turns that limit off.
type RateLimits struct {
	// PerIP limits the requests of one client IP to one endpoint (login, register, magic
	// link, PIN, password reset, verification): default 100 per minute.
	PerIP Rate
	// PerAccount limits the mails sent to one account by one endpoint (magic link, password
	// reset, verification, PIN, password linking): default 5 per 15 minutes. Over it,
	// endpoints that answer the same whatever the account send nothing and still succeed; a
	// PIN login and a registration that would mail a password linking link answer 429.
	PerAccount Rate
	// Lockout limits failed logins per account (keyed on the email's EmailKey, whether or
	// not an account has it): default 10 per 15 minutes. The next login, even with the right
	// password, answers 429 until the window ends.
	Lockout Rate
	// PINAttempts is how many PINs may be tried per challenge: default 5. The last wrong one
	// ends the challenge.
	PINAttempts int
}

// Defaults of Config.
const (
	DefaultSessionLifespan      = 7 * 24 * time.Hour
	DefaultAdminSessionLifespan = 8 * time.Hour
	// MinSecretLen is the least length of Config.Secret in bytes.
	MinSecretLen = 32

	DefaultBaseURL               = "http://localhost:8080"
	DefaultServiceName           = "Gatehouse"
	DefaultMagicLinkLifespan     = 15 * time.Minute
	DefaultPINLifespan           = 10 * time.Minute
	DefaultVerificationLifespan  = 24 * time.Hour
	DefaultPasswordResetLifespan = time.Hour
	DefaultPINAttempts           = 5
	// DefaultPasswordHashQueueFactor times Config.PasswordHashConcurrency is the default
	// Config.PasswordHashQueue.
	DefaultPasswordHashQueueFactor = 16
	// DefaultPasswordHasher is Config.PasswordHasher's default.
	DefaultPasswordHasher = PasswordHasherAuto
)

// Values of Config.PasswordHasher.
const (
	PasswordHasherAuto   = string(argon2id.Auto)
	PasswordHasherNative = string(argon2id.Native)
	PasswordHasherGo     = string(argon2id.Go)
)

// Default rates of RateLimits.
const (
	DefaultPerIPLimit       = 100
	DefaultPerIPWindow      = time.Minute
	DefaultPerAccountLimit  = 5
	DefaultPerAccountWindow = 15 * time.Minute
	DefaultLockoutLimit     = 10
	DefaultLockoutWindow    = 15 * time.Minute
)

// WithDefaults returns c with every zero field set to the default stated on it, or an
// error naming every invalid field. New applies it; a caller that embeds these settings
// in its own configuration (package provider) validates them early with it.
func (c Config) WithDefaults() (Config, error) {
	c, _, errs := c.withDefaults()
	return c, errors.Join(errs...)
}

// WithDefault returns r, or def when r is the zero Rate. A Rate with a positive Limit needs
// a positive Window, and a zero Limit is refused: it would refuse every attempt, while a
// negative one turns the limit off. The error names the invalid field of r.
func (r Rate) WithDefault(def Rate) (Rate, error) {
	switch {
	case r == Rate{}:
		return def, nil
	case r.Limit > 0 && r.Window <= 0:
		return r, fmt.Errorf("Window must be positive when its Limit is, got %s", r.Window)
	case r.Limit == 0:
		return r, errors.New("Limit must be positive, or negative to turn it off")
	}
	return r, nil
}

// withDefaults returns c with every zero field set to its default, the allowed origins as
// a set, and one error per invalid field.
func (c Config) withDefaults() (Config, map[string]bool, []error) {
	var errs []error
	if len(c.Secret) < MinSecretLen {
		errs = append(errs, fmt.Errorf("Secret must be at least %d bytes, got %d", MinSecretLen, len(c.Secret)))
	}
	for _, d := range []struct {
		name  string
		value *time.Duration
		def   time.Duration
	}{
		{"SessionLifespan", &c.SessionLifespan, DefaultSessionLifespan},
		{"AdminSessionLifespan", &c.AdminSessionLifespan, DefaultAdminSessionLifespan},
		{"MagicLinkLifespan", &c.MagicLinkLifespan, DefaultMagicLinkLifespan},
		{"PINLifespan", &c.PINLifespan, DefaultPINLifespan},
		{"VerificationLifespan", &c.VerificationLifespan, DefaultVerificationLifespan},
		{"PasswordResetLifespan", &c.PasswordResetLifespan, DefaultPasswordResetLifespan},
	} {
		switch {
		case *d.value < 0:
			errs = append(errs, fmt.Errorf("%s must not be negative, got %s", d.name, *d.value))
		case *d.value == 0:
			*d.value = d.def
		}
	}
	if c.MailRetryInterval == 0 {
		c.MailRetryInterval = DefaultMailRetryInterval
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if base, err := url.Parse(c.BaseURL); err != nil || (base.Scheme != "http" && base.Scheme != "https") ||
		base.Host == "" || base.RawQuery != "" || base.Fragment != "" || base.User != nil {
		errs = append(errs, fmt.Errorf("BaseURL must be an absolute http(s) URL without query, got %q", c.BaseURL))
	} else if _, err := mountpath.Of(c.BaseURL); err != nil {
		errs = append(errs, fmt.Errorf("BaseURL: %w", err))
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.ServiceName == "" {
		c.ServiceName = DefaultServiceName
	}
	origins := map[string]bool{}
	for _, o := range c.MagicLinkAllowedOrigins {
		origin, ok := parseOrigin(o)
		if !ok {
			errs = append(errs, fmt.Errorf("MagicLinkAllowedOrigins: %q is not an origin scheme://host[:port]", o))
			continue
		}
		origins[origin] = true
	}
	for _, r := range []struct {
		name string
		rate *Rate
		def  Rate
	}{
		{"Limits.PerIP", &c.Limits.PerIP, Rate{Limit: DefaultPerIPLimit, Window: DefaultPerIPWindow}},
		{"Limits.PerAccount", &c.Limits.PerAccount, Rate{Limit: DefaultPerAccountLimit, Window: DefaultPerAccountWindow}},
		{"Limits.Lockout", &c.Limits.Lockout, Rate{Limit: DefaultLockoutLimit, Window: DefaultLockoutWindow}},
	} {
		rate, err := r.rate.WithDefault(r.def)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", r.name, err))
		}
		*r.rate = rate
	}
	switch {
	case c.Limits.PINAttempts < 0:
		errs = append(errs, fmt.Errorf("Limits.PINAttempts must not be negative, got %d", c.Limits.PINAttempts))
	case c.Limits.PINAttempts == 0:
		c.Limits.PINAttempts = DefaultPINAttempts
	}
	switch {
	case c.PasswordHashConcurrency < 0:
		errs = append(errs, fmt.Errorf("PasswordHashConcurrency must not be negative, got %d", c.PasswordHashConcurrency))
	case c.PasswordHashConcurrency == 0:
		c.PasswordHashConcurrency = runtime.GOMAXPROCS(0)
	}
	switch c.PasswordHasher {
	case "":
		c.PasswordHasher = DefaultPasswordHasher
	case PasswordHasherAuto, PasswordHasherNative, PasswordHasherGo:
	default:
		errs = append(errs, fmt.Errorf("PasswordHasher must be %q, %q or %q, got %q",
			PasswordHasherAuto, PasswordHasherNative, PasswordHasherGo, c.PasswordHasher))
	}
	switch c.Registration {
	case "":
		c.Registration = RegistrationOpen
	case RegistrationOpen, RegistrationClosed, RegistrationHook:
	default:
		errs = append(errs, fmt.Errorf("Registration must be %q, %q or %q, got %q",
			RegistrationOpen, RegistrationClosed, RegistrationHook, c.Registration))
	}
	switch {
	case c.PasswordHashQueue < 0:
		c.PasswordHashQueue = 0
	case c.PasswordHashQueue == 0:
		c.PasswordHashQueue = DefaultPasswordHashQueueFactor * c.PasswordHashConcurrency
	}
	return c, origins, errs
}

// parseOrigin is the one rule of an allowed origin: scheme://host[:port] of http or https,
// with at most one trailing slash and nothing else. It returns the origin lower-cased.
func parseOrigin(raw string) (string, bool) {
	origin, ok := originOf(raw)
	return origin, ok && origin == strings.ToLower(strings.TrimSuffix(raw, "/"))
}

// originOf returns the lower-cased origin scheme://host[:port] of an absolute http(s) URL,
// or false for anything else.
func originOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}
