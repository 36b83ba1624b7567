package server

import "testing"

func TestPermissionFlags(t *testing.T) {
	const env = "GATEHOUSE_PERMISSIONS_KEEP_TOKENS_ON_REVOKE"
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"default revokes tokens", nil, nil, false},
		{"env keeps tokens", nil, map[string]string{env: "true"}, true},
		{"bare flag keeps tokens", []string{"--permissions-keep-tokens-on-revoke"}, nil, true},
		{"flag overrides env", []string{"--permissions-keep-tokens-on-revoke=false"}, map[string]string{env: "true"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cfg, err := parseServeConfig(c.args, envOf(c.env))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := cfg.Provider.Permissions.KeepTokensOnRevoke; got != c.want {
				t.Errorf("KeepTokensOnRevoke: got %v, want %v", got, c.want)
			}
		})
	}
	if _, _, err := parseServeConfig(nil, envOf(map[string]string{env: "maybe"})); err == nil {
		t.Errorf("%s=maybe: got no error, want a usage error", env)
	}
}
