package server

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestDynamicRegistrationFlags: each boolean flag of dynamic client registration is off by
// default and set by its variable, a bare flag, or the flag over the variable.
func TestDynamicRegistrationFlags(t *testing.T) {
	for _, f := range []struct {
		flag, env string
		get       func(provider.Config) bool
	}{
		{"open-registration", "GATEHOUSE_OPEN_REGISTRATION", func(c provider.Config) bool { return c.OpenRegistration }},
		{"registration-client-credentials", "GATEHOUSE_REGISTRATION_CLIENT_CREDENTIALS",
			func(c provider.Config) bool { return c.AllowRegisteredClientCredentials }},
	} {
		for _, c := range []struct {
			name string
			args []string
			env  map[string]string
			want bool
		}{
			{"off by default", nil, nil, false},
			{"env sets it", nil, map[string]string{f.env: "true"}, true},
			{"bare flag sets it", []string{"--" + f.flag}, nil, true},
			{"flag overrides env", []string{"--" + f.flag + "=false"}, map[string]string{f.env: "true"}, false},
		} {
			t.Run(f.flag+"/"+c.name, func(t *testing.T) {
				_, cfg, err := parseServeConfig(c.args, envOf(c.env))
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				if got := f.get(cfg.Provider); got != c.want {
					t.Errorf("--%s: got %v, want %v", f.flag, got, c.want)
				}
			})
		}
	}
}

// TestClientRegistrationTokenCreate: the command prints a token with its expiry and use
// count, and refuses a missing or overlong expiry and a negative use count.
func TestClientRegistrationTokenCreate(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dsn := b.DSN(t)
			env := map[string]string{"GATEHOUSE_DSN": dsn}
			if _, isFile := sqlitePath(dsn); !isFile {
				env["GATEHOUSE_SECRET"] = strings.Repeat("k", 32)
			}
			var got struct {
				Token     string    `json:"token"`
				ExpiresAt time.Time `json:"expiresAt"`
				MaxUses   int       `json:"maxUses"`
			}
			decodeJSON(t, mustRun(t, env, "client", "registration-token", "create", "--expires", "24h", "--max-uses", "3"), &got)
			if len(got.Token) < 43 || got.MaxUses != 3 || time.Until(got.ExpiresAt) < 23*time.Hour || time.Until(got.ExpiresAt) > 25*time.Hour {
				t.Errorf("registration-token create: got %+v, want a token for 3 uses expiring in 24h", got)
			}
			for _, args := range [][]string{
				{"--max-uses", "1"},
				{"--expires", "9000h"},
				{"--expires", "1h", "--max-uses", "-1"},
			} {
				code, stdout, _ := runMain(t, env, append([]string{"client", "registration-token", "create"}, args...)...)
				if code != 2 || stdout != "" {
					t.Errorf("registration-token create %v: got exit %d, stdout %q; want 2 and nothing printed", args, code, stdout)
				}
			}
		})
	}
}
