package server

import (
	"bytes"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/testlog"
)

func TestLoadSecretGeneratesOnceAndReuses(t *testing.T) {
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "gatehouse.db")
	var logs testlog.Buffer
	logger := newLogger(&logs, slog.LevelInfo)

	first, err := loadSecret(nil, dsn, rand.Reader, logger)
	if err != nil {
		t.Fatalf("first load: %v", err)
	}
	if len(first) != 64 {
		t.Errorf("generated secret: got %d bytes, want 64 hex characters", len(first))
	}
	file := filepath.Join(dir, "gatehouse.db.secret")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("secret file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("secret file mode: got %o, want 600", perm)
	}

	second, err := loadSecret(nil, dsn+"?_pragma=busy_timeout(5000)", rand.Reader, logger)
	if err != nil {
		t.Fatalf("second load: %v", err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("second load: got %q, want the first secret %q", second, first)
	}
	warns := 0
	for _, l := range logLines(t, &logs) {
		if l["level"] == "WARN" && l["file"] == file {
			warns++
		}
	}
	if warns != 2 {
		t.Errorf("warnings naming the file: got %d, want 2 (generated, reused)\n%s", warns, logs.String())
	}
}

func TestLoadSecretConfiguredWins(t *testing.T) {
	dir := t.TempDir()
	secret := []byte(strings.Repeat("s", 32))
	got, err := loadSecret(secret, "sqlite:"+filepath.Join(dir, "g.db"), rand.Reader, slog.New(slog.DiscardHandler))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("got %q, %v; want the configured secret", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "g.db.secret")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("secret file: got %v, want none written", err)
	}
}

func TestLoadSecretErrors(t *testing.T) {
	tests := []struct {
		name       string
		configured []byte
		dsn        string
	}{
		{"postgres without a secret", nil, "postgres://u:p@localhost/db"},
		{"secret shorter than 32 bytes", []byte("short"), "sqlite:" + filepath.Join(t.TempDir(), "g.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadSecret(tt.configured, tt.dsn, rand.Reader, slog.New(slog.DiscardHandler))
			var ue *usageErr
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, want a usage error", err)
			}
			if strings.Contains(err.Error(), ":p@") {
				t.Errorf("error %q shows the database password", err)
			}
		})
	}
}

func TestLoadSecretInMemoryIsEphemeral(t *testing.T) {
	a, err := loadSecret(nil, "sqlite::memory:", rand.Reader, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadSecret(nil, "sqlite::memory:", rand.Reader, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Error("two in-memory secrets: got equal, want fresh ones")
	}
}

func TestSQLitePath(t *testing.T) {
	tests := []struct {
		dsn      string
		wantPath string
		wantOK   bool
	}{
		{"sqlite:./gatehouse.db", "./gatehouse.db", true},
		{"sqlite:/var/lib/g.db?_pragma=foreign_keys(1)", "/var/lib/g.db", true},
		{"sqlite:file:g.db", "g.db", true},
		{"sqlite::memory:", "", true},
		{"sqlite:file:x?mode=memory&cache=shared", "", true},
		{"postgres://localhost/db", "", false},
	}
	for _, tt := range tests {
		path, ok := sqlitePath(tt.dsn)
		if path != tt.wantPath || ok != tt.wantOK {
			t.Errorf("sqlitePath(%q): got %q, %v; want %q, %v", tt.dsn, path, ok, tt.wantPath, tt.wantOK)
		}
	}
}

// Processes starting together on a new database must agree on one secret: none may read the
// file while another is still writing it.
func TestLoadSecretConcurrentFirstStartsAgree(t *testing.T) {
	for round := range 20 {
		dsn := "sqlite:" + filepath.Join(t.TempDir(), "gatehouse.db")
		const n = 16
		secrets := make(chan []byte, n)
		errs := make(chan error, n)
		for range n {
			go func() {
				s, err := loadSecret(nil, dsn, rand.Reader, slog.New(slog.DiscardHandler))
				secrets <- s
				errs <- err
			}()
		}
		var first []byte
		for i := range n {
			s, err := <-secrets, <-errs
			if err != nil {
				t.Fatalf("round %d, load %d: %v", round, i, err)
			}
			if first == nil {
				first = s
			} else if !bytes.Equal(s, first) {
				t.Fatalf("round %d: got secrets %q and %q, want one", round, first, s)
			}
		}
	}
}

// A secret file other users can read is still used, with a warning saying what it exposes.
func TestLoadSecretWarnsAboutReadableFile(t *testing.T) {
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "gatehouse.db")
	if _, err := loadSecret(nil, dsn, rand.Reader, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "gatehouse.db.secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	if _, err := loadSecret(nil, dsn, rand.Reader, newLogger(&logs, slog.LevelInfo)); err != nil {
		t.Fatalf("load with a readable file: %v", err)
	}
	if !strings.Contains(logs.String(), "can be read by other users") {
		t.Errorf("log: got %s, want a warning about the readable secret file", logs.String())
	}
}
