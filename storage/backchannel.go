package storage

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/ory/fosite"
	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// BrowserSessionIDer is a fosite session that knows the browser session (its public id,
// the `sid` claim) the grant was made in. The provider's session implements it; storage
// records the id on codes and refresh tokens so that ending the session revokes them.
type BrowserSessionIDer interface {
	// BrowserSessionID is the public id of the browser session, "" for none.
	BrowserSessionID() string
}

// browserSessionID is the sid of r's session, "" when it has none.
func browserSessionID(r fosite.Requester) string {
	if s, ok := r.GetSession().(BrowserSessionIDer); ok {
		return s.BrowserSessionID()
	}
	return ""
}

type sessionClientModel struct {
	SID      string `gorm:"column:sid;primaryKey"`
	ClientID string `gorm:"primaryKey"`
}

func (sessionClientModel) TableName(n schema.Namer) string { return n.TableName("session_clients") }

type logoutOutboxModel struct {
	ID            string `gorm:"primaryKey"`
	ClientID      string
	SID           string `gorm:"column:sid"`
	Subject       string
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	NextAttemptAt time.Time
	Attempts      int
	LastError     string
	FailedAt      *time.Time
	ExpiresAt     *time.Time
}

func (logoutOutboxModel) TableName(n schema.Namer) string { return n.TableName("logout_outbox") }

// LogoutMessage is one logout token still to deliver (OpenID Connect Back-Channel Logout
// 1.0 §2.5): the client to tell, and the session and subject that logged out. The token is
// signed when it is sent, so it never expires in the outbox.
type LogoutMessage struct {
	// ID is the message's id, also the logout token's jti: the same on every attempt, so a
	// relying party can tell a retry from a new logout.
	ID       string
	ClientID string
	SID      string
	Subject  string
	// CreatedAt is when the session ended.
	CreatedAt time.Time
	// Attempts counts the deliveries begun, this one included.
	Attempts int
	// LastError is why the last delivery failed ("" before any failure); FailedAt is when
	// the message was given up on, nil while it is still tried (PendingLogouts sets both).
	LastError string
	FailedAt  *time.Time
}

// logoutMessageID is the id of the message telling clientID that session sid ended: one
// session ends once, so (sid, client) names the message; hashed to keep it short and
// opaque.
func logoutMessageID(sid, clientID string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d:%s%s", len(sid), sid, clientID)))
	return base64.RawURLEncoding.EncodeToString(sum[:18])
}

// RecordSessionClient records that clientID was issued a code in the browser session sid, so
// that the client receives a logout token when the session ends. Recording it again is not
// an error. The provider calls it in the transaction that stores the code. It returns
// ErrSessionEnded (an ErrNotFound) when the session no longer exists: a session that ended
// while the code was being issued must not leave a client it will never tell. On Postgres
// the session row is share-locked, so a concurrent end either waits for this transaction
// (and then sees its client) or has committed first (and this finds no session).
//
// On Postgres, in a transaction where nothing has run but the creation of one code (an
// authorization), the record is deferred: it is written with the code when the next
// statement runs or at Commit, and an authorization that writes nothing else commits as one
// statement, without BEGIN and COMMIT. Then Commit, not this call, returns ErrSessionEnded,
// and the code is not written either.
func (s *Store) RecordSessionClient(ctx context.Context, sid, clientID string) error {
	if st := s.txFrom(ctx); st != nil && s.dialect == dialectPostgres && st.savepoint == "" &&
		st.root.tx == nil && st.sessionClient == nil && len(st.pending) <= 1 {
		st.sessionClient = &sessionClientRecord{sid: sid, clientID: clientID}
		return nil
	}
	return s.recordSessionClient(s.conn(ctx), sid, clientID)
}

// ErrSessionEnded is ErrNotFound for the browser session a code is being issued in: it ended
// first (RecordSessionClient).
var ErrSessionEnded = fmt.Errorf("%w: the browser session ended", ErrNotFound)

