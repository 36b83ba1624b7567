package storage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// migration is one step of the schema's history. Versions only grow; a released migration
// is never edited, and none drops or rewrites data.
type migration struct {
	version int
	name    string
	// up applies the step inside the transaction tx; n writes its SQL for the store's
	// dialect and table prefix.
	up func(tx *gorm.DB, n schemaNames) error
}

// migrationLockSeed seeds the Postgres advisory lock that serializes Migrate across
// processes. The lock's key is this seed hashed with the schema and the table prefix
// (migrationTx): Gatehouses in other schemas of one database, or with other prefixes in one
// schema, have other tables and need not wait for each other's migrations.
const migrationLockSeed int64 = 0x6761_7465_686f_7573 // "gatehous"

// legacyMigrationsTable is where releases before table prefixes kept their versions, with
// the columns legacyMigrationColumns. Other tools (golang-migrate) use the same name.
const legacyMigrationsTable = "schema_migrations"

var (
	// migrationColumns are the columns of Gatehouse's migrations table.
	migrationColumns = []string{"applied_at", "name", "version"}
	// legacyMigrationColumns are the columns of a legacy schema_migrations of Gatehouse's.
	legacyMigrationColumns = []string{"applied_at", "version"}
	// legacyClientColumns are columns of Gatehouse's clients table no other schema is
	// likely to combine: their presence tells a legacy Gatehouse database.
	legacyClientColumns = []string{"first_party", "id", "id_token_alg", "post_logout_redirect_uris", "secret_hash"}
)

// Migrate brings the schema up to date. Its versions live in Gatehouse's own migrations
// table (gatehouse_schema_migrations, or the prefixed schema_migrations: see
// WithTablePrefix), with columns version, applied_at and name; Migrate creates it when
// missing, and checks its columns before it trusts any version in it.
//
// Each migration not yet recorded is applied in version order in its own transaction
// together with its row, and logged once that transaction has committed. Migrate is
// idempotent and safe to run from several processes at once: on Postgres every step holds
// a transaction-scoped advisory lock and re-checks the migrations table under it; on SQLite
// every transaction takes the write lock at BEGIN. Migrate ignores a transaction carried
// by ctx.
//
// Migrate fails with an error wrapping ErrForeignSchema, changing nothing, when the
// migrations table has other columns, or when the first migration would create a table
// that already exists (a company's own users table): WithTablePrefix keeps Gatehouse's
// tables apart.
//
// Releases before table prefixes kept their versions in schema_migrations(version,
// applied_at). With no prefix, when Gatehouse's migrations table does not exist yet and
// such a schema_migrations does, holding versions Gatehouse knows, beside Gatehouse's
// clients table, Migrate copies its rows into the new table in the transaction that creates
// it, and leaves it in place. Any other schema_migrations (golang-migrate's has version and
// dirty) is not Gatehouse's and is ignored.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, math.MaxInt)
}

