package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// writeSecret writes content to a new file in dir and returns its path.
func writeSecret(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every secret serve takes can come from a file instead, by flag or variable; the file's
// one trailing newline is dropped; giving a secret both ways is a usage error.
func TestServeSecretFiles(t *testing.T) {
	dir := t.TempDir()
	const system = "a system secret of at least 32 bytes, from a file"
	systemFile := writeSecret(t, dir, "system", system+"\n")
	crlfFile := writeSecret(t, dir, "crlf", system+"\r\n")
	twoNewlines := writeSecret(t, dir, "two-newlines", system+"\n\n")
	googleFile := writeSecret(t, dir, "google", "g-secret\n")
	facebookFile := writeSecret(t, dir, "facebook", "f-secret")
	corpFile := writeSecret(t, dir, "corp", "corp-secret\n")
	emptyFile := writeSecret(t, dir, "empty", "\n")
	missing := filepath.Join(dir, "missing")
	corpSpec := "name=corp,issuer=https://idp.example,client-id=gh,client-secret-file=" + corpFile

	tests := []struct {
		name string
		args []string
		env  map[string]string
		// want checks the parsed configuration; wantErr is a part of the usage error.
		want    func(t *testing.T, cfg Config)
		wantErr string
	}{
		{
			name: "--secret-file",
			args: []string{"--secret-file", systemFile},
			want: func(t *testing.T, cfg Config) { wantText(t, "secret", string(cfg.Provider.Secret), system) },
		},
		{
			name: "GATEHOUSE_SECRET_FILE, CRLF line end",
			env:  map[string]string{"GATEHOUSE_SECRET_FILE": crlfFile},
			want: func(t *testing.T, cfg Config) { wantText(t, "secret", string(cfg.Provider.Secret), system) },
		},
		{
			name: "only one trailing newline is dropped",
			args: []string{"--secret-file=" + twoNewlines},
			want: func(t *testing.T, cfg Config) { wantText(t, "secret", string(cfg.Provider.Secret), system+"\n") },
		},
		{
			name: "Google and Facebook client secrets",
			args: []string{"--google-client-id", "g-id", "--facebook-client-id", "f-id", "--facebook-client-secret-file", facebookFile},
			env:  map[string]string{"GATEHOUSE_GOOGLE_CLIENT_SECRET_FILE": googleFile},
			want: func(t *testing.T, cfg Config) {
				wantText(t, "Google client secret", cfg.Provider.Social.Google.ClientSecret, "g-secret")
				wantText(t, "Facebook client secret", cfg.Provider.Social.Facebook.ClientSecret, "f-secret")
			},
		},
		{
			name: "client-secret-file inside --oidc-upstream",
			args: []string{"--oidc-upstream", corpSpec},
			want: func(t *testing.T, cfg Config) {
				ups := cfg.Provider.Social.OIDC
				if len(ups) != 1 {
					t.Fatalf("upstreams = %+v, want one", ups)
				}
				wantText(t, "upstream client secret", ups[0].ClientSecret, "corp-secret")
			},
		},
		{
			name:    "--secret and --secret-file",
			args:    []string{"--secret", system, "--secret-file", systemFile},
			wantErr: "give --secret or --secret-file (or their variables), not both",
		},
		{
			name:    "GATEHOUSE_SECRET and --secret-file",
			args:    []string{"--secret-file", systemFile},
			env:     map[string]string{"GATEHOUSE_SECRET": system},
			wantErr: "not both",
		},
		{
			name:    "Google secret both ways",
			args:    []string{"--google-client-secret", "x", "--google-client-secret-file", googleFile},
			wantErr: "give --google-client-secret or --google-client-secret-file",
		},
		{
			name:    "upstream secret both ways",
			args:    []string{"--oidc-upstream", corpSpec + ",client-secret=x"},
			wantErr: "give client-secret or client-secret-file, not both",
		},
		{
			name:    "missing file",
			args:    []string{"--secret-file", missing},
			wantErr: "--secret-file: open " + missing,
		},
		{
			name:    "empty file",
			env:     map[string]string{"GATEHOUSE_FACEBOOK_CLIENT_SECRET_FILE": emptyFile},
			wantErr: emptyFile + " is empty",
		},
		{
			name:    "missing upstream secret file",
			args:    []string{"--oidc-upstream", "name=corp,issuer=https://idp.example,client-id=gh,client-secret-file=" + missing},
			wantErr: "client-secret-file: open " + missing,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cfg, err := parseServeConfig(tt.args, envOf(tt.env))
			if tt.wantErr != "" {
				var ue *usageErr
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse = %v, want a usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			tt.want(t, cfg)
		})
	}
}

func wantText(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// The administration commands read --client-secret and --password from files too; both
// ways at once exits 2.
func TestAdminSecretFiles(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dir := t.TempDir()
			const system = "admin secret file test, 32+ bytes long"
			dsn := b.DSN(t)
			env := map[string]string{"GATEHOUSE_DSN": dsn, "GATEHOUSE_SECRET_FILE": writeSecret(t, dir, "system", system+"\n")}
			clientSecret := writeSecret(t, dir, "client", "a client secret from a file\n")
			password := writeSecret(t, dir, "password", "correct horse battery staple\n")

			var client clientJSON
			decodeJSON(t, mustRun(t, env, "client", "create", "--id", "svc", "--client-secret-file", clientSecret,
				"--grant-type", "client_credentials"), &client)
			if client.ClientSecret == nil || *client.ClientSecret != "a client secret from a file" {
				t.Errorf("client_secret = %v, want the file's content", client.ClientSecret)
			}
			mustRun(t, env, "user", "create", "--email", "ann@example.com", "--password-file", password, "--name", "Ann")

			// The user logs in with the file's password (without its newline).
			p, err := provider.New(provider.Config{DSN: dsn, Secret: []byte(system), JanitorInterval: -1})
			if err != nil {
				t.Fatalf("provider.New: %v", err)
			}
			defer p.Close()
			srv := httptest.NewServer(p)
			defer srv.Close()
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/api/public/login",
				strings.NewReader(`{"email":"ann@example.com","password":"correct horse battery staple"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("login with the file's password: %d, want 200", res.StatusCode)
			}

			for _, args := range [][]string{
				{"client", "create", "--client-secret", "x", "--client-secret-file", clientSecret},
				{"user", "create", "--email", "bob@example.com", "--password", "x", "--password-file", password},
				{"client", "list", "--secret", system},
			} {
				code, _, stderr := runMain(t, env, args...)
				if code != 2 || !strings.Contains(stderr, "not both") {
					t.Errorf("%s: exit %d, want 2 saying not both; stderr:\n%s", strings.Join(args, " "), code, stderr)
				}
			}
		})
	}
}