// sessionClientSQL records a session's client on Postgres and counts the session: a share
// lock orders it against the session's end. DO NOTHING, not DO UPDATE: a session's repeated
// authorizations at one client must not queue on a row lock of the pair until each commits.
// Sharers do not wait for one another.
const sessionClientSQL = `WITH session AS (SELECT sid FROM {sessions} WHERE sid = ? FOR SHARE),
	recorded AS (INSERT INTO {session_clients} (sid, client_id) SELECT sid, ? FROM session
		ON CONFLICT (sid, client_id) DO NOTHING)%s
	SELECT COUNT(*) FROM session`

// recordSessionClient is RecordSessionClient's statement, run on db.
func (s *Store) recordSessionClient(db *gorm.DB, sid, clientID string) error {
	var found int64
	var err error
	if s.dialect == dialectPostgres {
		err = scan(db.Raw(s.sql(fmt.Sprintf(sessionClientSQL, "")), sid, clientID), &found)
	} else {
		// SQLite has one writer at a time: the transaction orders it against the end.
		// A conflict updates nothing but counts as a row, so 0 rows means no session.
		res := db.Exec(s.sql(`INSERT INTO {session_clients} (sid, client_id)
			SELECT ?, ? WHERE EXISTS (SELECT 1 FROM {sessions} WHERE sid = ?)
			ON CONFLICT (sid, client_id) DO UPDATE SET client_id = excluded.client_id`), sid, clientID, sid)
		found, err = res.RowsAffected, res.Error
	}
	if err != nil {
		return fmt.Errorf("storage: record session client: %w", err)
	}
	if found == 0 {
		return ErrSessionEnded
	}
	return nil
}

// issueInSession writes, as one statement on the pool (atomic by itself), the deferred record
// rec and the code, if any, issued in its session: both only while the session exists, under
// its share lock, as recordSessionClient orders them against the session's end. The code's
// columns and values are those gorm's INSERT of it would write.
func (s *Store) issueInSession(ctx context.Context, rec *sessionClientRecord, codes []*authorizationCodeModel) error {
	db := s.db.WithContext(ctx)
	args := []any{rec.sid, rec.clientID}
	insert := ""
	if len(codes) == 1 {
		// The columns and values gorm's Create would write, without running (or logging, or
		// tracing) a statement of its own.
		stmt := &gorm.Statement{DB: db, Context: ctx, Clauses: map[string]clause.Clause{}, Dest: codes[0], Model: codes[0]}
		if err := stmt.Parse(codes[0]); err != nil {
			return fmt.Errorf("storage: create authorization code: %w", err)
		}
		stmt.ReflectValue = reflect.Indirect(reflect.ValueOf(codes[0]))
		values := callbacks.ConvertToCreateValues(stmt)
		if stmt.Error != nil || len(values.Values) != 1 {
			return fmt.Errorf("storage: create authorization code: %v values, %w", len(values.Values), stmt.Error)
		}
		cols := make([]string, len(values.Columns))
		marks := make([]string, len(values.Columns))
		for i, c := range values.Columns {
			cols[i], marks[i] = stmt.Quote(c.Name), "?"
		}
		// INSERT … SELECT from the locked session: no session, no code. Postgres types each
		// parameter by the column it is inserted into.
		insert = fmt.Sprintf(",\n\tcode AS (INSERT INTO %s (%s) SELECT %s FROM session)",
			stmt.Quote(stmt.Table), strings.Join(cols, ", "), strings.Join(marks, ", "))
		args = append(args, values.Values[0]...)
	}
	var found int64
	err := scan(db.Raw(s.sql(fmt.Sprintf(sessionClientSQL, insert)), args...), &found)
	switch {
	case err != nil && len(codes) == 1:
		return fmt.Errorf("storage: create authorization code: %w", unavailable(err))
	case err != nil:
		return fmt.Errorf("storage: record session client: %w", unavailable(err))
	case found == 0:
		return ErrSessionEnded
	}
	return nil
}

