package server

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
)

// envOf returns a lookup function over a fixed environment.
func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

func TestServeConfigPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, cfg Config)
	}{
		{
			name: "defaults apply when neither flag nor env is set",
			check: func(t *testing.T, cfg Config) {
				want := map[string]string{"addr": ":8080", "issuer": "http://localhost:8080", "dsn": "sqlite:./gatehouse.db", "alg": "ES256"}
				got := map[string]string{"addr": cfg.Addr, "issuer": cfg.Provider.Issuer, "dsn": cfg.Provider.DSN, "alg": cfg.Provider.AccessTokenAlg}
				for k := range want {
					if got[k] != want[k] {
						t.Errorf("%s: got %q, want %q", k, got[k], want[k])
					}
				}
				if cfg.Provider.AccessTokenLifespan != time.Hour || cfg.Provider.RefreshTokenLifespan != 720*time.Hour {
					t.Errorf("lifespans: got access %v refresh %v, want 1h and 720h", cfg.Provider.AccessTokenLifespan, cfg.Provider.RefreshTokenLifespan)
				}
				if cfg.LogLevel != slog.LevelInfo {
					t.Errorf("log level: got %v, want info", cfg.LogLevel)
				}
				if got := cfg.Provider.VerifiedTokenCacheSize; got != 4096 {
					t.Errorf("verified token cache size: got %d, want 4096", got)
				}
				if cfg.Provider.Secret != nil {
					t.Errorf("secret: got %q, want none", cfg.Provider.Secret)
				}
			},
		},
		{
			name: "pool limits come from flag and env, zero by default",
			args: []string{"--db-max-open-conns", "40"},
			env:  map[string]string{"GATEHOUSE_DB_MAX_IDLE_CONNS": "12", "GATEHOUSE_DB_MAX_OPEN_CONNS": "7"},
			check: func(t *testing.T, cfg Config) {
				if got, want := cfg.Provider.DBPool, (storage.Pool{MaxOpenConns: 40, MaxIdleConns: 12}); got != want {
					t.Errorf("pool: got %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "verified token cache size from env, negative for off",
			env:  map[string]string{"GATEHOUSE_VERIFIED_TOKEN_CACHE_SIZE": "-1"},
			check: func(t *testing.T, cfg Config) {
				if got := cfg.Provider.VerifiedTokenCacheSize; got != -1 {
					t.Errorf("verified token cache size: got %d, want -1 from the environment", got)
				}
			},
		},
		{
			name: "env overrides the default",
			env: map[string]string{
				"GATEHOUSE_ADDR": ":9000", "GATEHOUSE_ACCESS_TOKEN_TTL": "15m", "GATEHOUSE_LOG_LEVEL": "debug",
				"GATEHOUSE_ACCESS_TOKEN_ALG": "es256", "GATEHOUSE_SKIP_MIGRATE": "true", "GATEHOUSE_RSA_SIGNER": "Go",
			},
			check: func(t *testing.T, cfg Config) {
				if cfg.Addr != ":9000" {
					t.Errorf("addr: got %q, want :9000", cfg.Addr)
				}
				if cfg.Provider.AccessTokenLifespan != 15*time.Minute {
					t.Errorf("access ttl: got %v, want 15m", cfg.Provider.AccessTokenLifespan)
				}
				if cfg.LogLevel != slog.LevelDebug {
					t.Errorf("log level: got %v, want debug", cfg.LogLevel)
				}
				if cfg.Provider.AccessTokenAlg != "ES256" {
					t.Errorf("alg: got %q, want ES256", cfg.Provider.AccessTokenAlg)
				}
				if !cfg.Provider.SkipMigrate {
					t.Error("skip migrate: got false, want true")
				}
			},
		},
		{
			name: "flag overrides env",
			args: []string{"--addr", ":9100", "--access-token-ttl=5m", "--log-level", "error", "--skip-migrate=false"},
			env: map[string]string{
				"GATEHOUSE_ADDR": ":9000", "GATEHOUSE_ACCESS_TOKEN_TTL": "15m", "GATEHOUSE_LOG_LEVEL": "debug",
				"GATEHOUSE_SKIP_MIGRATE": "true",
			},
			check: func(t *testing.T, cfg Config) {
				if cfg.Addr != ":9100" {
					t.Errorf("addr: got %q, want :9100", cfg.Addr)
				}
				if cfg.Provider.AccessTokenLifespan != 5*time.Minute {
					t.Errorf("access ttl: got %v, want 5m", cfg.Provider.AccessTokenLifespan)
				}
				if cfg.LogLevel != slog.LevelError {
					t.Errorf("log level: got %v, want error", cfg.LogLevel)
				}
				if cfg.Provider.SkipMigrate {
					t.Error("skip migrate: got true, want false")
				}
			},
		},
		{
			name: "empty env counts as unset",
			env:  map[string]string{"GATEHOUSE_ADDR": ""},
			check: func(t *testing.T, cfg Config) {
				if cfg.Addr != ":8080" {
					t.Errorf("addr: got %q, want :8080", cfg.Addr)
				}
			},
		},
		{
			name: "secret from env, trailing slash trimmed from issuer",
			env:  map[string]string{"GATEHOUSE_SECRET": "0123456789abcdef0123456789abcdef", "GATEHOUSE_ISSUER": "https://id.example.com/"},
			check: func(t *testing.T, cfg Config) {
				if string(cfg.Provider.Secret) != "0123456789abcdef0123456789abcdef" {
					t.Errorf("secret: got %q", cfg.Provider.Secret)
				}
				if cfg.Provider.Issuer != "https://id.example.com" {
					t.Errorf("issuer: got %q, want https://id.example.com", cfg.Provider.Issuer)
				}
			},
		},
		{
			name:  "demo is on by default when issuer and dsn are not configured",
			check: wantDemo(true),
		},
		{
			name:  "demo is off by default when the issuer is configured by env",
			env:   map[string]string{"GATEHOUSE_ISSUER": "https://id.example.com"},
			check: wantDemo(false),
		},
		{
			name:  "demo is off by default when the dsn is configured by flag",
			args:  []string{"--dsn", "sqlite:/tmp/x.db"},
			check: wantDemo(false),
		},
		{
			name:  "demo env turns it on despite a configured issuer",
			env:   map[string]string{"GATEHOUSE_ISSUER": "https://id.example.com", "GATEHOUSE_DEMO": "true"},
			check: wantDemo(true),
		},
		{
			name:  "bare demo flag turns it on",
			args:  []string{"--dsn", "sqlite:/tmp/x.db", "--demo"},
			check: wantDemo(true),
		},
		{
			name:  "demo flag false wins over env true",
			args:  []string{"--demo=false"},
			env:   map[string]string{"GATEHOUSE_DEMO": "true"},
			check: wantDemo(false),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cfg, err := parseServeConfig(tt.args, envOf(tt.env))
			if err != nil {
				t.Fatalf("parse: got error %v, want none", err)
			}
			tt.check(t, cfg)
		})
	}
}

func wantDemo(want bool) func(*testing.T, Config) {
	return func(t *testing.T, cfg Config) {
		t.Helper()
		if cfg.Demo != want {
			t.Errorf("demo: got %v, want %v", cfg.Demo, want)
		}
	}
}

func TestServeConfigRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"duration flag that is not a duration", []string{"--access-token-ttl", "soon"}, nil},
		{"duration env that is not a duration", nil, map[string]string{"GATEHOUSE_REFRESH_TOKEN_TTL": "30 days"}},
		{"unknown log level", nil, map[string]string{"GATEHOUSE_LOG_LEVEL": "loud"}},
		{"unknown algorithm", []string{"--access-token-alg", "HS256"}, nil},
		{"unknown RSA signer", []string{"--rsa-signer", "boringssl"}, nil},
		{"RSA signer openssl, no longer linked", []string{"--rsa-signer", "openssl"}, nil},
		{"RSA signer openssl in the environment", nil, map[string]string{"GATEHOUSE_RSA_SIGNER": "OpenSSL"}},
		{"unknown password hasher", []string{"--password-hasher", "bcrypt"}, nil},
		{"demo neither true false nor auto", nil, map[string]string{"GATEHOUSE_DEMO": "maybe"}},
		{"debug address on every interface", []string{"--debug-addr", ":6060"}, nil},
		{"debug address not loopback", nil, map[string]string{"GATEHOUSE_DEBUG_ADDR": "0.0.0.0:6060"}},
		{"debug address of a public host", []string{"--debug-addr", "192.0.2.1:6060"}, nil},
		{"debug address without a port", []string{"--debug-addr", "127.0.0.1"}, nil},
		{"unknown flag", []string{"--no-such-flag"}, nil},
		{"stray argument", []string{"extra"}, nil},
		{"negative pool limit", []string{"--db-max-open-conns", "-1"}, nil},
		{"pool limit that is not a number", nil, map[string]string{"GATEHOUSE_DB_MAX_IDLE_CONNS": "many"}},
		{"verified token cache size that is not a number", []string{"--verified-token-cache-size", "lots"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseServeConfig(tt.args, envOf(tt.env))
			var ue *usageErr
			if !errors.As(err, &ue) {
				t.Fatalf("got error %v, want a usage error", err)
			}
			if strings.Contains(tt.name, "openssl") && !strings.Contains(err.Error(), "provider.WithSigner") {
				t.Errorf("got %v, want it to say how to sign with OpenSSL now (provider.WithSigner)", err)
			}
		})
	}
}