// migrateTo is Migrate up to and including version last.
func (s *Store) migrateTo(ctx context.Context, last int) error {
	table := s.names.migrationsTable()
	var adopted []int
	err := s.migrationTx(ctx, func(tx *gorm.DB) error {
		var err error
		adopted, err = s.prepareMigrationsTable(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: migrate: %s: %w", table, err)
	}
	if len(adopted) > 0 {
		s.log.InfoContext(ctx, "storage: adopted the versions of the legacy migrations table",
			"from", legacyMigrationsTable, "to", table, "versions", adopted)
	}
	for _, m := range migrations() {
		if m.version > last {
			break
		}
		applied := false
		err := s.migrationTx(ctx, func(tx *gorm.DB) error {
			var n int64
			if err := scan(tx.Raw(s.sql("SELECT COUNT(*) FROM "+table+" WHERE version = ?"), m.version), &n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if m.version == 1 {
				if err := s.checkNoForeignTables(tx); err != nil {
					return err
				}
			}
			if err := m.up(tx, s.names); err != nil {
				return err
			}
			if err := tx.Exec("INSERT INTO "+table+" (version, applied_at, name) VALUES (?, ?, ?)", m.version, s.nowUTC(), m.name).Error; err != nil {
				return err
			}
			applied = true
			return nil
		})
		if err != nil {
			return fmt.Errorf("storage: migrate: version %d (%s): %w", m.version, m.name, err)
		}
		if applied {
			s.log.InfoContext(ctx, "storage: applied migration", "version", m.version, "name", m.name)
		}
	}
	return nil
}

// prepareMigrationsTable makes sure the migrations table exists with exactly Gatehouse's
// columns, creating it (and adopting a legacy table's versions, which it returns) when
// missing, and that the versions it records belong to this prefix's tables.
func (s *Store) prepareMigrationsTable(tx *gorm.DB) (adopted []int, err error) {
	table := s.names.migrationsTable()
	cols, err := s.columns(tx, table)
	if err != nil {
		return nil, err
	}
	switch {
	case len(cols) == 0:
		err := tx.Exec(s.sql(`CREATE TABLE ` + table + ` (
			version {int} PRIMARY KEY,
			applied_at {time} NOT NULL,
			name {text} NOT NULL DEFAULT ''
		)`)).Error
		if err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
		if s.names.prefix == "" {
			if adopted, err = s.adoptLegacyVersions(tx); err != nil {
				return nil, fmt.Errorf("adopt the versions of %s: %w", legacyMigrationsTable, err)
			}
		}
	case !slices.Equal(cols, migrationColumns):
		return nil, fmt.Errorf("%w: table %s has the columns (%s), not Gatehouse's (%s); "+
			"it belongs to something else: drop or rename it, or give Gatehouse another table prefix (storage.WithTablePrefix)",
			ErrForeignSchema, table, strings.Join(cols, ", "), strings.Join(migrationColumns, ", "))
	}
	var recorded int64
	if err := scan(tx.Raw("SELECT COUNT(*) FROM "+table), &recorded); err != nil {
		return nil, err
	}
	if recorded > 0 {
		clients, err := s.columns(tx, s.names.table("clients"))
		if err != nil {
			return nil, err
		}
		if len(clients) == 0 {
			return nil, fmt.Errorf("%w: table %s records applied migrations, but table %s does not exist; "+
				"is it shared with a Gatehouse of another table prefix? Give each its own prefix (storage.WithTablePrefix)",
				ErrForeignSchema, table, s.names.table("clients"))
		}
	}
	return adopted, nil
}

// adoptLegacyVersions copies the rows of a legacy Gatehouse schema_migrations into the new
// migrations table, and returns their versions; it copies nothing, and returns none, when
// schema_migrations is missing or not Gatehouse's.
func (s *Store) adoptLegacyVersions(tx *gorm.DB) ([]int, error) {
	cols, err := s.columns(tx, legacyMigrationsTable)
	if err != nil || !slices.Equal(cols, legacyMigrationColumns) {
		return nil, err
	}
	clients, err := s.columns(tx, "clients")
	if err != nil {
		return nil, err
	}
	for _, c := range legacyClientColumns {
		if !slices.Contains(clients, c) {
			return nil, nil
		}
	}
	var versions []int
	if err := scan(tx.Raw("SELECT version FROM "+legacyMigrationsTable+" ORDER BY version"), &versions); err != nil {
		return nil, err
	}
	names := map[int]string{}
	for _, m := range migrations() {
		names[m.version] = m.name
	}
	if len(versions) == 0 || versions[0] != 1 {
		return nil, nil
	}
	for _, v := range versions {
		if _, ours := names[v]; !ours {
			return nil, nil
		}
	}
	for _, v := range versions {
		err := tx.Exec("INSERT INTO "+s.names.migrationsTable()+" (version, applied_at, name) SELECT version, applied_at, ? FROM "+
			legacyMigrationsTable+" WHERE version = ?", names[v], v).Error
		if err != nil {
			return nil, err
		}
	}
	return versions, nil
}

// checkNoForeignTables fails with ErrForeignSchema when a table the migrations create
// already exists before the first of them runs: it is someone else's.
func (s *Store) checkNoForeignTables(tx *gorm.DB) error {
	var clash []string
	for _, name := range tableNames() {
		cols, err := s.columns(tx, s.names.table(name))
		if err != nil {
			return err
		}
		if len(cols) > 0 {
			clash = append(clash, s.names.table(name))
		}
	}
	if len(clash) == 0 {
		return nil
	}
	return fmt.Errorf("%w: table %s already exists and was not created by Gatehouse's migrations; "+
		"keep Gatehouse's tables apart from yours with a table prefix, e.g. storage.WithTablePrefix(%q)",
		ErrForeignSchema, strings.Join(clash, ", "), "gatehouse_")
}

// tableNames lists every table the migrations leave, by logical name (permission_audit,
// created by v3, went into security_events in v20).
func tableNames() []string {
	return []string{
		"clients", "users", "sessions", "auth_requests", "authorization_codes", "access_tokens",
		"refresh_tokens", "pkce_requests", "oidc_sessions", "consents", "signing_keys",
		"client_assertion_jtis", "one_time_tokens", "pin_challenges", "permissions",
		"user_identities", "revocation_rules", "pushed_requests", "device_codes",
		"session_clients", "logout_outbox", "security_events", "registration_tokens",
		"mail_outbox", "logout_endpoints", "totp_factors", "recovery_codes", "webauthn_users",
		"webauthn_credentials", "webauthn_ceremonies",
	}
}

// columns returns the sorted column names of table in the store's schema (the current
// schema on Postgres), or none when there is no such table.
func (s *Store) columns(tx *gorm.DB, table string) ([]string, error) {
	var cols []string
	var err error
	if s.dialect == dialectPostgres {
		err = scan(tx.Raw(`SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ?`, table), &cols)
	} else {
		err = scan(tx.Raw(`SELECT name FROM pragma_table_info(?)`, table), &cols)
	}
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	slices.Sort(cols)
	return cols, nil
}

// migrationTx runs fn in a transaction on the pool, holding the migration lock on Postgres.
func (s *Store) migrationTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect == dialectPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || ?, ?))",
				s.names.prefix, migrationLockSeed).Error; err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		return fn(tx)
	})
}

// execAll runs DDL statements in order on tx, their placeholders replaced by n.
func execAll(tx *gorm.DB, n schemaNames, stmts []string) error {
	for _, stmt := range stmts {
		if err := tx.Exec(n.sql(stmt)).Error; err != nil {
			return err
		}
	}
	return nil
}
