package storage_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// TestLoggerOmitsParameters checks that statements are logged without their values, which
// may be secrets.
func TestLoggerOmitsParameters(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := storage.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "log.db"), storage.WithLogger(log))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	const secret = "argon2id-secret-hash-value"
	err = s.CreateUser(ctx, &publicauth.User{ID: "u1", Email: "secret-person@example.com", PasswordHash: secret})
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	out := buf.String()
	if !strings.Contains(out, "INSERT INTO") {
		t.Errorf("got log %q, want the INSERT statement logged at debug level", out)
	}
	for _, value := range []string{secret, "secret-person"} {
		if strings.Contains(out, value) {
			t.Errorf("got log containing %q, want statements without their values", value)
		}
	}
}
