//go:build unix

package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
)

// A new SQLite database, and the WAL and shared-memory files SQLite makes beside it, are
// readable by their owner only; an existing file keeps its mode.
func TestOpenSQLiteFileModes(t *testing.T) {
	ctx := context.Background()
	// Under a permissive umask the driver alone would create the file 0666.
	defer syscall.Umask(syscall.Umask(0))
	dir := t.TempDir()
	for _, c := range []struct {
		name, file string
		existing   os.FileMode // 0: no file before Open
		want       os.FileMode
	}{
		{"new file", "new.db", 0, 0o600},
		{"new file in a file: URI with parameters", "uri.db", 0, 0o600},
		{"existing file keeps its mode", "existing.db", 0o640, 0o640},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if c.existing != 0 {
				if err := os.WriteFile(path, nil, c.existing); err != nil {
					t.Fatal(err)
				}
			}
			dsn := "sqlite:" + path
			if strings.HasPrefix(c.name, "new file in a file: URI") {
				dsn = "sqlite:file:" + path + "?cache=private"
			}
			s, err := storage.Open(ctx, dsn)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			for _, name := range []string{path, path + "-wal", path + "-shm"} {
				info, err := os.Stat(name)
				if err != nil {
					t.Fatalf("stat: %v", err)
				}
				if got := info.Mode().Perm(); got != c.want {
					t.Errorf("%s: mode %v, want %v", filepath.Base(name), got, c.want)
				}
			}
		})
	}
}