// endedSession is a session endSessions ends.
type endedSession struct {
	IDHash string
	SID    string `gorm:"column:sid"`
	UserID string
}

// endSessions ends, on tx, the sessions matching where (with args), at most limit of them
// when limit > 0, and returns how many it ended. For each it writes a message to the logout
// outbox for every client that was issued a code in it and registered a back-channel
// logout URI, revokes the codes, refresh and access tokens issued in it, forgets its clients and
// deletes it: all in tx, so the logout is sent exactly when the session's end commits.
func (s *Store) endSessions(tx *gorm.DB, limit int, where string, args ...any) (int64, error) {
	q := tx.Model(&sessionModel{}).Select("id_hash", "sid", "user_id").Where(where, args...)
	if limit > 0 {
		q = q.Order("expires_at").Limit(limit)
	}
	if s.dialect == dialectPostgres {
		// Lock the sessions: a code issued in one of them concurrently (its session_clients
		// row) either commits before this reads the clients, or waits and then finds the
		// session gone.
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var ended []endedSession
	if err := q.Find(&ended).Error; err != nil {
		return 0, fmt.Errorf("storage: end sessions: %w", err)
	}
	if len(ended) == 0 {
		return 0, nil
	}
	hashes := make([]string, 0, len(ended))
	sids := make([]string, 0, len(ended))
	subjects := make(map[string]string, len(ended))
	for _, e := range ended {
		hashes = append(hashes, e.IDHash)
		if e.SID != "" {
			sids = append(sids, e.SID)
			subjects[e.SID] = e.UserID
		}
	}
	if len(sids) > 0 {
		var targets []sessionClientModel
		err := tx.Table(s.names.table("session_clients")+" AS sc").
			Select("sc.sid, sc.client_id").
			Joins(s.sql("JOIN {clients} c ON c.id = sc.client_id")).
			Where("sc.sid IN ? AND c.backchannel_logout_uri <> ''", sids).
			Find(&targets).Error
		if err != nil {
			return 0, fmt.Errorf("storage: end sessions: read their clients: %w", err)
		}
		if len(targets) > 0 {
			now := s.nowUTC()
			rows := make([]logoutOutboxModel, 0, len(targets))
			for _, t := range targets {
				rows = append(rows, logoutOutboxModel{
					ID: logoutMessageID(t.SID, t.ClientID), ClientID: t.ClientID, SID: t.SID,
					Subject: subjects[t.SID], CreatedAt: now, NextAttemptAt: now,
				})
			}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error; err != nil {
				return 0, fmt.Errorf("storage: end sessions: write the logout outbox: %w", err)
			}
		}
		// OpenID Connect Back-Channel Logout 1.0 §2.7: the session's refresh tokens die with
		// it, and so do its unused codes (a later use counts as reuse and revokes the grant)
		// and the access tokens of its grants (a rule per grant, DESIGN.md §3).
		var grants []string
		err = scan(tx.Raw(s.sql(`SELECT request_id FROM {authorization_codes} WHERE sid IN ?
			UNION SELECT request_id FROM {refresh_tokens} WHERE sid IN ?`), sids, sids), &grants)
		if err != nil {
			return 0, fmt.Errorf("storage: end sessions: read their grants: %w", err)
		}
		for _, g := range grants {
			if err := s.revokeNow(tx, grantKey(g)); err != nil {
				return 0, err
			}
		}
		if err := deactivateRefreshTokens(tx, "sid IN ?", sids); err != nil {
			return 0, err
		}
		err = tx.Model(&authorizationCodeModel{}).Where("sid IN ? AND active = ?", sids, true).
			Update("active", false).Error
		if err != nil {
			return 0, fmt.Errorf("storage: end sessions: revoke their codes: %w", err)
		}
		if err := tx.Where("sid IN ?", sids).Delete(&sessionClientModel{}).Error; err != nil {
			return 0, fmt.Errorf("storage: end sessions: forget their clients: %w", err)
		}
	}
	res := tx.Where("id_hash IN ?", hashes).Delete(&sessionModel{})
	if res.Error != nil {
		return 0, fmt.Errorf("storage: end sessions: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// LogoutClaim says which due logout messages ClaimLogouts takes.
type LogoutClaim struct {
	// Now is when the messages must be due; Lease is how long the claimed ones are left to
	// the caller. The lease must outlast a delivery.
	Now   time.Time
	Lease time.Duration
	// Limit is the most messages claimed.
	Limit int
	// Busy are clients none of whose messages is claimed: the caller is delivering to them
	// already.
	Busy []string
	// Failing selects the clients whose endpoint is on a failure streak
	// (LogoutEndpointFailed) and whose back-off has passed; without it, only the clients
	// whose endpoint is not. A client whose back-off has not passed is never claimed for.
	Failing bool
}

// claimLogoutsSQL selects the messages a claim takes: due, not given up on, of a client
// neither busy (%[1]s) nor backing off (%[2]s), the oldest of each client, the oldest
// clients first. The due conditions are repeated outside the ranking: on Postgres a row
// another worker claimed meanwhile is re-read when its lock is released, and must then no
// longer qualify. %[3]s is FOR UPDATE SKIP LOCKED on Postgres.
const claimLogoutsSQL = `SELECT * FROM {logout_outbox} WHERE id IN (
		SELECT id FROM (
			SELECT o.id, o.next_attempt_at,
				ROW_NUMBER() OVER (PARTITION BY o.client_id ORDER BY o.next_attempt_at, o.id) AS client_rank
			FROM {logout_outbox} o LEFT JOIN {logout_endpoints} e ON e.client_id = o.client_id
			WHERE o.failed_at IS NULL AND o.next_attempt_at <= @now%[1]s AND %[2]s
		) ranked WHERE client_rank = 1 ORDER BY next_attempt_at, id LIMIT @limit
	) AND failed_at IS NULL AND next_attempt_at <= @now
	ORDER BY next_attempt_at, id%[3]s`

// ClaimLogouts claims for delivery, as c says, logout messages due at c.Now: at most one of
// each client, so a client with many messages queued (or an endpoint that never answers)
// takes one place of c.Limit, not all of them. Each claimed message's next attempt moves to
// Now+Lease and its attempt count goes up by one, in one short transaction, so no other
// worker (on any replica) claims it again until the lease has passed. On Postgres the rows
// are locked FOR UPDATE SKIP LOCKED, so concurrent workers claim disjoint sets without
// waiting; on SQLite the transaction holds the write lock (taken only when some message is
// due). Messages given up on are never claimed, nor messages of a client whose endpoint is
// backing off (LogoutEndpointFailed).
func (s *Store) ClaimLogouts(ctx context.Context, c LogoutClaim) ([]LogoutMessage, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	cutoff := utc(c.Now)
	var due int64
	if err := scan(s.conn(ctx).Raw(s.sql(`SELECT COUNT(*) FROM (SELECT 1 FROM {logout_outbox}
		WHERE failed_at IS NULL AND next_attempt_at <= ? LIMIT 1) due`), cutoff), &due); err != nil {
		return nil, fmt.Errorf("storage: claim logout messages: %w", err)
	}
	if due == 0 {
		return nil, nil
	}
	args := map[string]any{"now": cutoff, "limit": c.Limit}
	busy := ""
	if len(c.Busy) > 0 {
		busy, args["busy"] = " AND o.client_id NOT IN @busy", c.Busy
	}
	endpoint := "e.client_id IS NULL"
	if c.Failing {
		endpoint = "e.client_id IS NOT NULL AND e.retry_at <= @now"
	}
	lock := ""
	if s.dialect == dialectPostgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	query := s.sql(fmt.Sprintf(claimLogoutsSQL, busy, endpoint, lock))
	var rows []logoutOutboxModel
	err := s.InTx(ctx, func(ctx context.Context) error {
		rows = nil
		tx := s.conn(ctx)
		if err := scan(tx.Raw(query, args), &rows); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]string, len(rows))
		for i := range rows {
			ids[i] = rows[i].ID
			rows[i].Attempts++
		}
		return tx.Model(&logoutOutboxModel{}).Where("id IN ? AND next_attempt_at <= ?", ids, cutoff).
			Updates(map[string]any{"next_attempt_at": cutoff.Add(c.Lease), "attempts": gorm.Expr("attempts + 1")}).Error
	})
	if err != nil {
		return nil, fmt.Errorf("storage: claim logout messages: %w", err)
	}
	claimed := make([]LogoutMessage, 0, len(rows))
	for _, r := range rows {
		claimed = append(claimed, LogoutMessage{
			ID: r.ID, ClientID: r.ClientID, SID: r.SID, Subject: r.Subject,
			CreatedAt: timeUTC(r.CreatedAt), Attempts: r.Attempts,
		})
	}
	return claimed, nil
}

type logoutEndpointModel struct {
	ClientID  string `gorm:"primaryKey"`
	Failures  int
	RetryAt   time.Time
	ExpiresAt time.Time
}

func (logoutEndpointModel) TableName(n schema.Namer) string { return n.TableName("logout_endpoints") }

// LogoutEndpointFailed records that a delivery to clientID's back-channel logout endpoint
// failed at now: its failure streak grows by one, and ClaimLogouts claims none of its
// messages before now plus backoff(streak) (streak 1 after the first failure). The record
// is kept until keep after that, for the streak to go on should the next delivery fail too;
// LogoutEndpointDelivered ends it.
func (s *Store) LogoutEndpointFailed(ctx context.Context, clientID string, now time.Time, backoff func(streak int) time.Duration, keep time.Duration) error {
	now = utc(now)
	err := s.InTx(ctx, func(ctx context.Context) error {
		tx := s.conn(ctx)
		var streak int
		err := scan(tx.Raw(s.sql(`INSERT INTO {logout_endpoints} (client_id, failures, retry_at, expires_at) VALUES (?, 1, ?, ?)
			ON CONFLICT (client_id) DO UPDATE SET failures = {logout_endpoints}.failures + 1
			RETURNING failures`), clientID, now, now.Add(keep)), &streak)
		if err != nil {
			return err
		}
		retry := now.Add(backoff(streak))
		return tx.Model(&logoutEndpointModel{}).Where("client_id = ?", clientID).
			Updates(map[string]any{"retry_at": retry, "expires_at": retry.Add(keep)}).Error
	})
	if err != nil {
		return fmt.Errorf("storage: record a failing logout endpoint: %w", err)
	}
	return nil
}

// LogoutEndpointDelivered ends the failure streak of clientID's back-channel logout endpoint,
// if any: a delivery to it succeeded.
func (s *Store) LogoutEndpointDelivered(ctx context.Context, clientID string) error {
	if err := s.conn(ctx).Where("client_id = ?", clientID).Delete(&logoutEndpointModel{}).Error; err != nil {
		return fmt.Errorf("storage: end a logout endpoint's failure streak: %w", err)
	}
	return nil
}

// LogoutEndpoint is the back-off state of a client's back-channel logout endpoint.
type LogoutEndpoint struct {
	ClientID string
	// Failures counts the failed deliveries in a row; RetryAt is when its messages are
	// claimed again.
	Failures int
	RetryAt  time.Time
}

// LogoutEndpoints returns the endpoints on a failure streak: for operators and tests.
func (s *Store) LogoutEndpoints(ctx context.Context) ([]LogoutEndpoint, error) {
	var rows []logoutEndpointModel
	if err := s.conn(ctx).Order("client_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("storage: list logout endpoints: %w", err)
	}
	out := make([]LogoutEndpoint, len(rows))
	for i, r := range rows {
		out[i] = LogoutEndpoint{ClientID: r.ClientID, Failures: r.Failures, RetryAt: timeUTC(r.RetryAt)}
	}
	return out, nil
}

// outboxRow is the pointer to an outbox table's model that claimDue needs: its id, and
// counting the attempt a claim starts.
type outboxRow[M any] interface {
	*M
	outboxID() string
	countAttempt()
}

// claimDue claims, for an outbox table of model M (columns next_attempt_at, attempts,
// failed_at), up to limit rows due at now: in one short transaction each claimed row's next
// attempt moves to now+lease and its attempt count goes up by one, so no other worker (on
// any replica) claims it again until the lease has passed. On Postgres the due rows are read
// FOR UPDATE SKIP LOCKED, so concurrent workers claim disjoint sets without waiting; on
// SQLite the transaction holds the write lock. Rows given up on (failed_at set) are never
// claimed. The rows are returned as claimed, their attempt count already counting this one.
func claimDue[M any, R outboxRow[M]](ctx context.Context, s *Store, now time.Time, lease time.Duration, limit int) ([]M, error) {
	cutoff := utc(now)
	var rows []M
	err := s.InTx(ctx, func(ctx context.Context) error {
		rows = nil
		tx := s.conn(ctx)
		q := tx.Where("failed_at IS NULL AND next_attempt_at <= ?", cutoff).Order("next_attempt_at").Limit(limit)
		if s.dialect == dialectPostgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		if err := q.Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]string, len(rows))
		for i := range rows {
			ids[i] = R(&rows[i]).outboxID()
			R(&rows[i]).countAttempt()
		}
		return tx.Model(new(M)).Where("id IN ? AND next_attempt_at <= ?", ids, cutoff).
			Updates(map[string]any{"next_attempt_at": cutoff.Add(lease), "attempts": gorm.Expr("attempts + 1")}).Error
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// LogoutDelivered deletes the message with that id: its logout token was delivered.
// Deleting a missing message is not an error.
func (s *Store) LogoutDelivered(ctx context.Context, id string) error {
	if err := s.conn(ctx).Where("id = ?", id).Delete(&logoutOutboxModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete delivered logout message: %w", err)
	}
	return nil
}

// LogoutFailed records a failed delivery of the message with that id: with giveUp false it
// is tried again at next; with giveUp true it is never tried again and its row is kept,
// failed_at set to now and reason as its last error, until keep has passed (the janitor
// then deletes it), for operators to see.
func (s *Store) LogoutFailed(ctx context.Context, id string, reason string, next time.Time, giveUp bool, now time.Time, keep time.Duration) error {
	set := map[string]any{"next_attempt_at": utc(next), "last_error": truncate(reason, 500)}
	if giveUp {
		set["failed_at"] = utc(now)
		set["expires_at"] = utc(now).Add(keep)
	}
	if err := s.conn(ctx).Model(&logoutOutboxModel{}).Where("id = ?", id).Updates(set).Error; err != nil {
		return fmt.Errorf("storage: record failed logout delivery: %w", err)
	}
	return nil
}

// PendingLogouts returns every message of the logout outbox, failed ones included, oldest
// first: for operators and tests.
func (s *Store) PendingLogouts(ctx context.Context) ([]LogoutMessage, error) {
	var rows []logoutOutboxModel
	if err := s.conn(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("storage: list logout messages: %w", err)
	}
	out := make([]LogoutMessage, len(rows))
	for i, r := range rows {
		out[i] = LogoutMessage{ID: r.ID, ClientID: r.ClientID, SID: r.SID, Subject: r.Subject,
			CreatedAt: timeUTC(r.CreatedAt), Attempts: r.Attempts, LastError: r.LastError, FailedAt: timePtrUTC(r.FailedAt)}
	}
	return out, nil
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
