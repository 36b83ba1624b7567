package storage

import (
	"context"
	"fmt"
	"math"
	"strings"

	"gorm.io/gorm"
)

// migration is one step of the schema's history. Versions only grow; a released migration
// is never edited, and none drops or rewrites data.
type migration struct {
	version int
	name    string
	// up applies the step inside the transaction tx; d says which SQL dialect tx speaks.
	up func(tx *gorm.DB, d dialect) error
}

// migrationLockKey is the Postgres advisory lock that serializes Migrate across processes.
const migrationLockKey int64 = 0x6761_7465_686f_7573 // "gatehous"

// Migrate brings the schema up to date: it creates schema_migrations(version, applied_at)
// when missing, then applies each migration not yet recorded there, in version order, each
// in its own transaction together with its schema_migrations row. It is idempotent and
// safe to run from several processes at once: on Postgres every step holds a transaction-
// scoped advisory lock and re-checks schema_migrations under it; on SQLite every transaction
// takes the write lock at BEGIN. Migrate ignores a transaction carried by ctx.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, math.MaxInt)
}

// migrateTo is Migrate up to and including version last.
func (s *Store) migrateTo(ctx context.Context, last int) error {
	err := s.migrationTx(ctx, func(tx *gorm.DB) error {
		return tx.Exec(s.ddl(`CREATE TABLE IF NOT EXISTS schema_migrations (
			version {int} PRIMARY KEY,
			applied_at {time} NOT NULL
		)`)).Error
	})
	if err != nil {
		return fmt.Errorf("storage: migrate: create schema_migrations: %w", err)
	}
	for _, m := range migrations() {
		if m.version > last {
			break
		}
		err := s.migrationTx(ctx, func(tx *gorm.DB) error {
			var applied int64
			if err := tx.Raw("SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&applied).Error; err != nil {
				return err
			}
			if applied > 0 {
				return nil
			}
			if err := m.up(tx, s.dialect); err != nil {
				return err
			}
			s.log.InfoContext(ctx, "storage: applied migration", "version", m.version, "name", m.name)
			return tx.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", m.version, s.nowUTC()).Error
		})
		if err != nil {
			return fmt.Errorf("storage: migrate: version %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

// migrationTx runs fn in a transaction on the pool, holding the migration lock on Postgres.
func (s *Store) migrationTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect == dialectPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrationLockKey).Error; err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		return fn(tx)
	})
}

// ddl replaces the type placeholders of a statement with the dialect's column types.
func (s *Store) ddl(stmt string) string {
	return ddlFor(s.dialect, stmt)
}

// ddlFor replaces {text}, {int}, {bool}, {time} and {blob} with d's column types. SQLite's
// time type must be DATETIME: the driver parses only DATE, DATETIME and TIMESTAMP columns
// back into time.Time.
func ddlFor(d dialect, stmt string) string {
	if d == dialectPostgres {
		return strings.NewReplacer(
			"{text}", "TEXT", "{int}", "BIGINT", "{bool}", "BOOLEAN",
			"{time}", "TIMESTAMPTZ", "{blob}", "BYTEA",
		).Replace(stmt)
	}
	return strings.NewReplacer(
		"{text}", "TEXT", "{int}", "INTEGER", "{bool}", "BOOLEAN",
		"{time}", "DATETIME", "{blob}", "BLOB",
	).Replace(stmt)
}

// execAll runs DDL statements in order on tx.
func execAll(tx *gorm.DB, d dialect, stmts []string) error {
	for _, stmt := range stmts {
		if err := tx.Exec(ddlFor(d, stmt)).Error; err != nil {
			return err
		}
	}
	return nil
}
