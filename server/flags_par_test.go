package server

import (
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestRequirePARFlag(t *testing.T) {
	const env = "GATEHOUSE_REQUIRE_PAR"
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"default lets clients choose", nil, nil, false},
		{"env requires PAR", nil, map[string]string{env: "true"}, true},
		{"bare flag requires PAR", []string{"--require-par"}, nil, true},
		{"flag overrides env", []string{"--require-par=false"}, map[string]string{env: "true"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cfg, err := parseServeConfig(c.args, envOf(c.env))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := cfg.Provider.RequirePAR; got != c.want {
				t.Errorf("RequirePAR: got %v, want %v", got, c.want)
			}
		})
	}
	if _, _, err := parseServeConfig(nil, envOf(map[string]string{env: "maybe"})); err == nil {
		t.Errorf("%s=maybe: got no error, want a usage error", env)
	}
}

// TestClientRequirePARCommands: client create --require-par registers a client that must
// push its authorization requests; client update --require-par turns it off and on.
func TestClientRequirePARCommands(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dsn := b.DSN(t)
			env := map[string]string{"GATEHOUSE_DSN": dsn}
			if _, isFile := sqlitePath(dsn); !isFile {
				env["GATEHOUSE_SECRET"] = strings.Repeat("k", 32)
			}
			mustRun(t, env, "migrate")
			type client struct {
				RequirePAR *bool `json:"require_pushed_authorization_requests"`
			}
			for _, step := range []struct {
				args []string
				want bool
			}{
				{[]string{"client", "create", "--id", "strict", "--redirect-uri", "https://app.example.com/cb", "--require-par"}, true},
				{[]string{"client", "create", "--id", "lax", "--redirect-uri", "https://app.example.com/cb"}, false},
				{[]string{"client", "update", "--id", "strict", "--require-par=false"}, false},
				{[]string{"client", "update", "--id", "lax", "--require-par", "true"}, true},
			} {
				var got client
				decodeJSON(t, mustRun(t, env, step.args...), &got)
				if got.RequirePAR == nil || *got.RequirePAR != step.want {
					t.Errorf("%s: require_pushed_authorization_requests got %v, want %v", strings.Join(step.args, " "), got.RequirePAR, step.want)
				}
			}
			code, stdout, stderr := runMain(t, env, "client", "update", "--id", "lax", "--require-par", "maybe")
			if code != 2 || stdout != "" || !strings.Contains(stderr, "--require-par") {
				t.Errorf("--require-par maybe: got exit %d, stdout %q, stderr %q; want 2 and a message", code, stdout, stderr)
			}
		})
	}
}
