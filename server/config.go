package server

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	// The bundled server keeps SQLite as its default database (provider.DefaultDSN): link
	// the driver, which package storage leaves to the programs that import it.
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
)

// defaultAddr is the default of the one serve setting the provider has no part in. Every
// other flag's default is the exported default of the package that owns the setting.
const defaultAddr = ":8080"

// Config is what serve runs with, resolved from flags, GATEHOUSE_* variables and defaults.
type Config struct {
	// Addr is the TCP address to listen on (--addr, GATEHOUSE_ADDR, default ":8080").
	Addr string
	// Provider configures the provider. Its Secret is empty when no secret was configured;
	// the secret is then read from (or generated into) the file beside a SQLite database,
	// see loadSecret.
	Provider provider.Config
	// LogLevel is the least level logged (--log-level, GATEHOUSE_LOG_LEVEL, default info).
	LogLevel slog.Level
	// DebugAddr, when not empty, is the loopback address where net/http/pprof is served on a
	// listener of its own, apart from the provider (--debug-addr, GATEHOUSE_DEBUG_ADDR,
	// default off). Only a loopback address is accepted: the profiles are unauthenticated.
	DebugAddr string
	// Demo mounts the demo relying party at /demo and makes sure its client exists
	// (--demo, GATEHOUSE_DEMO). When neither is given it is on exactly when neither the
	// issuer nor the DSN was configured: the out-of-the-box local run.
	Demo bool
	// RedisLimits keeps the rate-limit counters in Redis when its URL is set.
	RedisLimits RedisLimits
}

// RedisLimits configures the Redis that the rate limits of every replica share; the server
// gives the provider a limiter of package ratelimit/redis on it (provider.WithLimiter).
type RedisLimits struct {
	// URL, when set ("redis://[user:pass@]host:6379/0" or "rediss://…"; --redis-url,
	// GATEHOUSE_REDIS_URL), keeps the counters in Redis. Default empty: in this process's
	// memory, which is right for a single node.
	URL string
	// CoolDown is how long, after a failure of Redis, the rate limits fail open at once
	// without trying Redis (its circuit breaker is open), before one request probes it
	// again (--redis-cool-down, GATEHOUSE_REDIS_COOL_DOWN, default
	// redis.DefaultCoolDown, 5s); see redis.WithCoolDown.
	CoolDown time.Duration
}

// storeSettings are the settings every subcommand that opens the database shares.
type storeSettings struct {
	dsn, secret *setting
	secretText  string
}

// addStoreFlags registers --dsn and --secret, storing the DSN into *dsn.
func addStoreFlags(c *command, dsn *string) *storeSettings {
	s := &storeSettings{}
	s.dsn = c.stringVar(dsn, "dsn", "DSN", "GATEHOUSE_DSN", provider.DefaultDSN,
		`database: "sqlite:PATH" or "postgres://user:pass@host:5432/db?sslmode=disable"`)
	s.secret = c.secretVar(&s.secretText, "secret", "SECRET", "GATEHOUSE_SECRET",
		"system secret, at least 32 bytes; required with Postgres; with SQLite and none given,\n"+
			"      one is generated once into the file PATH.secret beside the database")
	return s
}

// secretBytes is the configured secret, or nil when none was given.
func (s *storeSettings) secretBytes() []byte {
	if s.secretText == "" {
		return nil
	}
	return []byte(s.secretText)
}

