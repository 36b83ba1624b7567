package storage

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"
)

// expiringTable is a table the janitor sweeps: its primary key, and whether its rows also
// die when used (a used_at column).
type expiringTable struct {
	table, key string
	singleUse  bool
}

// expiringTables lists every table with an expires_at column. client_assertion_jtis stays
// last: the janitor test takes its emptiness as the end of a sweep.
func expiringTables() []expiringTable {
	return []expiringTable{
		{table: "authorization_codes", key: "signature"},
		{table: "access_tokens", key: "signature"},
		{table: "refresh_tokens", key: "signature"},
		{table: "pkce_requests", key: "signature"},
		{table: "oidc_sessions", key: "signature"},
		{table: "sessions", key: "id_hash"},
		{table: "auth_requests", key: "id_hash"},
		{table: "one_time_tokens", key: "id_hash", singleUse: true},
		{table: "pin_challenges", key: "id", singleUse: true},
		{table: "revocation_rules", key: "rule_key"},
		{table: "pushed_requests", key: "id_hash"},
		{table: "device_codes", key: "device_code_hash"},
		{table: "logout_outbox", key: "id"},
		{table: "logout_endpoints", key: "client_id"},
		{table: "mail_outbox", key: "id"},
		{table: "totp_factors", key: "id"},
		{table: "webauthn_ceremonies", key: "id_hash", singleUse: true},
		{table: "client_assertion_jtis", key: "jti"},
		{table: "registration_tokens", key: "token_hash"},
	}
}

// defaultJanitorBatch is the batch size DeleteExpired uses for a batch ≤ 0.
const defaultJanitorBatch = 1000

// DeleteExpired deletes every row whose expires_at is before now from the expiring tables
// (authorization codes, access and refresh tokens, PKCE and OpenID Connect rows, login
// sessions, pending authorization requests, one-time mail tokens, PIN challenges,
// access-token revocation rules, pushed authorization requests, device codes, given-up
// logout messages, back-off records of logout endpoints, queued mails past their keep time,
// TOTP enrolments never confirmed, passkey ceremonies, client-assertion JWT ids, initial
// access tokens), every used one-time token, PIN challenge and passkey ceremony, and the
// security events older than their retention
// (SetSecurityEventRetention), and returns how many it deleted. It deletes at most batch
// rows per statement (1000 for batch ≤ 0), each statement on its own, so no lock is held
// for long. An expired login session ends as DeleteSession ends one: its back-channel
// logout messages are queued in the transaction that deletes its batch. Rows without expiry are kept. On error it returns
// the count deleted so far with the error.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time, batch int) (int64, error) {
	if batch <= 0 {
		batch = defaultJanitorBatch
	}
	cutoff := utc(now)
	var total int64
	for _, t := range expiringTables() {
		dead := "expires_at < ?"
		if t.singleUse {
			dead = "(expires_at < ? OR used_at IS NOT NULL)"
		}
		if t.table == "sessions" {
			n, err := s.deleteExpiredSessions(ctx, cutoff, batch)
			total += n
			if err != nil {
				return total, err
			}
			continue
		}
		stmt := s.sql(fmt.Sprintf(`DELETE FROM {%[1]s} WHERE %[2]s IN
			(SELECT %[2]s FROM {%[1]s} WHERE %[3]s ORDER BY expires_at LIMIT ?)`, t.table, t.key, dead))
		for {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			res := s.conn(ctx).Exec(stmt, cutoff, batch)
			if res.Error != nil {
				return total, fmt.Errorf("storage: delete expired %s: %w", t.table, res.Error)
			}
			total += res.RowsAffected
			if res.RowsAffected < int64(batch) {
				break
			}
		}
	}
	n, err := s.deleteOldSecurityEvents(ctx, now, batch)
	return total + n, err
}

// deleteExpiredSessions ends the sessions expired at cutoff, batch by batch, each batch in
// one transaction with their back-channel logout messages and revocations (endSessions).
func (s *Store) deleteExpiredSessions(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		err := s.inTx(ctx, func(tx *gorm.DB) error {
			var err error
			n, err = s.endSessions(tx, batch, "expires_at < ?", cutoff)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("storage: delete expired sessions: %w", err)
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}

// RunJanitor calls DeleteExpired every interval (one minute for interval ≤ 0) with the time
// now returns (time.Now when nil) until ctx is done. It logs failures at error level and
// deletions at debug level to log (nowhere when nil), and keeps going after a failure.
func (s *Store) RunJanitor(ctx context.Context, interval time.Duration, batch int, now func() time.Time, log *slog.Logger) {
	if interval <= 0 {
		interval = time.Minute
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = s.log
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			n, err := s.DeleteExpired(ctx, now(), batch)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				log.ErrorContext(ctx, "storage: janitor failed", "error", err, "deleted", n)
				continue
			}
			log.DebugContext(ctx, "storage: janitor deleted expired rows", "deleted", n)
		}
	}
}
