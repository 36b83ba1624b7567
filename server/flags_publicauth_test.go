package server

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
)

func TestPublicAuthFlags(t *testing.T) {
	defaults := provider.PublicAuthConfig{
		ServiceName:           "Gatehouse",
		MagicLinkLifespan:     15 * time.Minute,
		PINLifespan:           10 * time.Minute,
		VerificationLifespan:  24 * time.Hour,
		PasswordResetLifespan: time.Hour,
		LoginRateLimit:        provider.RateLimit{Limit: 100, Window: time.Minute},
		AccountMailLimit:      provider.RateLimit{Limit: 5, Window: 15 * time.Minute},
		LockoutLimit:          provider.RateLimit{Limit: 10, Window: 15 * time.Minute},
		TokenErrorLimit:       provider.RateLimit{Limit: 100, Window: time.Minute},
		AuthorizeIPLimit:      provider.RateLimit{Limit: 100, Window: time.Minute},
		AuthorizeClientLimit:  provider.RateLimit{Limit: 1000, Window: time.Minute},
		PasswordHasher:        "auto",
	}
	with := func(change func(c *provider.PublicAuthConfig)) provider.PublicAuthConfig {
		c := defaults
		change(&c)
		return c
	}
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		want  provider.PublicAuthConfig
		redis RedisLimits
	}{
		{name: "defaults", want: defaults, redis: RedisLimits{CoolDown: 5 * time.Second}},
		{
			name: "every flag",
			args: []string{
				"--smtp-url", "smtp://mail.example.com:587", "--mail-from", "Acme <no-reply@acme.example>",
				"--service-name", "Acme", "--require-pin", "--redis-url", "redis://127.0.0.1:6379/0",
				"--trusted-proxies", "10.0.0.0/8, 192.0.2.7", "--login-rate-limit", "20/30s",
				"--account-mail-limit", "3/1h", "--lockout", "off", "--magic-link-ttl", "5m", "--pin-ttl", "2m",
				"--verification-ttl", "48h", "--password-reset-ttl", "30m",
				"--magic-link-origins", "https://app.example.com,https://admin.example.com",
				"--token-error-limit", "30/10m", "--redis-cool-down", "30s", "--password-hasher", "go",
				"--authorize-ip-limit", "50/30s", "--authorize-client-limit", "off",
			},
			want: with(func(c *provider.PublicAuthConfig) {
				c.SMTPURL, c.MailFrom, c.ServiceName = "smtp://mail.example.com:587", "Acme <no-reply@acme.example>", "Acme"
				c.RequirePIN = true
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}
				c.LoginRateLimit = provider.RateLimit{Limit: 20, Window: 30 * time.Second}
				c.AccountMailLimit = provider.RateLimit{Limit: 3, Window: time.Hour}
				c.LockoutLimit = provider.RateLimit{Limit: -1, Window: time.Minute}
				c.MagicLinkLifespan, c.PINLifespan = 5*time.Minute, 2*time.Minute
				c.VerificationLifespan, c.PasswordResetLifespan = 48*time.Hour, 30*time.Minute
				c.MagicLinkAllowedOrigins = []string{"https://app.example.com", "https://admin.example.com"}
				c.TokenErrorLimit = provider.RateLimit{Limit: 30, Window: 10 * time.Minute}
				c.AuthorizeIPLimit = provider.RateLimit{Limit: 50, Window: 30 * time.Second}
				c.AuthorizeClientLimit = provider.RateLimit{Limit: -1, Window: time.Minute}
				c.PasswordHasher = "go"
			}),
			redis: RedisLimits{URL: "redis://127.0.0.1:6379/0", CoolDown: 30 * time.Second},
		},
		{
			name: "environment, and a flag over it",
			args: []string{"--login-rate-limit", "7/1m"},
			env: map[string]string{
				"GATEHOUSE_SMTP_URL": "smtps://u:p@mail.example.com:465", "GATEHOUSE_MAIL_FROM": "ops@example.com",
				"GATEHOUSE_REQUIRE_PIN": "true", "GATEHOUSE_LOGIN_RATE_LIMIT": "1000/1m", "GATEHOUSE_LOCKOUT": "3/5m",
				"GATEHOUSE_PASSWORD_HASHER": "native",
			},
			want: with(func(c *provider.PublicAuthConfig) {
				c.SMTPURL, c.MailFrom, c.RequirePIN = "smtps://u:p@mail.example.com:465", "ops@example.com", true
				c.LoginRateLimit = provider.RateLimit{Limit: 7, Window: time.Minute}
				c.LockoutLimit = provider.RateLimit{Limit: 3, Window: 5 * time.Minute}
				c.PasswordHasher = "native"
			}),
			redis: RedisLimits{CoolDown: 5 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cfg, err := parseServeConfig(tt.args, envOf(tt.env))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got := cfg.Provider.PublicAuth
			// An empty list flag may parse to an empty or a nil list; both mean none.
			if len(got.MagicLinkAllowedOrigins) == 0 {
				got.MagicLinkAllowedOrigins = nil
			}
			if len(got.TrustedProxies) == 0 {
				got.TrustedProxies = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if cfg.RedisLimits != tt.redis {
				t.Errorf("Redis limits: got %+v, want %+v", cfg.RedisLimits, tt.redis)
			}
		})
	}
}

func TestPublicAuthFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		flag string // the flag the message names
	}{
		{"rate without a window", []string{"--login-rate-limit", "100"}, nil, "--login-rate-limit"},
		{"rate of zero", []string{"--login-rate-limit", "0/1m"}, nil, "--login-rate-limit"},
		{"rate with a bad window", []string{"--account-mail-limit", "5/soon"}, nil, "--account-mail-limit"},
		{"rate from the environment", nil, map[string]string{"GATEHOUSE_LOCKOUT": "-3/1m"}, "GATEHOUSE_LOCKOUT"},
		{"proxy that is no address", []string{"--trusted-proxies", "10.0.0.0/8,proxy.local"}, nil, "--trusted-proxies"},
		{"proxy with a bad prefix", []string{"--trusted-proxies", "10.0.0.0/33"}, nil, "--trusted-proxies"},
		{"PIN gate neither true nor false", nil, map[string]string{"GATEHOUSE_REQUIRE_PIN": "sometimes"}, "GATEHOUSE_REQUIRE_PIN"},
		{"TTL that is no duration", []string{"--pin-ttl", "ten minutes"}, nil, "--pin-ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseServeConfig(tt.args, envOf(tt.env))
			var ue *usageErr
			if !errors.As(err, &ue) {
				t.Fatalf("got error %v, want a usage error", err)
			}
			if !strings.Contains(err.Error(), tt.flag) {
				t.Errorf("error %q does not name %s", err, tt.flag)
			}
		})
	}
}
