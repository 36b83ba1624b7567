package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/aftercommit"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"
)

func testTransactions(t *testing.T, s *storage.Store) {
	bg := context.Background()
	exists := func(t *testing.T, id string) bool {
		t.Helper()
		_, err := s.ClientByID(bg, id)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("ClientByID(%q): %v", id, err)
		}
		return err == nil
	}
	cases := []struct {
		name string
		// run writes clients inside transactions and returns which ids must exist after.
		run func(t *testing.T) map[string]bool
	}{
		{"rollback discards writes", func(t *testing.T) map[string]bool {
			ctx, err := s.BeginTX(bg)
			mustNoErr(t, "BeginTX", err)
			mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("rolled-back")))
			if _, err := s.ClientByID(ctx, "rolled-back"); err != nil {
				t.Errorf("ClientByID inside the transaction: got error %v, want the client", err)
			}
			mustNoErr(t, "Rollback", s.Rollback(ctx))
			return map[string]bool{"rolled-back": false}
		}},
		{"commit keeps writes", func(t *testing.T) map[string]bool {
			ctx, err := s.BeginTX(bg)
			mustNoErr(t, "BeginTX", err)
			mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("committed")))
			mustNoErr(t, "Commit", s.Commit(ctx))
			return map[string]bool{"committed": true}
		}},
		{"nested rollback undoes only the nested writes", func(t *testing.T) map[string]bool {
			outer, err := s.BeginTX(bg)
			mustNoErr(t, "BeginTX", err)
			mustNoErr(t, "CreateClient(outer)", s.CreateClient(outer, newClient("outer")))
			inner, err := s.BeginTX(outer)
			mustNoErr(t, "nested BeginTX", err)
			mustNoErr(t, "CreateClient(inner)", s.CreateClient(inner, newClient("inner")))
			mustNoErr(t, "nested Rollback", s.Rollback(inner))
			mustNoErr(t, "CreateClient(after)", s.CreateClient(outer, newClient("after")))
			mustNoErr(t, "Commit", s.Commit(outer))
			return map[string]bool{"outer": true, "inner": false, "after": true}
		}},
		{"nested commit is undone by the outer rollback", func(t *testing.T) map[string]bool {
			outer, err := s.BeginTX(bg)
			mustNoErr(t, "BeginTX", err)
			inner, err := s.BeginTX(outer)
			mustNoErr(t, "nested BeginTX", err)
			mustNoErr(t, "CreateClient(inner)", s.CreateClient(inner, newClient("inner-committed")))
			mustNoErr(t, "nested Commit", s.Commit(inner))
			mustNoErr(t, "Rollback", s.Rollback(outer))
			return map[string]bool{"inner-committed": false}
		}},
		{"a failed write inside a transaction leaves it usable", func(t *testing.T) map[string]bool {
			mustCreateClient(t, s, "existing")
			ctx, err := s.BeginTX(bg)
			mustNoErr(t, "BeginTX", err)
			checkErr(t, "CreateClient(duplicate)", s.CreateClient(ctx, newClient("existing")), storage.ErrConflict)
			mustNoErr(t, "CreateClient(after the conflict)", s.CreateClient(ctx, newClient("after-conflict")))
			mustNoErr(t, "Commit", s.Commit(ctx))
			return map[string]bool{"existing": true, "after-conflict": true}
		}},
		{"fosite writes roll back", func(t *testing.T) map[string]bool {
			client := mustCreateClient(t, s, "fosite-client")
			ctx, err := s.BeginTX(bg)
			mustNoErr(t, "BeginTX", err)
			mustNoErr(t, "CreateRefreshTokenSession", s.CreateRefreshTokenSession(ctx, "rt-tx", "at-tx", newRequest(t, client, "u", t0)))
			issued := time.Now()
			mustNoErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, "grant-tx"))
			mustNoErr(t, "Rollback", s.Rollback(ctx))
			_, err = s.GetRefreshTokenSession(bg, "rt-tx", newSession())
			checkErr(t, "GetRefreshTokenSession after rollback", err, fosite.ErrNotFound)
			wantRevoked(t, s, "an access token of the grant after a rolled-back rule", tokenRef("grant-tx", "u", client.ID, issued), false)
			return map[string]bool{"fosite-client": true}
		}},
		{"InTx commits fn's writes", func(t *testing.T) map[string]bool {
			mustNoErr(t, "InTx", s.InTx(bg, func(ctx context.Context) error {
				return s.CreateClient(ctx, newClient("intx-committed"))
			}))
			return map[string]bool{"intx-committed": true}
		}},
		{"InTx rolls back and returns fn's error", func(t *testing.T) map[string]bool {
			failed := errors.New("fn failed after its write")
			err := s.InTx(bg, func(ctx context.Context) error {
				mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("intx-failed")))
				return failed
			})
			if err != failed {
				t.Errorf("InTx: got error %v, want fn's error unchanged", err)
			}
			return map[string]bool{"intx-failed": false}
		}},
		{"a failed nested InTx undoes only its own writes", func(t *testing.T) map[string]bool {
			failed := errors.New("nested fn failed")
			mustNoErr(t, "InTx", s.InTx(bg, func(ctx context.Context) error {
				mustNoErr(t, "CreateClient(outer)", s.CreateClient(ctx, newClient("intx-outer")))
				err := s.InTx(ctx, func(ctx context.Context) error {
					mustNoErr(t, "CreateClient(inner)", s.CreateClient(ctx, newClient("intx-inner")))
					return failed
				})
				checkErr(t, "nested InTx", err, failed)
				return s.CreateClient(ctx, newClient("intx-after"))
			}))
			return map[string]bool{"intx-outer": true, "intx-inner": false, "intx-after": true}
		}},
		{"InTx rolls back when fn panics and re-raises the panic", func(t *testing.T) map[string]bool {
			recovered := func() (r any) {
				defer func() { r = recover() }()
				_ = s.InTx(bg, func(ctx context.Context) error {
					mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("intx-panicked")))
					panic("fn panicked")
				})
				return nil
			}()
			if recovered != "fn panicked" {
				t.Errorf("InTx: recovered %v, want fn's panic", recovered)
			}
			// The transaction was rolled back and released: the same client can be written
			// again before the deadline (neither SQLite's write lock nor Postgres's lock on
			// the uncommitted row is still held, and the row was not committed).
			ctx, cancel := context.WithTimeout(bg, 5*time.Second)
			defer cancel()
			mustNoErr(t, "InTx after the panic", s.InTx(ctx, func(ctx context.Context) error {
				return s.CreateClient(ctx, newClient("intx-panicked"))
			}))
			return map[string]bool{"intx-panicked": true}
		}},
		{"InTx reports a failed commit", func(t *testing.T) map[string]bool {
			ctx, cancel := context.WithCancel(bg)
			err := s.InTx(ctx, func(ctx context.Context) error {
				mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("intx-commit-failed")))
				// A cancelled context makes database/sql roll the transaction back, so the
				// commit that follows fails.
				cancel()
				return nil
			})
			if err == nil {
				t.Errorf("InTx whose commit failed: got no error, want the commit's error")
			}
			return map[string]bool{"intx-commit-failed": false}
		}},
		{"a write that fails at Commit rolls back and gives the connection back", func(t *testing.T) map[string]bool {
			c := mustCreateClient(t, s, "commit-flush-failed-client")
			req := newRequest(t, c, "someone", t0.Add(time.Hour))
			mustNoErr(t, "CreateAuthorizeCodeSession", s.CreateAuthorizeCodeSession(bg, "commit-flush-dup", req))
			err := s.InTx(bg, func(ctx context.Context) error {
				mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("commit-flush-failed")))
				// Pending until Commit, where its INSERT fails: the signature is taken.
				return s.CreateAuthorizeCodeSession(ctx, "commit-flush-dup", req)
			})
			if err == nil {
				t.Errorf("InTx whose code could not be written: got no error")
			}
			if stats, err := s.PoolStats(); err != nil || stats.InUse != 0 {
				t.Errorf("after the failed commit: %d connections in use (%v), want 0", stats.InUse, err)
			}
			return map[string]bool{"commit-flush-failed": false, "commit-flush-failed-client": true}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for id, want := range c.run(t) {
				if got := exists(t, id); got != want {
					t.Errorf("client %q exists: got %v, want %v", id, got, want)
				}
			}
		})
	}

	t.Run("deferred work runs after the commit and is dropped by a rollback", func(t *testing.T) {
		testAfterCommit(t, s)
	})

	t.Run("a transaction whose only write is a code commits it as one statement", func(t *testing.T) {
		testCodeOnlyTransactions(t, s)
	})

	t.Run("commit or rollback without a transaction fails", func(t *testing.T) {
		if err := s.Commit(bg); err == nil {
			t.Errorf("Commit without BeginTX: got no error, want one")
		}
		if err := s.Rollback(bg); err == nil {
			t.Errorf("Rollback without BeginTX: got no error, want one")
		}
	})
}

