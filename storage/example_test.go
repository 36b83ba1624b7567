package storage_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gatehouse-id/gatehouse/storage"
	// SQLite is linked only where it is imported.
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// A service shares its own database with Gatehouse: its GORM pool, its own users table,
// and Gatehouse's tables beside them under the prefix "gatehouse_". With Postgres, open the
// GORM database with gorm.io/driver/postgres instead; nothing else changes.
func ExampleFromGorm() {
	dir, err := os.MkdirTemp("", "gatehouse-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The service's own database, pool and users table.
	dsn := filepath.Join(dir, "service.db") +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close() // the service owns the pool; the store's Close leaves it open
	db.Exec(`CREATE TABLE users (id BIGINT PRIMARY KEY, login TEXT NOT NULL)`)

	ctx := context.Background()
	st, err := storage.FromGorm(db, storage.WithTablePrefix("gatehouse_"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	// Hand st to provider.New with provider.WithStore(st).

	var tables []string
	db.Raw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('users', 'gatehouse_users', 'gatehouse_clients', 'gatehouse_schema_migrations') ORDER BY name`).Scan(&tables)
	fmt.Println(tables)
	// Output: [gatehouse_clients gatehouse_schema_migrations gatehouse_users users]
}
