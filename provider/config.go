package provider

import (
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/internal/mountpath"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/ui"
)

// ContentSecurityPolicy holds the sources Config.ContentSecurityPolicy adds to the hosted
// pages' policy, one field per directive (StyleSrc, ImgSrc, FontSrc, ScriptSrc,
// ConnectSrc); see ui.ContentSecurityPolicy.
type ContentSecurityPolicy = ui.ContentSecurityPolicy

// Config is the data that configures a Provider. The zero value of every field but Secret
// has a working default, stated on the field; New validates the whole struct at once.
type Config struct {
	// Issuer is the public base URL of the provider: the `iss` of every token and the prefix
	// of every endpoint in discovery. Its path is the mount point: every route, hosted page,
	// redirect, mailed link, social callback and cookie Path lies under it. With the issuer
	// https://acme.example/auth the provider serves /auth/.well-known/openid-configuration
	// (OpenID Connect Discovery §4), /auth/api/oauth/authorize, /auth/login and so on, and
	// answers a request outside /auth/ with the JSON 404. Mount it with the path as
	// requested, mux.Handle("/auth/", p), not behind http.StripPrefix: a request whose
	// prefix was stripped is outside the mount point and gets the 404 too. The path must be
	// plain: segments of letters, digits and "-._~" (no percent-encoding, no "." or ".."
	// segment). The __Host- CSRF cookie of an https issuer keeps Path=/, which its prefix
	// requires. A trailing slash is dropped. Default DefaultIssuer (at the root).
	Issuer string
	// DSN selects the database: "sqlite:PATH" or "postgres://…". Default DefaultDSN.
	// SQLite needs its driver linked into the program with
	// import _ "github.com/gatehouse-id/gatehouse/storage/sqlite" (the bundled server does);
	// without it New fails with an error naming that import. Ignored when WithStore is given:
	// a store made with storage.FromGorm or storage.FromDB shares the embedder's own pool,
	// with storage.WithTablePrefix keeping Gatehouse's tables apart.
	DSN string
	// DBPool limits the connection pool New opens for DSN; a zero field keeps its default
	// (see storage.Pool: 25 open connections on Postgres, 8 on SQLite). Ignored when
	// WithStore is given.
	DBPool storage.Pool
	// ClientCacheRefresh bounds how long a client is served from the in-process client
	// cache before it is read from the database again, so that a change made on another
	// replica or with the admin CLI takes effect here within it (on Postgres at once: the
	// provider listens for the notification every client write sends). Changes made through
	// this provider take effect at once. 0 means DefaultClientCacheRefresh; negative turns
	// the cache off. Ignored when WithStore is given: the store's own
	// storage.WithClientCacheRefresh applies.
	ClientCacheRefresh time.Duration
	// VerifiedTokenCacheSize bounds the in-process cache of verified access tokens: a token
	// presented again, byte for byte, to introspection, userinfo, the permission routes,
	// VerifyAccessToken or VerifyRequest skips the JWT parse and the signature check, most
	// of what verifying it costs. Expiry, that its signing key is still published, and
	// revocation (one query, so a revocation on any replica takes effect at once) are
	// checked on every request all the same, and only accepted tokens are cached. A token
	// takes about 1.4 KB (the default's 4096, about 5.5 MB); a hit adds a copy of it (about
	// 2 µs) so a caller cannot change what the next one gets. 0 means
	// DefaultVerifiedTokenCacheSize; negative turns the cache off.
	VerifiedTokenCacheSize int
	// Secret is the system secret (at least 32 bytes). Client secrets are keyed-hashed
	// and signing keys encrypted under keys derived from it. Required.
	Secret []byte

	// AuthorizeCodeLifespan: default DefaultAuthorizeCodeLifespan (10 minutes).
	AuthorizeCodeLifespan time.Duration
	// AccessTokenLifespan: default DefaultAccessTokenLifespan (1 hour).
	AccessTokenLifespan time.Duration
	// IDTokenLifespan: default DefaultIDTokenLifespan (1 hour).
	IDTokenLifespan time.Duration
	// RefreshTokenLifespan: default DefaultRefreshTokenLifespan (30 days).
	RefreshTokenLifespan time.Duration
	// RefreshReuseGrace lets a rotated refresh token be used once more for this long after
	// its rotation, so a client whose answer was lost on the way (a mobile network dropping
	// the response) can retry instead of having its whole grant revoked as reuse. Its first
	// successor is then deactivated; a second use, or one after the window, revokes the
	// grant as before. Default 0: off, every reuse revokes the grant (RFC 9700 §4.14.2);
	// 30 seconds is a common setting.
	RefreshReuseGrace time.Duration
	// PublicSessionLifespan is how long a `public-session` lasts: default
	// publicauth.DefaultSessionLifespan (7 days), whose rules it follows.
	PublicSessionLifespan time.Duration
	// AdminSessionLifespan is how long an `admin-session` lasts: default
	// publicauth.DefaultAdminSessionLifespan (8 hours), whose rules it follows.
	AdminSessionLifespan time.Duration
	// LoginRequestLifespan is how long a user has to log in and consent once an
	// authorization request has been paused for it: default DefaultLoginRequestLifespan
	// (30 minutes).
	LoginRequestLifespan time.Duration

	// Device configures the device authorization grant (RFC 8628): its codes' lifespan and
	// polling interval. Its zero value takes the defaults of DeviceConfig.
	Device DeviceConfig

	// AccessTokenAlg is the JWS algorithm of access tokens: AlgES256 (default: an ECDSA
	// P-256 signature costs a fraction of an RSA one), AlgRS256 or AlgEdDSA (Ed25519, RFC
	// 8037: the fastest to sign and verify; check that your resource servers' JWT library
	// accepts OKP keys before choosing it).
	AccessTokenAlg string
	// AllowConfidentialWithoutPKCE relaxes the PKCE requirement for confidential clients.
	// Default false: every authorization request must carry an S256 code_challenge.
	AllowConfidentialWithoutPKCE bool
	// RequirePAR makes every client push its authorization requests (RFC 9126): the
	// authorization endpoint answers invalid_request to a request without a request_uri
	// from /api/oauth/par, and discovery says require_pushed_authorization_requests.
	// Default false: only clients registered with ClientSpec.RequirePAR must push.
	RequirePAR bool
	// OpenRegistration lets anyone register a client at /api/oauth/register (RFC 7591)
	// without an initial access token; such clients are never first-party, so their users
	// always see the consent page. Default false: registration needs an initial access token
	// an admin issued (CreateRegistrationToken).
	OpenRegistration bool
	// InsecureAllowPrivateClientURLs lets dynamically registered clients (RFC 7591) name
	// URLs Gatehouse requests — jwks_uri and backchannel_logout_uri — on loopback, private
	// and link-local addresses (and http on a loopback host, as clients an admin creates
	// may), and makes Gatehouse's requests to those clients' URLs connect to such
	// addresses. For development only: with it on, anyone who may register a client can
	// make the server send requests into its own network (server-side request forgery).
	// Default false: a registered client's URLs must be https on a public address, and every
	// request to them refuses internal addresses (package internal/outbound). Clients an
	// admin created (CreateClient, the CLI) are trusted with any address either way.
	InsecureAllowPrivateClientURLs bool
	// AllowRegisteredClientCredentials lets clients that register themselves at
	// /api/oauth/register (RFC 7591, with or without an initial access token) register the
	// client_credentials grant. Default false: such a registration, or an RFC 7592 update
	// adding the grant, is refused with invalid_client_metadata, because a
	// client_credentials token speaks for the client alone, no user consents to it, and
	// RequireScopes lets it through with any scope the client holds. Clients an operator
	// creates (CreateClient, the CLI) may always have the grant.
	AllowRegisteredClientCredentials bool
	// SkipMigrate leaves the database schema alone at start-up (run `migrate` yourself).
	// Default false: pending migrations are applied by New.
	SkipMigrate bool
	// JanitorInterval is how often expired rows are deleted: default DefaultJanitorInterval
	// (10 minutes); a negative value turns the janitor off.
	JanitorInterval time.Duration
	// SecurityEventRetention is how long the audit trail (security_events, see
	// README "Audit trail") keeps an event before the janitor deletes it: default
	// DefaultSecurityEventRetention (365 days); a negative value keeps events forever.
	SecurityEventRetention time.Duration
	// TruncateEventIPs stores the client address of each security event cut to its
	// network (an IPv4 /24, an IPv6 /48) instead of whole. Default false: an operator
	// investigating an attack needs the exact address (to block it, to match an abuse
	// report), and SecurityEventRetention already bounds how long it is kept; turn it on
	// where data minimisation outweighs that (the network still shows a region or provider).
	TruncateEventIPs bool
	// KeyReloadInterval is how often the key set is re-read from the database, so a key
	// rotated on another replica is published here too: default DefaultKeyReloadInterval
	// (1 minute). A rotated key
	// starts signing one and a half intervals after the rotation, once every replica
	// publishes it.
	KeyReloadInterval time.Duration
	// KeyRotationInterval is how old a signing key grows before the provider replaces it
	// with a new one of the same algorithm: default DefaultKeyRotationInterval (30 days); a
	// negative value turns scheduled rotation off (`keys rotate` and RotateKeys still
	// rotate by hand). The new key is published at once and signs one and a half
	// KeyReloadIntervals later, when every replica publishes it; the old key stays in the
	// JWKS until everything it signed has expired: two KeyReloadIntervals plus the longer
	// of AccessTokenLifespan and IDTokenLifespan plus five minutes after the rotation.
	// Replicas sharing the database check every KeyReloadInterval and at start; the
	// database lets exactly one of them rotate each key. When positive it must exceed the
	// activation delay, so that every key signs before it is replaced.
	KeyRotationInterval time.Duration
	// TemplateDir, when set, holds *.html files that replace the embedded hosted pages of
	// the same name: layout.html, login.html, register.html, consent.html, pin.html,
	// forgot_password.html, reset_password.html, confirm_password.html, magic_login.html, notice.html,
	// signed_in.html, logged_out.html, error.html, and style.css. Each page is rendered from
	// the view struct package ui documents for it. Default "": the embedded pages only. It is
	// read as os.DirFS(TemplateDir), exactly like TemplateFS; set at most one of the two.
	TemplateDir string
	// TemplateFS, when set, holds the replacement pages TemplateDir would, at its root (use
	// fs.Sub for an embed.FS subdirectory), by the same rules. Default nil: the embedded
	// pages only. Setting both TemplateDir and TemplateFS is a configuration error.
	TemplateFS fs.FS
	// ContentSecurityPolicy adds sources, per directive, to the hosted pages' policy (for
	// example a company stylesheet's origin in StyleSrc); they are appended to ours, which
	// keeps frame-ancestors 'none'. A source must be an https origin, 'self' or a
	// 'sha256-…' hash; 'unsafe-inline', 'unsafe-eval' and anything else make New fail.
	// Default: the zero value, nothing added.
	ContentSecurityPolicy ContentSecurityPolicy

	// PublicAuth configures mail, the PIN gate, magic links, password reset and rate limits;
	// its defaults are stated on its fields.
	PublicAuth PublicAuthConfig
	// Permissions configures the per-application permission routes; its zero value is the
	// default.
	Permissions PermissionsConfig
	// Social configures login through Google, Facebook and upstream OpenID Connect providers.
	// Default: none of them.
	Social SocialConfig
	// Registration says who may create an account: RegistrationOpen (anyone; the default),
	// RegistrationClosed (nobody: POST /api/public/register and the hosted registration
	// page answer 403 Forbidden, the login page offers no registration, and a social login
	// creates no account but still links to an existing one by verified email) or
	// RegistrationHook (the WithBeforeRegister hook decides). See publicauth.Config.
	Registration RegistrationMode
	// DPoP configures proof-of-possession tokens (RFC 9449): server nonces, the proof
	// window and algorithms. Its zero value is the default.
	DPoP DPoPConfig

	// BackchannelLogout configures the delivery of logout tokens to clients that registered a
	// back-channel logout URI; its defaults are stated on its fields (backchannel.go).
	BackchannelLogout BackchannelLogoutConfig

	// Scopes declares custom scopes (e.g. {Name: "orders.read", Description: "Read your
	// orders"}): listed in discovery's scopes_supported, described on the consent page,
	// and granted like any scope a client is registered with. Default: none.
	Scopes []Scope
}