// testAfterCommit checks that work deferred with aftercommit.Do inside InTx runs once the
// transaction's writes are visible outside it, and never for a rolled-back one or savepoint.
func testAfterCommit(t *testing.T, s *storage.Store) {
	bg := context.Background()
	failed := errors.New("rolled back")
	tests := []struct {
		name string
		run  func(defer_ func(ctx context.Context, id string)) error
		want []string
	}{
		{"commit", func(defer_ func(context.Context, string)) error {
			return s.InTx(bg, func(ctx context.Context) error {
				mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("ac-committed")))
				defer_(ctx, "ac-committed")
				return nil
			})
		}, []string{"ac-committed"}},
		{"rollback", func(defer_ func(context.Context, string)) error {
			err := s.InTx(bg, func(ctx context.Context) error {
				mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("ac-rolled-back")))
				defer_(ctx, "ac-rolled-back")
				return failed
			})
			checkErr(t, "InTx", err, failed)
			return nil
		}, nil},
		{"rolled-back savepoint inside a commit", func(defer_ func(context.Context, string)) error {
			return s.InTx(bg, func(ctx context.Context) error {
				mustNoErr(t, "CreateClient", s.CreateClient(ctx, newClient("ac-outer")))
				err := s.InTx(ctx, func(ctx context.Context) error {
					defer_(ctx, "ac-inner")
					return failed
				})
				checkErr(t, "nested InTx", err, failed)
				err = s.InTx(ctx, func(ctx context.Context) error {
					defer_(ctx, "ac-outer")
					return nil
				})
				mustNoErr(t, "nested InTx", err)
				return nil
			})
		}, []string{"ac-outer"}},
		{"no transaction", func(defer_ func(context.Context, string)) error {
			mustCreateClient(t, s, "ac-no-tx")
			defer_(bg, "ac-no-tx")
			return nil
		}, []string{"ac-no-tx"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			err := tt.run(func(ctx context.Context, id string) {
				aftercommit.Do(ctx, func(ctx context.Context) {
					// The writes are committed: visible on the pool, and ctx is free of the
					// transaction, so the store can be used with it.
					if _, err := s.ClientByID(ctx, id); err != nil {
						t.Errorf("ClientByID(%q) in deferred work: %v, want the committed client", id, err)
					}
					ran = append(ran, id)
				})
			})
			mustNoErr(t, "run", err)
			if !slices.Equal(ran, tt.want) {
				t.Errorf("deferred work ran for %q, want %q", ran, tt.want)
			}
		})
	}
}

