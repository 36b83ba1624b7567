package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	redislimit "github.com/gatehouse-id/gatehouse/ratelimit/redis"
)

// addRegistrationFlag registers --registration: open or closed. The third mode, hook,
// needs a Go function (provider.WithBeforeRegister), so only an embedder can choose it.
func addRegistrationFlag(c *command, mode *provider.RegistrationMode) {
	c.add("registration", "open|closed", "GATEHOUSE_REGISTRATION", string(provider.RegistrationOpen),
		"who may create an account: open (anyone) or closed (nobody: registration answers 403,\n"+
			"      the login page offers none, social login creates no account)",
		func(v string) error {
			switch m := provider.RegistrationMode(v); m {
			case provider.RegistrationOpen, provider.RegistrationClosed:
				*mode = m
				return nil
			}
			return errors.New("want open or closed")
		})
}

// addPublicAuthFlags registers the serve flags of the mail, PIN gate, magic link and rate
// limit settings; the Redis ones go to rl, which the server turns into the provider's
// limiter.
func addPublicAuthFlags(c *command, cfg *provider.PublicAuthConfig, rl *RedisLimits) {
	c.stringVar(&cfg.SMTPURL, "smtp-url", "URL", "GATEHOUSE_SMTP_URL", "",
		"mail server: smtp://[user:pass@]host:port (STARTTLS when offered) or smtps://… (implicit\n"+
			"      TLS); empty: mail is written to the log instead of sent")
	c.stringVar(&cfg.MailFrom, "mail-from", "ADDRESS", "GATEHOUSE_MAIL_FROM", "",
		`sender of every mail, "Name <address>"; required with --smtp-url`)
	c.stringVar(&cfg.ServiceName, "service-name", "NAME", "GATEHOUSE_SERVICE_NAME", publicauth.DefaultServiceName,
		"name of the deployment in mail subjects and greetings")
	c.stringVar(&cfg.MailTemplateDir, "mail-template-dir", "DIR", "GATEHOUSE_MAIL_TEMPLATE_DIR", "",
		"directory of mail templates replacing the embedded ones of the same name")
	c.boolVar(&cfg.RequirePIN, "require-pin", "GATEHOUSE_REQUIRE_PIN", false,
		"ask every user for a PIN sent by mail after a password or magic-link login")
	c.durationVar(&cfg.MagicLinkLifespan, "magic-link-ttl", "GATEHOUSE_MAGIC_LINK_TTL", publicauth.DefaultMagicLinkLifespan, "magic link lifetime")
	c.durationVar(&cfg.PINLifespan, "pin-ttl", "GATEHOUSE_PIN_TTL", publicauth.DefaultPINLifespan, "lifetime of a mailed PIN")
	c.durationVar(&cfg.VerificationLifespan, "verification-ttl", "GATEHOUSE_VERIFICATION_TTL", publicauth.DefaultVerificationLifespan,
		"email verification link lifetime")
	c.durationVar(&cfg.PasswordResetLifespan, "password-reset-ttl", "GATEHOUSE_PASSWORD_RESET_TTL", publicauth.DefaultPasswordResetLifespan,
		"lifetime of a password reset link, and of a link confirming a password added to a\n"+
			"      social-only account")
	c.add("magic-link-origins", "ORIGINS", "GATEHOUSE_MAGIC_LINK_ORIGINS", "",
		"origins (https://app.example.com), comma-separated, a magic link may redirect to besides\n"+
			"      registered redirect URIs",
		func(v string) error {
			cfg.MagicLinkAllowedOrigins = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
			return nil
		})
	c.stringVar(&rl.URL, "redis-url", "URL", "GATEHOUSE_REDIS_URL", "",
		"redis://[user:pass@]host:6379/0 keeps rate limits in Redis, shared by every replica;\n"+
			"      empty: in this process's memory")
	c.durationVar(&rl.CoolDown, "redis-cool-down", "GATEHOUSE_REDIS_COOL_DOWN", redislimit.DefaultCoolDown,
		"after a failure of Redis, how long rate limits fail open at once without trying Redis,\n"+
			"      before one request probes it again")
	c.add("trusted-proxies", "CIDRS", "GATEHOUSE_TRUSTED_PROXIES", "",
		"reverse proxies (CIDRs or IPs, comma-separated) whose X-Forwarded-For names the client;\n"+
			"      empty: the connection's peer is the client",
		func(v string) (err error) {
			cfg.TrustedProxies, err = publicauth.ParseTrustedProxies(v)
			return err
		})
	rateVar(c, &cfg.LoginRateLimit, "login-rate-limit", "GATEHOUSE_LOGIN_RATE_LIMIT",
		publicauth.Rate{Limit: publicauth.DefaultPerIPLimit, Window: publicauth.DefaultPerIPWindow},
		"attempts one client IP may make at one login, register, magic link, PIN, reset or\n"+
			"      verification endpoint")
	rateVar(c, &cfg.AccountMailLimit, "account-mail-limit", "GATEHOUSE_ACCOUNT_MAIL_LIMIT",
		publicauth.Rate{Limit: publicauth.DefaultPerAccountLimit, Window: publicauth.DefaultPerAccountWindow},
		"mails of one kind (magic link, PIN, reset, verification, password linking) sent to one\n"+
			"      account")
	rateVar(c, &cfg.LockoutLimit, "lockout", "GATEHOUSE_LOCKOUT",
		publicauth.Rate{Limit: publicauth.DefaultLockoutLimit, Window: publicauth.DefaultLockoutWindow},
		"failed logins that lock an account, and the window that locks it")
	c.add("password-hash-concurrency", "N", "GATEHOUSE_PASSWORD_HASH_CONCURRENCY", "",
		fmt.Sprintf("password hashes (argon2id, 7 MiB each) computed at once; up to %d times as many logins\n"+
			"      wait for one, more are answered 503; empty: the number of CPUs", publicauth.DefaultPasswordHashQueueFactor),
		func(v string) error {
			if v == "" {
				cfg.PasswordHashConcurrency = 0
				return nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return errors.New("want a positive whole number")
			}
			cfg.PasswordHashConcurrency = n
			return nil
		})
	c.oneOfVar(&cfg.PasswordHasher, "password-hasher", "GATEHOUSE_PASSWORD_HASHER", publicauth.DefaultPasswordHasher,
		[]string{publicauth.PasswordHasherAuto, publicauth.PasswordHasherNative, publicauth.PasswordHasherGo},
		"who computes argon2id password hashes: auto (Go's x/crypto/argon2; the native AVX2 fill\n"+
			"      only in a build with -tags gatehouse_native_argon2 on a CPU with AVX2), native (refuse\n"+
			"      to start without it) or go; same hashes either way")
	rateVar(c, &cfg.TokenErrorLimit, "token-error-limit", "GATEHOUSE_TOKEN_ERROR_LIMIT",
		provider.RateLimit{Limit: provider.DefaultTokenErrorLimit, Window: provider.DefaultTokenErrorWindow},
		"failed client authentications (wrong client secret) one IP may make at the token,\n"+
			"      revocation and introspection endpoints before it must wait")
	rateVar(c, &cfg.AuthorizeIPLimit, "authorize-ip-limit", "GATEHOUSE_AUTHORIZE_IP_LIMIT",
		provider.RateLimit{Limit: provider.DefaultAuthorizeIPLimit, Window: provider.DefaultAuthorizeWindow},
		"authorization requests one IP may leave waiting for the login or consent page, and\n"+
			"      push to the PAR endpoint as a public client (each counted apart); over it 429")
	rateVar(c, &cfg.AuthorizeClientLimit, "authorize-client-limit", "GATEHOUSE_AUTHORIZE_CLIENT_LIMIT",
		provider.RateLimit{Limit: provider.DefaultAuthorizeClientLimit, Window: provider.DefaultAuthorizeWindow},
		"authorization requests left waiting for the login or consent page for one client, and\n"+
			"      pushed to the PAR endpoint by it (each counted apart); over it 429")
}

// rateVar registers a rate limit given as COUNT/DURATION ("100/1m") or "off".
func rateVar(c *command, p *provider.RateLimit, name, env string, def provider.RateLimit, help string) {
	text := strconv.Itoa(def.Limit) + "/" + durationText(def.Window)
	c.add(name, "COUNT/DURATION", env, text, help+`; "off" turns it off`, func(v string) error {
		if strings.EqualFold(v, "off") {
			*p = provider.RateLimit{Limit: -1, Window: time.Minute}
			return nil
		}
		count, window, ok := strings.Cut(v, "/")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || n <= 0 {
			return errors.New(`want COUNT/DURATION such as 100/1m, or off`)
		}
		d, err := time.ParseDuration(window)
		if err != nil || d <= 0 {
			return errors.New(`want COUNT/DURATION such as 100/1m, or off`)
		}
		*p = provider.RateLimit{Limit: n, Window: d}
		return nil
	})
}
