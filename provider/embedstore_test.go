package provider_test

import (
	"context"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestProviderOnASharedDatabase: a provider given (WithStore) a store made by
// storage.FromGorm on a company's own pool, beside the company's own users table, with a
// table prefix, migrates its prefixed tables and runs a whole code flow; its Close leaves
// the store and the company's pool working.
func TestProviderOnASharedDatabase(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		dsn := b.DSN(t)
		var dialector gorm.Dialector = postgres.Open(dsn)
		if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
			dialector = sqlite.Open(path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate")
		}
		db, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sqlDB.Close() })
		if err := db.Exec(`CREATE TABLE users (id BIGINT PRIMARY KEY, login TEXT NOT NULL)`).Error; err != nil {
			t.Fatal(err)
		}
		st, err := storage.FromGorm(db, storage.WithTablePrefix("gatehouse_"))
		if err != nil {
			t.Fatalf("FromGorm: %v", err)
		}

		e := newEnvOnStore(t, st, func(string) provider.Config { return provider.Config{} })
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", Name: "Web App", FirstParty: true})
		_, tok := e.relyingParty(t, webapp).signIn(t, e, e.browser(t), alice.Email)
		if tok.idToken.Subject != alice.ID {
			t.Errorf("ID token subject: got %q, want %q", tok.idToken.Subject, alice.ID)
		}

		var ours, theirs int64
		if err := db.Raw(`SELECT COUNT(*) FROM gatehouse_users`).Scan(&ours).Error; err != nil || ours != 1 {
			t.Errorf("gatehouse_users rows: got %d, %v; want 1", ours, err)
		}
		if err := db.Raw(`SELECT COUNT(*) FROM users`).Scan(&theirs).Error; err != nil || theirs != 0 {
			t.Errorf("company users rows: got %d, %v; want 0", theirs, err)
		}
		if err := e.p.Close(); err != nil {
			t.Fatalf("provider Close: %v", err)
		}
		if _, err := st.ClientByID(ctx, "webapp"); err != nil {
			t.Errorf("store after the provider's Close: %v, want it still open", err)
		}
	})
}