// seedExpiringRows creates, in every expiring table, three rows that expired before t0 and
// one that expires just after it, plus a refresh token without expiry ("forever"). It
// returns the keys of the expired rows and of the live one.
func seedExpiringRows(t *testing.T, s *storage.Store) (expired []string, live string) {
	t.Helper()
	ctx := context.Background()
	client := mustCreateClient(t, s, "app")
	user := mustCreateUser(t, s, "hank@example.com")
	seed := func(key string, exp time.Time) {
		t.Helper()
		req := newRequest(t, client, user.ID, exp)
		for _, k := range fositeKinds() {
			mustNoErr(t, "create "+k.name, k.create(s, ctx, key, req))
		}
		mustNoErr(t, "CreateSession", s.CreateSession(ctx, &publicauth.Session{
			IDHash: key, UserID: user.ID, Kind: publicauth.SessionPublic, AuthTime: exp, ExpiresAt: exp,
		}))
		mustNoErr(t, "CreateAuthRequest", s.CreateAuthRequest(ctx, &storage.AuthRequest{IDHash: key, ClientID: "app", ExpiresAt: exp}))
		mustNoErr(t, "SetClientAssertionJWT", s.SetClientAssertionJWT(ctx, key, exp))
		mustNoErr(t, "RevokeAccessTokenID", s.RevokeAccessTokenID(ctx, key, exp))
	}
	for i := range 3 {
		key := fmt.Sprintf("expired-%d", i)
		seed(key, t0.Add(-time.Duration(i+1)*time.Hour))
		expired = append(expired, key)
	}
	live = "live"
	seed(live, t0.Add(time.Microsecond))

	forever := newRequest(t, client, user.ID, t0)
	delete(forever.Session.(*openid.DefaultSession).ExpiresAt, fosite.RefreshToken)
	mustNoErr(t, "create refresh token without expiry", s.CreateRefreshTokenSession(ctx, "forever", "none", forever))
	return expired, live
}