// serveCommand builds the serve command; after a successful parse, resolve fills cfg.
func serveCommand() (c *command, resolve func() (Config, error)) {
	c = newCommand("serve", "gatehouse [serve] [flags]",
		"Runs the OpenID Connect provider over HTTP until SIGINT or SIGTERM, then shuts down\n"+
			"gracefully. Every flag may also be set by the environment variable it names; a flag\n"+
			"wins over its variable, a variable over the default.")
	var cfg Config
	pc := &cfg.Provider
	c.stringVar(&cfg.Addr, "addr", "HOST:PORT", "GATEHOUSE_ADDR", defaultAddr, "address to listen on")
	issuer := c.stringVar(&pc.Issuer, "issuer", "URL", "GATEHOUSE_ISSUER", provider.DefaultIssuer,
		"public base URL of the provider: the iss of every token; its path is where the provider and the demo are served")
	store := addStoreFlags(c, &pc.DSN)
	c.intVar(&pc.DBPool.MaxOpenConns, "db-max-open-conns", "GATEHOUSE_DB_MAX_OPEN_CONNS",
		"database connections open at once; 0: 25 on Postgres, 8 on SQLite")
	c.intVar(&pc.DBPool.MaxIdleConns, "db-max-idle-conns", "GATEHOUSE_DB_MAX_IDLE_CONNS",
		"idle database connections kept for reuse; 0: as many as --db-max-open-conns")
	c.durationVar(&pc.ClientCacheRefresh, "client-cache-refresh", "GATEHOUSE_CLIENT_CACHE_REFRESH", provider.DefaultClientCacheRefresh,
		"longest time a client change made elsewhere (another replica, the CLI) takes to show here; immediate on Postgres; negative turns the client cache off")
	c.add("verified-token-cache-size", "N", "GATEHOUSE_VERIFIED_TOKEN_CACHE_SIZE", strconv.Itoa(provider.DefaultVerifiedTokenCacheSize),
		"access tokens kept verified in memory, so one presented again skips its signature check (revocation and\n"+
			"      expiry are checked every time); negative turns the cache off",
		func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return errors.New("want a whole number")
			}
			pc.VerifiedTokenCacheSize = n
			return nil
		})
	c.durationVar(&pc.AuthorizeCodeLifespan, "auth-code-ttl", "GATEHOUSE_AUTH_CODE_TTL", provider.DefaultAuthorizeCodeLifespan, "authorization code lifetime")
	c.durationVar(&pc.AccessTokenLifespan, "access-token-ttl", "GATEHOUSE_ACCESS_TOKEN_TTL", provider.DefaultAccessTokenLifespan, "access token lifetime")
	c.durationVar(&pc.IDTokenLifespan, "id-token-ttl", "GATEHOUSE_ID_TOKEN_TTL", provider.DefaultIDTokenLifespan, "ID token lifetime")
	c.durationVar(&pc.RefreshTokenLifespan, "refresh-token-ttl", "GATEHOUSE_REFRESH_TOKEN_TTL", provider.DefaultRefreshTokenLifespan, "refresh token lifetime")
	c.durationVar(&pc.PublicSessionLifespan, "public-session-ttl", "GATEHOUSE_PUBLIC_SESSION_TTL", publicauth.DefaultSessionLifespan, "public-session cookie lifetime")
	c.durationVar(&pc.AdminSessionLifespan, "admin-session-ttl", "GATEHOUSE_ADMIN_SESSION_TTL", publicauth.DefaultAdminSessionLifespan, "admin-session cookie lifetime")
	c.durationVar(&pc.Device.CodeLifespan, "device-code-ttl", "GATEHOUSE_DEVICE_CODE_TTL", provider.DefaultDeviceCodeLifespan, "time a device code and its user code work (device authorization grant)")
	c.durationVar(&pc.Device.PollInterval, "device-poll-interval", "GATEHOUSE_DEVICE_POLL_INTERVAL", provider.DefaultDevicePollInterval, "least time a device waits between polls of the token endpoint, whole seconds")
	c.durationVar(&pc.RefreshReuseGrace, "refresh-reuse-grace", "GATEHOUSE_REFRESH_REUSE_GRACE", 0, "time a rotated refresh token may be used once more, for a client whose answer was lost; 0 turns it off")
	c.durationVar(&pc.LoginRequestLifespan, "login-request-ttl", "GATEHOUSE_LOGIN_REQUEST_TTL", provider.DefaultLoginRequestLifespan, "time a user has to log in and consent during an authorization request")
	c.oneOfVar(&pc.AccessTokenAlg, "access-token-alg", "GATEHOUSE_ACCESS_TOKEN_ALG", provider.DefaultAccessTokenAlg,
		[]string{provider.AlgRS256, provider.AlgES256, provider.AlgEdDSA}, "access token signing algorithm: RS256, ES256 or EdDSA")
	c.add("rsa-signer", "auto|go", "GATEHOUSE_RSA_SIGNER", "auto",
		"kept so that existing settings still start: RS256 is signed with Go's crypto/rsa;\n"+
			"      auto and go are accepted and change nothing, openssl is refused",
		checkRSASigner)
	c.boolVar(&pc.AllowConfidentialWithoutPKCE, "allow-confidential-without-pkce", "GATEHOUSE_ALLOW_CONFIDENTIAL_WITHOUT_PKCE", false,
		"let confidential clients omit PKCE (public clients always need it)")
	c.boolVar(&pc.DPoP.RequireNonce, "dpop-require-nonce", "GATEHOUSE_DPOP_REQUIRE_NONCE", false,
		"demand a server nonce (DPoP-Nonce) in every DPoP proof, at the token endpoint and the resource endpoints")
	c.boolVar(&pc.SkipMigrate, "skip-migrate", "GATEHOUSE_SKIP_MIGRATE", false, "do not apply pending migrations at start-up")
	c.durationVar(&pc.JanitorInterval, "janitor-interval", "GATEHOUSE_JANITOR_INTERVAL", provider.DefaultJanitorInterval,
		"how often expired rows are deleted; negative turns it off")
	c.durationVar(&pc.SecurityEventRetention, "security-event-retention", "GATEHOUSE_SECURITY_EVENT_RETENTION", provider.DefaultSecurityEventRetention,
		"how long the audit trail keeps a security event; negative keeps them forever")
	c.boolVar(&pc.TruncateEventIPs, "truncate-event-ips", "GATEHOUSE_TRUNCATE_EVENT_IPS", false,
		"store the client addresses of security events cut to their network (IPv4 /24, IPv6 /48)")
	c.durationVar(&pc.KeyReloadInterval, "key-reload-interval", "GATEHOUSE_KEY_RELOAD_INTERVAL", provider.DefaultKeyReloadInterval,
		"how often signing keys are re-read, to pick up a rotation done elsewhere")
	c.durationVar(&pc.KeyRotationInterval, "key-rotation-interval", "GATEHOUSE_KEY_ROTATION_INTERVAL", provider.DefaultKeyRotationInterval,
		"age at which a signing key is replaced by a new one (exactly one replica rotates); negative turns scheduled rotation off")
	c.stringVar(&pc.TemplateDir, "template-dir", "DIR", "GATEHOUSE_TEMPLATE_DIR", "",
		"directory of *.html files replacing the hosted pages of the same name")
	addRegistrationFlag(c, &pc.Registration)
	addPublicAuthFlags(c, &pc.PublicAuth, &cfg.RedisLimits)
	addSocialFlags(c, &pc.Social)
	addPermissionFlags(c, &pc.Permissions)
	addPARFlags(c, pc)
	addDynamicRegistrationFlags(c, pc)
	addOutboundFlags(c, pc)
	c.add("debug-addr", "HOST:PORT", "GATEHOUSE_DEBUG_ADDR", "",
		"serve net/http/pprof on this loopback address, on a listener of its own (off when empty)",
		func(v string) error {
			if v != "" {
				if err := checkDebugAddr(v); err != nil {
					return err
				}
			}
			cfg.DebugAddr = v
			return nil
		})
	c.levelVar(&cfg.LogLevel, "log-level", "GATEHOUSE_LOG_LEVEL", slog.LevelInfo, "debug, info, warn or error")
	var demo string
	c.add("demo", "", "GATEHOUSE_DEMO", "auto",
		"mount the demo relying party at /demo and make sure its client exists: true, false,\n"+
			"      or auto = on when neither the issuer nor the DSN is configured",
		func(v string) error {
			switch strings.ToLower(v) {
			case "auto", "true", "1", "false", "0":
				demo = strings.ToLower(v)
				return nil
			}
			return errors.New("want true, false or auto")
		})
	resolve = func() (Config, error) {
		cfg.Provider.Issuer = strings.TrimRight(cfg.Provider.Issuer, "/")
		cfg.Provider.Secret = store.secretBytes()
		switch demo {
		case "true", "1":
			cfg.Demo = true
		case "auto":
			cfg.Demo = !issuer.explicit() && !store.dsn.explicit()
		}
		return cfg, nil
	}
	return c, resolve
}

// parseServeConfig parses the serve flags in args against lookupEnv.
func parseServeConfig(args []string, lookupEnv func(string) (string, bool)) (*command, Config, error) {
	c, resolve := serveCommand()
	if err := c.parse(args, lookupEnv); err != nil {
		return c, Config{}, err
	}
	cfg, err := resolve()
	return c, cfg, err
}

// checkRSASigner accepts the values --rsa-signer took when it chose between OpenSSL and Go's
// crypto/rsa, so that a deployment's settings still start: auto and go now mean crypto/rsa,
// which signs every RS256 signature; openssl, which the server no longer links, is refused
// with the way to sign elsewhere.
func checkRSASigner(v string) error {
	switch strings.ToLower(v) {
	case "auto", "go":
		return nil
	case "openssl":
		return errors.New("OpenSSL is no longer linked: RS256 is signed with Go's crypto/rsa (remove the setting); " +
			"to sign with OpenSSL, a KMS or an HSM, embed the provider and pass provider.WithSigner")
	}
	return errors.New("want auto or go")
}
