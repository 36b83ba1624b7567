package storage

import (
	"context"
	"database/sql"
	"strings"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"gorm.io/gorm"
)

// Internals reached by the external tests (package storage_test).

// MigrateTo applies the migrations up to version last only.
func (s *Store) MigrateTo(ctx context.Context, last int) error { return s.migrateTo(ctx, last) }

// SchemaVersion returns the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.WithContext(ctx).Raw("SELECT COALESCE(MAX(version), 0) FROM " + s.names.migrationsTable()).Scan(&v).Error
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
	// Those releases had no profile column either (migration 18).
	return s.conn(ctx).Omit("profile").Create(m).Error
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
// Its {table} placeholders get the store's table prefix.
func (s *Store) ExecSQL(ctx context.Context, sql string, args ...any) error {
	return s.db.WithContext(ctx).Exec(s.sql(sql), args...).Error
}

// QueryInts runs one query returning a column of integers, its {table} placeholders
// prefixed.
func (s *Store) QueryInts(ctx context.Context, sql string, args ...any) ([]int64, error) {
	var out []int64
	err := s.db.WithContext(ctx).Raw(s.sql(sql), args...).Scan(&out).Error
	return out, err
}

// MigrationsTable is the table the store keeps its applied versions in.
func (s *Store) MigrationsTable() string { return s.names.migrationsTable() }

// TableName is the name in the database of the table Gatehouse calls logical.
func (s *Store) TableName(logical string) string { return s.names.table(logical) }

// ModelTableNames returns, for every GORM model, its logical table name and the name GORM
// resolves for it on this store.
func (s *Store) ModelTableNames() (map[string]string, error) {
	out := map[string]string{}
	for logical, model := range map[string]any{
		"clients": &clientModel{}, "users": &userModel{}, "sessions": &sessionModel{},
		"auth_requests": &authRequestModel{}, "authorization_codes": &authorizationCodeModel{},
		"access_tokens": &accessTokenModel{}, "refresh_tokens": &refreshTokenModel{},
		"pkce_requests": &pkceRequestModel{}, "oidc_sessions": &oidcSessionModel{},
		"consents": &consentModel{}, "signing_keys": &signingKeyModel{},
		"client_assertion_jtis": &clientAssertionJTIModel{}, "one_time_tokens": &oneTimeTokenModel{},
		"pin_challenges": &pinChallengeModel{}, "permissions": &permissionModel{},
		"security_events": &securityEventModel{}, "user_identities": &identityModel{},
		"device_codes":    &deviceCodeModel{},
		"pushed_requests": &pushedRequestModel{},
		"session_clients": &sessionClientModel{}, "logout_outbox": &logoutOutboxModel{},
		"registration_tokens": &registrationTokenModel{}, "mail_outbox": &mailOutboxModel{},
		"logout_endpoints": &logoutEndpointModel{},
		"totp_factors":     &totpFactorModel{}, "recovery_codes": &recoveryCodeModel{},
		"webauthn_users": &webauthnUserModel{}, "webauthn_credentials": &webauthnCredentialModel{},
		"webauthn_ceremonies": &webauthnCeremonyModel{},
	} {
		stmt := &gorm.Statement{DB: s.db}
		if err := stmt.Parse(model); err != nil {
			return nil, err
		}
		out[logical] = stmt.Schema.Table
	}
	return out, nil
}

// TableNames lists every table the migrations create, by logical name.
func TableNames() []string { return tableNames() }

// SQLDB is the store's connection pool.
func (s *Store) SQLDB() (*sql.DB, error) { return s.db.DB() }

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

// GateRuleChecks makes every revocation-rule query of s, once it has run, send the keys it
// read to ran and wait for a value (or the close) of gate before it answers: a test holds a
// query in flight while later checks gather behind it.
func (s *Store) GateRuleChecks(ran chan<- []string, gate <-chan struct{}) {
	s.rules = newCoalescer(func(ctx context.Context, keys []string) (map[string]int64, error) {
		found, err := s.ruleTimes(ctx, keys)
		ran <- keys
		<-gate
		return found, err
	})
}

// PendingRuleChecks is the number of revocation checks gathered in the batch not started yet.
func (s *Store) PendingRuleChecks() int {
	s.rules.mu.Lock()
	defer s.rules.mu.Unlock()
	if s.rules.pending == nil {
		return 0
	}
	return s.rules.pending.lookups
}

// MaxCoalesced is maxCoalesced, the bound of a batch.
const MaxCoalesced = maxCoalesced
