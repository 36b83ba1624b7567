package publicauth_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestMagicLinkAllowedOriginsRule pins the one rule of an allowed origin, which the provider
// relies on instead of a rule of its own: scheme://host[:port] with at most one trailing
// slash.
func TestMagicLinkAllowedOriginsRule(t *testing.T) {
	store := storagetest.Backends(t)[0].Open(t)
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"https://app.example", true},
		{"https://app.example/", true},
		{"http://127.0.0.1:8080", true},
		{"HTTPS://App.Example:8443", true},
		{"https://app.example//", false},
		{"https://app.example/cb", false},
		{"https://app.example?", false},
		{"https://app.example#", false},
		{"https://user@app.example", false},
		{"app.example", false},
		{"ftp://app.example", false},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			cfg := publicauth.Config{Secret: testSecret, MagicLinkAllowedOrigins: []string{tc.origin}}
			svc, err := publicauth.New(cfg, store, publicauth.WithLimiter(ratelimit.NewMemory()))
			if err == nil {
				svc.Close()
			}
			if tc.ok && err != nil {
				t.Errorf("New refused %q: %v", tc.origin, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "is not an origin")) {
				t.Errorf("New error = %v, want %q refused as not an origin", err, tc.origin)
			}
		})
	}
}
