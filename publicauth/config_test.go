package publicauth_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/argon2id"
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

// TestPasswordHasherSetting: each named hasher is used as asked (the native fill where this
// build and CPU can run it; where not, asking for it fails New, saying why), the default is
// auto, which is Go in a build without the native fill's tag, and another name is refused.
func TestPasswordHasherSetting(t *testing.T) {
	store := storagetest.Backends(t)[0].Open(t)
	auto := []string{publicauth.PasswordHasherGo}
	native, nativeErr := []string{publicauth.PasswordHasherNative}, ""
	if eng, err := argon2id.Open(argon2id.Options{Backend: argon2id.Native}); err != nil {
		native, nativeErr = nil, err.Error() // New passes on why, e.g. "not compiled in: build with -tags …"
	} else {
		eng.Close()
		auto = native
	}
	for _, tc := range []struct {
		hasher string
		want   []string // the backends the service may use; none: New must fail
		errSub string
	}{
		{"", auto, ""},
		{publicauth.PasswordHasherAuto, auto, ""},
		{publicauth.PasswordHasherNative, native, nativeErr},
		{publicauth.PasswordHasherGo, []string{publicauth.PasswordHasherGo}, ""},
		{"bcrypt", nil, `PasswordHasher must be "auto", "native" or "go", got "bcrypt"`},
	} {
		t.Run(tc.hasher, func(t *testing.T) {
			cfg := publicauth.Config{Secret: testSecret, PasswordHasher: tc.hasher, MailRetryInterval: -1}
			if d, err := cfg.WithDefaults(); err == nil && d.PasswordHasher != publicauth.PasswordHasherAuto && tc.hasher == "" {
				t.Errorf("default PasswordHasher %q, want auto", d.PasswordHasher)
			}
			svc, err := publicauth.New(cfg, store, publicauth.WithLimiter(ratelimit.NewMemory()))
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("New error = %v, want one containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer svc.Close()
			if got := publicauth.PasswordHasherOf(svc); !slices.Contains(tc.want, got) {
				t.Fatalf("service hashes with %q, want one of %q", got, tc.want)
			}
		})
	}
}
