package storage

import "context"

// MigrateTo applies the migrations up to and including version, so that a test of one
// migration starts from the schema before it.
func (s *Store) MigrateTo(ctx context.Context, version int) error {
	return s.migrateTo(ctx, version)
}

// ExecSQL runs one statement on the pool, for tests that write rows as an older release did.
func (s *Store) ExecSQL(ctx context.Context, sql string, args ...any) error {
	return s.db.WithContext(ctx).Exec(sql, args...).Error
}
