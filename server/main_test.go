package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"
)

// runMain runs the command line with env and returns the exit code, stdout and stderr.
func runMain(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := &cli{stdout: &stdout, stderr: &stderr, lookupEnv: envOf(env), random: rand.Reader}
	code := c.run(context.Background(), args)
	return code, stdout.String(), stderr.String()
}

func TestHelpExitsZero(t *testing.T) {
	tests := []struct {
		args     []string
		wantText []string
	}{
		{[]string{"--help"}, []string{"client create", "keys rotate", "migrate"}},
		{[]string{"help"}, []string{"user create"}},
		{[]string{"serve", "--help"}, []string{"--addr", "GATEHOUSE_ADDR", "--issuer", "--dsn", "--secret", "GATEHOUSE_ACCESS_TOKEN_TTL", "GATEHOUSE_LOG_LEVEL", "--demo"}},
		{[]string{"migrate", "--help"}, []string{"--dsn", "--secret"}},
		{[]string{"client", "--help"}, []string{"client create", "client list", "client update", "client rotate-secret", "client delete"}},
		{[]string{"client", "update", "--help"}, []string{"--id", "--name", "--redirect-uri", "--post-logout-redirect-uri", "--scope", "--grant-type", "--first-party", "--resource-server", "--id-token-alg", "--require-dpop"}},
		{[]string{"client", "rotate-secret", "--help"}, []string{"--id"}},
		{[]string{"user", "delete", "--help"}, []string{"--user"}},
		{[]string{"client", "create", "--help"}, []string{"--id", "--client-secret", "--redirect-uri", "--post-logout-redirect-uri", "--scope", "--public", "--first-party", "--grant-type", "--id-token-alg", "--require-dpop", "--dsn", "--secret"}},
		{[]string{"client", "list", "-h"}, []string{"--dsn", "--secret"}},
		{[]string{"client", "delete", "--help"}, []string{"--id"}},
		{[]string{"user", "create", "--help"}, []string{"--email", "--password", "--name", "--role", "--verified"}},
		{[]string{"keys", "rotate", "--help"}, []string{"--dsn", "--secret"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, nil, tt.args...)
			if code != 0 {
				t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
			}
			if !strings.HasPrefix(stdout, "Usage: gatehouse") {
				t.Errorf("stdout: got %q, want usage", stdout)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(stdout, w) {
					t.Errorf("usage lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"unknown command", []string{"frobnicate"}, nil},
		{"group without subcommand", []string{"client"}, nil},
		{"unknown subcommand", []string{"keys", "shred"}, nil},
		{"unknown flag", []string{"client", "list", "--bogus"}, nil},
		{"stray argument", []string{"migrate", "now"}, nil},
		{"bad duration", []string{"serve", "--id-token-ttl", "forever"}, nil},
		{"bad log level in env", []string{"serve"}, map[string]string{"GATEHOUSE_LOG_LEVEL": "chatty"}},
		{"client delete without id", []string{"client", "delete"}, nil},
		{"client create with bad algorithm", []string{"client", "create", "--id-token-alg", "HS256"}, nil},
		{"public client with a secret", []string{"client", "create", "--public", "--client-secret", "x"}, nil},
		{"user create without password", []string{"user", "create", "--email", "a@example.com"}, nil},
		{"user create with unknown role", []string{"user", "create", "--email", "a@example.com", "--password", "pw", "--role", "root"}, nil},
		{"postgres without a secret", []string{"keys", "rotate", "--dsn", "postgres://localhost/db"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.env, tt.args...)
			if code != 2 {
				t.Errorf("exit code: got %d, want 2; stderr:\n%s", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout: got %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, "gatehouse") {
				t.Errorf("stderr: got %q, want a message", stderr)
			}
		})
	}
}
