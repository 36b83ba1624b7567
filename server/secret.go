package server

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// minSecretLen is the shortest system secret the provider accepts.
const minSecretLen = 32

// sqlitePath returns the database file of a "sqlite:PATH" DSN (query stripped), and false
// for any other DSN. An in-memory database has the path "".
func sqlitePath(dsn string) (string, bool) {
	rest, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return "", false
	}
	rest = strings.TrimPrefix(rest, "//")
	rest, query, _ := strings.Cut(rest, "?")
	rest = strings.TrimPrefix(rest, "file:")
	if rest == "" || rest == ":memory:" || strings.Contains(query, "mode=memory") {
		return "", true
	}
	return rest, true
}

// loadSecret returns the configured secret when there is one. Otherwise, for a SQLite file,
// it returns the secret kept in PATH.secret beside the database, generating 32 random bytes
// (written hex-encoded, mode 0600) on the first start; for an in-memory SQLite database it
// returns a fresh secret that lives as long as the process. Both cases log a warning. Any
// other DSN needs a configured secret.
func loadSecret(configured []byte, dsn string, random io.Reader, logger *slog.Logger) ([]byte, error) {
	if configured != nil {
		if len(configured) < minSecretLen {
			return nil, usageError("the secret must be at least %d bytes", minSecretLen)
		}
		return configured, nil
	}
	path, ok := sqlitePath(dsn)
	if !ok {
		return nil, usageError("a secret is required with DSN %q: set GATEHOUSE_SECRET or --secret (at least %d bytes)", redactDSN(dsn), minSecretLen)
	}
	if path == "" {
		secret, err := newSecret(random)
		if err != nil {
			return nil, err
		}
		logger.Warn("no secret configured; using a random secret for this in-memory database that is lost at exit")
		return secret, nil
	}
	file := path + ".secret"
	stored, err := readSecretFile(file)
	if err == nil && len(stored) < minSecretLen {
		return nil, fmt.Errorf("secret file %s holds fewer than %d bytes", file, minSecretLen)
	}
	if err == nil {
		logger.Warn("no secret configured; using the secret stored beside the database (set GATEHOUSE_SECRET to manage it yourself)", "file", file)
		if info, serr := os.Stat(file); serr == nil && info.Mode().Perm()&0o077 != 0 {
			logger.Warn("the secret file can be read by other users: anyone who reads it can forge client secrets and decrypt the signing keys; chmod 600 it",
				"file", file, "mode", info.Mode().Perm().String())
		}
		return []byte(stored), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	secret, err := newSecret(random)
	if err != nil {
		return nil, err
	}
	// Write the whole secret to a private temporary file, then link it into place: the link
	// fails if another process got there first, and no process ever reads a half-written file.
	f, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".tmp*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("create secret file: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(append(secret, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write secret file: %w", err)
	}
	if err := os.Link(f.Name(), file); errors.Is(err, fs.ErrExist) {
		// Another process created it between our read and our link: use theirs.
		return loadSecret(nil, dsn, random, logger)
	} else if err != nil {
		return nil, fmt.Errorf("create secret file: %w", err)
	}
	logger.Warn("no secret configured; generated one and stored it beside the database (keep this file private and with the database; set GATEHOUSE_SECRET to manage it yourself)", "file", file)
	return secret, nil
}

// newSecret returns 32 random bytes, hex-encoded: the text is the secret, so the file's
// content can be copied into GATEHOUSE_SECRET unchanged.
func newSecret(random io.Reader) ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := io.ReadFull(random, raw); err != nil {
		return nil, fmt.Errorf("generate secret: %w", err)
	}
	return []byte(hex.EncodeToString(raw)), nil
}

// redactDSN hides the password of a URL-shaped DSN so it can be shown.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	return u.Redacted()
}