// Option supplies a collaborator to New.
type Option func(*options) error

type options struct {
	now    func() time.Time
	random io.Reader
	logger *slog.Logger
	store  *storage.Store
	mailer publicauth.Mailer
	events events.Sink          // WithEvents
	tracer trace.TracerProvider // WithTracerProvider; nil: no tracing
	// keySource is WithSigner's; nil: every key is the database's.
	keySource KeySource
	// limiter is WithLimiter's; nil: counts in memory.
	limiter Limiter
	accountOptions
}

// WithClock makes the provider read time from now (tests); nil means the real clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) error { o.now = now; return nil }
}

// WithRandom makes the provider draw randomness from r (tests); nil means crypto/rand.
func WithRandom(r io.Reader) Option {
	return func(o *options) error { o.random = r; return nil }
}

// WithMailer makes the provider send its mail (verification and magic links, PINs,
// password resets) through m instead of the mailer PublicAuthConfig selects. The mail
// outbox sits in front of it: m is called by the delivery worker, retried while it fails.
func WithMailer(m publicauth.Mailer) Option {
	return func(o *options) error { o.mailer = m; return nil }
}

// WithLogger sets the logger; nil means slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error { o.logger = l; return nil }
}

// WithStore makes the provider use an already opened store instead of opening Config.DSN,
// for example one made by storage.FromGorm on the embedder's own pool with
// storage.WithTablePrefix. New still migrates it unless Config.SkipMigrate. The caller
// keeps ownership: Close does not close it.
func WithStore(s *storage.Store) Option {
	return func(o *options) error {
		if s == nil {
			return errors.New("provider: WithStore(nil)")
		}
		o.store = s
		return nil
	}
}

