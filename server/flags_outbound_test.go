package server

import "testing"

// TestInsecureAllowPrivateClientURLsFlag: off by default; the flag or its variable turns it
// on, and the flag wins.
func TestInsecureAllowPrivateClientURLsFlag(t *testing.T) {
	const env = "GATEHOUSE_INSECURE_ALLOW_PRIVATE_CLIENT_URLS"
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"default refuses private addresses", nil, nil, false},
		{"env allows them", nil, map[string]string{env: "true"}, true},
		{"bare flag allows them", []string{"--insecure-allow-private-client-urls"}, nil, true},
		{"flag overrides env", []string{"--insecure-allow-private-client-urls=false"}, map[string]string{env: "true"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cfg, err := parseServeConfig(c.args, envOf(c.env))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := cfg.Provider.InsecureAllowPrivateClientURLs; got != c.want {
				t.Errorf("InsecureAllowPrivateClientURLs: got %v, want %v", got, c.want)
			}
		})
	}
}
