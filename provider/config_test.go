package provider_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
)

// TestPublicAuthConfigIsValidatedByPublicAuthRules: the public authentication settings are
// checked by publicauth's rules, the limit the provider keeps itself included.
func TestPublicAuthConfigIsValidatedByPublicAuthRules(t *testing.T) {
	tests := []struct {
		name string
		cfg  provider.PublicAuthConfig
		want string
	}{
		{"token error limit of zero attempts", provider.PublicAuthConfig{TokenErrorLimit: provider.RateLimit{Window: time.Minute}}, "TokenErrorLimit.Limit must be positive"},
		{"token error limit without window", provider.PublicAuthConfig{TokenErrorLimit: provider.RateLimit{Limit: 5}}, "TokenErrorLimit.Window must be positive"},
		{"login rate limit of zero attempts", provider.PublicAuthConfig{LoginRateLimit: provider.RateLimit{Window: time.Minute}}, "Limits.PerIP.Limit must be positive"},
		{"allowed origin with a path", provider.PublicAuthConfig{MagicLinkAllowedOrigins: []string{"https://app.example/cb"}}, `"https://app.example/cb" is not an origin`},
		{"allowed origin with an empty query", provider.PublicAuthConfig{MagicLinkAllowedOrigins: []string{"https://app.example?"}}, `"https://app.example?" is not an origin`},
		{"negative magic link lifespan", provider.PublicAuthConfig{MagicLinkLifespan: -time.Second}, "MagicLinkLifespan must not be negative"},
		{"mail sender on two lines", provider.PublicAuthConfig{MailFrom: "ops@example.com\r\n"}, "is not an address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := provider.New(provider.Config{DSN: "sqlite:" + filepath.Join(t.TempDir(), "g.db"), Secret: testSecret, PublicAuth: tt.cfg})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
