package storage_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/token/jwt"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
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

// sidSession is a fosite session made in a browser session, as the provider's is.
type sidSession struct {
	openid.DefaultSession
	SID string `json:"sid"`
}

func (s *sidSession) BrowserSessionID() string { return s.SID }

// TestLoggerOmitsParametersOfScannedStatements checks the statements whose result is scanned
// into a value or a struct (the record of a session's client, the code issued with it in
// one statement on Postgres, the grants of an ending session): gorm's own Scan logs them
// through a recorder that writes the values into the SQL, past the logger's filter.
func TestLoggerOmitsParametersOfScannedStatements(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			s := b.OpenWith(t, storage.WithLogger(log))
			const (
				sid      = "secret-sid-4a1f9c"
				clientID = "secret-client-7d2e"
				nonce    = "secret-nonce-93b0"
				code     = "secret-code-signature-5c8a"
				parHash  = "secret-request-uri-hash-0b7f"
			)
			client := &storage.Client{ID: clientID, SecretHash: []byte{1}, RedirectURIs: []string{"https://rp.example/cb"},
				GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}, Scopes: []string{"openid"}}
			if err := s.CreateClient(ctx, client); err != nil {
				t.Fatalf("CreateClient: %v", err)
			}
			sess := &publicauth.Session{IDHash: "secret-id-hash-e61d", SID: sid, UserID: "u1", Kind: publicauth.SessionPublic,
				Method: publicauth.MethodPassword, AuthTime: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
			if err := s.CreateSession(ctx, sess); err != nil {
				t.Fatalf("CreateSession: %v", err)
			}
			buf.Reset() // what follows is what this test is about
			if err := s.RecordSessionClient(ctx, sid, clientID); err != nil {
				t.Fatalf("RecordSessionClient: %v", err)
			}
			req := &fosite.Request{ID: "request-1", RequestedAt: time.Now(), Client: client,
				RequestedScope: fosite.Arguments{"openid"}, GrantedScope: fosite.Arguments{"openid"},
				Form: url.Values{"nonce": {nonce}},
				Session: &sidSession{SID: sid, DefaultSession: openid.DefaultSession{
					Claims:    &jwt.IDTokenClaims{Subject: "u1", Nonce: nonce},
					Headers:   &jwt.Headers{},
					ExpiresAt: map[fosite.TokenType]time.Time{fosite.AuthorizeCode: time.Now().Add(time.Minute)},
				}}}
			err := s.InTx(ctx, func(ctx context.Context) error {
				if err := s.CreateAuthorizeCodeSession(ctx, code, req); err != nil {
					return err
				}
				return s.RecordSessionClient(ctx, sid, clientID)
			})
			if err != nil {
				t.Fatalf("issue a code: %v", err)
			}
			if err := s.DeleteSession(ctx, sess.IDHash); err != nil {
				t.Fatalf("DeleteSession: %v", err)
			}
			par := &storage.PushedRequest{IDHash: parHash, ClientID: clientID, Form: "nonce=" + nonce, ExpiresAt: time.Now().Add(time.Minute)}
			if err := s.CreatePushedRequest(ctx, par); err != nil {
				t.Fatalf("CreatePushedRequest: %v", err)
			}
			if _, err := s.ConsumePushedRequest(ctx, parHash, clientID, time.Now()); err != nil {
				t.Fatalf("ConsumePushedRequest: %v", err)
			}
			out := buf.String()
			for _, stmt := range []string{"session_clients", "authorization_codes", "SELECT request_id", "DELETE FROM pushed_requests"} {
				if !strings.Contains(out, stmt) {
					t.Errorf("got log %q, want a statement on %s logged at debug level", out, stmt)
				}
			}
			for _, value := range []string{sid, clientID, nonce, code, parHash} {
				if strings.Contains(out, value) {
					t.Errorf("got log containing %q, want statements without their values:\n%s", value, out)
				}
			}
		})
	}
}

// TestNoGormScan keeps gorm's DB.Scan out of the package's code: it logs statements with
// their values (see scan in open.go, and the test above for the statements it covers).
func TestNoGormScan(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A chained call, on one line or the next: ").Scan(" once blanks are gone.
		if compact := strings.Join(strings.Fields(string(src)), ""); strings.Contains(compact, ").Scan(") {
			t.Errorf("%s calls Scan on a gorm statement (or on a call's result); use scan(q, dest)", f)
		}
	}
}