// expiringTablesSeeded is how many tables seedExpiringRows fills per key: the PKCE and
// OpenID Connect data of a code live on the code's row.
const expiringTablesSeeded = 6

// checkRowsExist checks whether every row seedExpiringRows created under key exists.
func checkRowsExist(t *testing.T, s *storage.Store, key string, want bool) {
	t.Helper()
	ctx := context.Background()
	// Read as of long before any expiry, so only deletion hides a row.
	before := t0.Add(-24 * time.Hour)
	wantErr := func(missing error) error {
		if want {
			return nil
		}
		return missing
	}
	for _, k := range fositeKinds() {
		_, err := k.get(s, ctx, key, newSession())
		checkErr(t, k.name+" "+key, err, wantErr(fosite.ErrNotFound))
	}
	_, _, err := s.SessionByIDHash(ctx, key, before)
	checkErr(t, "session "+key, err, wantErr(publicauth.ErrSessionNotFound))
	_, err = s.AuthRequestByIDHash(ctx, key, before)
	checkErr(t, "auth request "+key, err, wantErr(storage.ErrNotFound))
	wantRevoked(t, s, "revocation rule "+key, storage.AccessTokenRef{JTI: key, IssuedAt: before}, want)
	// Every seeded jti expires after the real clock's now, so a stored one is known.
	err = s.ClientAssertionJWTValid(ctx, key)
	if known := errors.Is(err, fosite.ErrJTIKnown); known != want {
		t.Errorf("client assertion jti %s: got error %v, want known = %v", key, err, want)
	}
}

func testDeleteExpired(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	expired, live := seedExpiringRows(t, s)

	n, err := s.DeleteExpired(ctx, t0, 2)
	mustNoErr(t, "DeleteExpired", err)
	if want := int64(len(expired) * expiringTablesSeeded); n != want {
		t.Errorf("DeleteExpired: got %d rows deleted, want %d", n, want)
	}
	for _, key := range expired {
		checkRowsExist(t, s, key, false)
	}
	checkRowsExist(t, s, live, true)
	_, err = s.GetRefreshTokenSession(ctx, "forever", newSession())
	checkErr(t, "refresh token without expiry", err, nil)

	n, err = s.DeleteExpired(ctx, t0, 0)
	mustNoErr(t, "DeleteExpired again", err)
	if n != 0 {
		t.Errorf("DeleteExpired again: got %d rows deleted, want 0", n)
	}
}