// Defaults of Config. The defaults of the settings package publicauth owns are its own
// (publicauth.DefaultSessionLifespan and the rest).
const (
	DefaultIssuer                = "http://localhost:8080"
	DefaultDSN                   = "sqlite:./gatehouse.db"
	DefaultAuthorizeCodeLifespan = 10 * time.Minute
	DefaultAccessTokenLifespan   = time.Hour
	DefaultIDTokenLifespan       = time.Hour
	DefaultRefreshTokenLifespan  = 30 * 24 * time.Hour
	DefaultLoginRequestLifespan  = 30 * time.Minute
	DefaultAccessTokenAlg        = AlgES256
	DefaultJanitorInterval       = 10 * time.Minute
	DefaultClientCacheRefresh    = storage.DefaultClientCacheRefresh
	DefaultKeyReloadInterval     = time.Minute
	DefaultKeyRotationInterval   = 30 * 24 * time.Hour
	// DefaultSecurityEventRetention is the default of Config.SecurityEventRetention.
	DefaultSecurityEventRetention = 365 * 24 * time.Hour
	// DefaultVerifiedTokenCacheSize is the default of Config.VerifiedTokenCacheSize.
	DefaultVerifiedTokenCacheSize = 4096
)

// withDefaults returns cfg with every zero field set to its documented default, or an error
// naming every invalid field.
func (cfg Config) withDefaults() (Config, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if cfg.Issuer == "" {
		cfg.Issuer = DefaultIssuer
	}
	cfg.Issuer = strings.TrimRight(cfg.Issuer, "/")
	if cfg.DSN == "" {
		cfg.DSN = DefaultDSN
	}
	def(&cfg.AuthorizeCodeLifespan, DefaultAuthorizeCodeLifespan)
	def(&cfg.AccessTokenLifespan, DefaultAccessTokenLifespan)
	def(&cfg.IDTokenLifespan, DefaultIDTokenLifespan)
	def(&cfg.RefreshTokenLifespan, DefaultRefreshTokenLifespan)
	def(&cfg.LoginRequestLifespan, DefaultLoginRequestLifespan)
	def(&cfg.JanitorInterval, DefaultJanitorInterval)
	def(&cfg.KeyReloadInterval, DefaultKeyReloadInterval)
	def(&cfg.KeyRotationInterval, DefaultKeyRotationInterval)
	def(&cfg.SecurityEventRetention, DefaultSecurityEventRetention)
	if cfg.AccessTokenAlg == "" {
		cfg.AccessTokenAlg = DefaultAccessTokenAlg
	}
	if cfg.VerifiedTokenCacheSize == 0 {
		cfg.VerifiedTokenCacheSize = DefaultVerifiedTokenCacheSize
	}

	var errs []error
	if u, err := url.Parse(cfg.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("issuer %q must be an absolute http(s) URL without query or fragment", cfg.Issuer))
	} else if _, err := mountpath.Of(cfg.Issuer); err != nil {
		errs = append(errs, err)
	}
	if len(cfg.Secret) < 32 {
		errs = append(errs, errors.New("secret must be at least 32 bytes"))
	}
	if !slices.Contains(supportedAlgs, cfg.AccessTokenAlg) {
		errs = append(errs, fmt.Errorf("access token algorithm %q is not RS256, ES256 or EdDSA", cfg.AccessTokenAlg))
	}
	if cfg.KeyRotationInterval > 0 && cfg.KeyRotationInterval <= keyActivation(cfg) {
		errs = append(errs, fmt.Errorf("key rotation interval %v must exceed the key activation delay %v (one and a half key reload intervals)",
			cfg.KeyRotationInterval, keyActivation(cfg)))
	}
	for name, d := range map[string]time.Duration{
		"authorize code lifespan": cfg.AuthorizeCodeLifespan, "access token lifespan": cfg.AccessTokenLifespan,
		"id token lifespan": cfg.IDTokenLifespan, "refresh token lifespan": cfg.RefreshTokenLifespan,
		"login request lifespan": cfg.LoginRequestLifespan, "refresh reuse grace": cfg.RefreshReuseGrace, "key reload interval": cfg.KeyReloadInterval,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	var deviceErr error
	if cfg.Device, deviceErr = cfg.Device.withDefaults(); deviceErr != nil {
		errs = append(errs, deviceErr)
	}
	// publicauth owns the defaults and rules of the settings it is configured with.
	auth, err := cfg.publicAuthConfig().WithDefaults()
	if err != nil {
		errs = append(errs, fmt.Errorf("public authentication: %w", err))
	}
	cfg.PublicSessionLifespan, cfg.AdminSessionLifespan = auth.SessionLifespan, auth.AdminSessionLifespan
	if cfg.PublicAuth, err = cfg.PublicAuth.withDefaults(auth, cfg.Issuer); err != nil {
		errs = append(errs, err)
	}
	if err := cfg.Social.validate(); err != nil {
		errs = append(errs, err)
	}
	if cfg.TemplateDir != "" && cfg.TemplateFS != nil {
		errs = append(errs, errors.New("template dir and template FS are both set; set one"))
	}
	if err := cfg.ContentSecurityPolicy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("content security policy: %w", err))
	}
	if cfg.BackchannelLogout, err = cfg.BackchannelLogout.withDefaults(); err != nil {
		errs = append(errs, err)
	}
	if err := validateScopes(cfg.Scopes); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, fmt.Errorf("provider: invalid config: %w", err)
	}
	return cfg, nil
}

// JWS algorithms the provider signs with (RFC 7518 §3.1, RFC 8037 §3.1).
const (
	AlgRS256 = "RS256"
	AlgES256 = "ES256"
	// AlgEdDSA is EdDSA with Ed25519 keys, published as OKP keys (crv Ed25519).
	AlgEdDSA = "EdDSA"
)
