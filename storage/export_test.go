package storage

import (
	"context"
	"strings"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// Internals reached by the external tests (package storage_test).

// MigrateTo applies the migrations up to version last only.
func (s *Store) MigrateTo(ctx context.Context, last int) error { return s.migrateTo(ctx, last) }

// SchemaVersion returns the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.WithContext(ctx).Raw("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v).Error
	return v, err
}

// CreateUserWithLegacyKey inserts u as releases before migration 5 did: its email key is
// strings.ToLower of the email, whatever the email.
func (s *Store) CreateUserWithLegacyKey(ctx context.Context, u *publicauth.User) error {
	email := u.Email
	u.Email = "placeholder@example.com"
	m, err := userToModel(u)
	u.Email = email
	if err != nil {
		return err
	}
	m.Email, m.EmailLower = email, strings.ToLower(email)
	return s.conn(ctx).Create(m).Error
}

// EmailKeyOf returns the stored email key of user id.
func (s *Store) EmailKeyOf(ctx context.Context, id string) (string, error) {
	var m userModel
	err := s.conn(ctx).Take(&m, "id = ?", id).Error
	return m.EmailLower, err
}

// LatestSchemaVersion is the version a fully migrated database is at.
func LatestSchemaVersion() int {
	ms := migrations()
	return ms[len(ms)-1].version
}

// ExecSQL runs one statement on the pool, for tests that write rows as an older release did.
func (s *Store) ExecSQL(ctx context.Context, sql string, args ...any) error {
	return s.db.WithContext(ctx).Exec(sql, args...).Error
}

// HasIndex reports whether the schema has an index of that name.
func (s *Store) HasIndex(ctx context.Context, name string) bool {
	q := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?`
	if s.dialect == dialectPostgres {
		q = `SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?`
	}
	var n int64
	if err := s.db.WithContext(ctx).Raw(q, name).Scan(&n).Error; err != nil {
		return false
	}
	return n > 0
}