func testJanitor(t *testing.T, s *storage.Store) {
	expired, live := seedExpiringRows(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunJanitor(ctx, 10*time.Millisecond, 2, func() time.Time { return t0 }, nil)
	}()
	// The janitor sweeps client_assertion_jtis last: once every expired jti is gone, a sweep
	// has completed.
	jtisLeft := func() bool {
		for _, key := range expired {
			if s.ClientAssertionJWTValid(context.Background(), key) != nil {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for jtisLeft() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("janitor did not delete the expired rows within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("RunJanitor did not return after its context was cancelled")
	}
	for _, key := range expired {
		checkRowsExist(t, s, key, false)
	}
	checkRowsExist(t, s, live, true)
}

// testCodeOnlyTransactions covers the transactions of an authorization: fosite stores a
// code, its PKCE and its OpenID Connect data, nothing else, and the store writes them at
// Commit as one INSERT without ever beginning a database transaction. The writes must be
// exactly as durable, and as absent after a rollback, as in a transaction that ran.
func testCodeOnlyTransactions(t *testing.T, s *storage.Store) {
	bg := context.Background()
	client := mustCreateClient(t, s, "code-only-app")
	authorize := func(t *testing.T, ctx context.Context, signature string) {
		t.Helper()
		req := newRequest(t, client, "user-1", t0)
		mustNoErr(t, "CreateAuthorizeCodeSession", s.CreateAuthorizeCodeSession(ctx, signature, req))
		mustNoErr(t, "CreatePKCERequestSession", s.CreatePKCERequestSession(ctx, signature, req))
		mustNoErr(t, "CreateOpenIDConnectSession", s.CreateOpenIDConnectSession(ctx, signature, req))
	}
	stored := func(t *testing.T, signature string) bool {
		t.Helper()
		_, err := s.GetAuthorizeCodeSession(bg, signature, newSession())
		if err != nil && !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("GetAuthorizeCodeSession(%q): %v", signature, err)
		}
		if err == nil {
			if _, err := s.GetPKCERequestSession(bg, signature, newSession()); err != nil {
				t.Errorf("the code %q was stored without its PKCE data: %v", signature, err)
			}
		}
		return err == nil
	}
	for _, c := range []struct {
		name      string
		signature string
		run       func(t *testing.T, ctx context.Context) error
		want      bool
	}{
		{"commit", "code-only-commit", func(t *testing.T, ctx context.Context) error {
			return s.Commit(ctx)
		}, true},
		{"rollback", "code-only-rollback", func(t *testing.T, ctx context.Context) error {
			return s.Rollback(ctx)
		}, false},
		{"a read after the code, then commit", "code-only-read", func(t *testing.T, ctx context.Context) error {
			if _, err := s.GetAuthorizeCodeSession(ctx, "code-only-read", newSession()); err != nil {
				t.Errorf("the pending code is not visible inside its transaction: %v", err)
			}
			return s.Commit(ctx)
		}, true},
		{"a read after the code, then rollback", "code-only-read-rollback", func(t *testing.T, ctx context.Context) error {
			if _, err := s.GetAuthorizeCodeSession(ctx, "code-only-read-rollback", newSession()); err != nil {
				t.Errorf("the pending code is not visible inside its transaction: %v", err)
			}
			return s.Rollback(ctx)
		}, false},
		{"a savepoint released, then commit", "code-only-nested", func(t *testing.T, ctx context.Context) error {
			inner, err := s.BeginTX(ctx)
			mustNoErr(t, "nested BeginTX", err)
			mustNoErr(t, "nested Commit", s.Commit(inner))
			return s.Commit(ctx)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, err := s.BeginTX(bg)
			mustNoErr(t, "BeginTX", err)
			authorize(t, ctx, c.signature)
			mustNoErr(t, c.name, c.run(t, ctx))
			if got := stored(t, c.signature); got != c.want {
				t.Errorf("code stored after %s: got %v, want %v", c.name, got, c.want)
			}
		})
	}
	t.Run("an empty transaction commits and rolls back", func(t *testing.T) {
		for _, end := range []func(context.Context) error{s.Commit, s.Rollback} {
			ctx, err := s.BeginTX(bg)
			mustNoErr(t, "BeginTX", err)
			mustNoErr(t, "end", end(ctx))
		}
	})
}
