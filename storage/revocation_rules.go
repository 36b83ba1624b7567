package storage

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"gorm.io/gorm"
)

// Access tokens are stateless JWTs: no row is written per token, so revoking one means
// recording a rule that matches it. A rule is a key naming what it matches and a time:
// it revokes every token the key matches that was issued before that time. The four kinds
// of key (DESIGN.md §3), and a fifth:
//
//	jti:<jti>                       one token (the revocation endpoint)
//	grant:<grant id>                the access tokens of one grant (refresh rotation and reuse,
//	                                code reuse, a revoked refresh token)
//	subclient:<len(sub)>:<sub><client>  what a subject holds at one client (permission
//	                                revocation, consent withdrawal)
//	sub:<subject>                   what a subject holds anywhere (credential change,
//	                                disabled or deleted user)
//	client:<client id>              what a client holds (a deleted client: its tokens stay
//	                                refused should a client of that id be registered again)
//
// The key is the table's primary key, so whether a token is revoked is one SELECT over at
// most five primary-key lookups (rule_key IN (…)), the token decided from the rows found:
// one round trip, an index probe per key, whatever the size of the table. Concurrent checks
// share that query (coalescer), without ever reading a rule older than the check. A second
// rule for a key already present widens the first (the later time, the later expiry), so
// the table holds one row per key and never grows with repeated revocations.
//
// Times are microseconds since the Unix epoch: a token's iat has whole seconds only, so a
// token also carries its issue time to the microsecond (the provider's private claim), and
// a rule made in the same second as a token tells whether the token came before or after
// it. A rule made at time T revokes the tokens issued at or before T (issued_before = T+1
// µs): a token with exactly the rule's timestamp is revoked, the safe side of the tie.
//
// A rule expires when the longest token it can match expires: for a jti rule the token's
// own exp; for the others the rule's time plus the longest access-token lifespan
// (CoverAccessTokenLifespan), since every token issued before the rule expires by then.
// The janitor deletes expired rules (DeleteExpired).

// DefaultAccessTokenLifespan is the longest access-token lifespan a store's revocation rules
// outlive until CoverAccessTokenLifespan raises it: the provider's default, one hour.
const DefaultAccessTokenLifespan = time.Hour

// AccessTokenRef is what decides whether an access token is revoked, read from the verified
// token: its jti, its grant id, subject, client id and issue time (to the microsecond).
type AccessTokenRef struct {
	JTI, GrantID, Subject, ClientID string
	IssuedAt                        time.Time
}

// CoverAccessTokenLifespan raises the longest access-token lifespan the store's revocation
// rules must outlive to d (it never lowers it): a rule revoking a subject's or a grant's
// tokens lives until every token issued before it has expired, d after the rule. The
// provider calls it with its access-token lifespan; until then it is
// DefaultAccessTokenLifespan.
func (s *Store) CoverAccessTokenLifespan(d time.Duration) {
	for {
		cur := s.accessLifespan.Load()
		if int64(d) <= cur || s.accessLifespan.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// accessTokenLifespan is the lifespan CoverAccessTokenLifespan set, or the default.
func (s *Store) accessTokenLifespan() time.Duration {
	if d := time.Duration(s.accessLifespan.Load()); d > DefaultAccessTokenLifespan {
		return d
	}
	return DefaultAccessTokenLifespan
}

// AccessTokenRevoked reports whether a revocation rule matches the access token: a rule on
// its jti, on its grant, on its (subject, client), on its subject or on its client, made
// after the token was issued. It is one indexed query, which concurrent checks share (see
// coalescer): every check is answered by a statement that started after the check did, so
// a rule committed before it began, on any replica, is always seen.
func (s *Store) AccessTokenRevoked(ctx context.Context, t AccessTokenRef) (bool, error) {
	keys := [...]string{jtiKey(t.JTI), grantKey(t.GrantID), subjectClientKey(t.Subject, t.ClientID),
		subjectKey(t.Subject), clientKey(t.ClientID)}
	var rules map[string]int64
	var err error
	if s.txFrom(ctx) != nil {
		// In a transaction: its own statement, which sees the transaction's uncommitted rules.
		rules, err = s.ruleTimes(ctx, keys[:])
	} else {
		rules, err = s.rules.lookup(ctx, keys[:]...)
	}
	if err != nil {
		return false, fmt.Errorf("storage: check revocation rules: %w", err)
	}
	issued := micros(t.IssuedAt)
	for _, k := range keys {
		if before, ok := rules[k]; ok && before > issued {
			return true, nil
		}
	}
	return false, nil
}

// ruleTimes reads the issued_before of the rules on keys, those that exist: the query of
// the revocation checks, one primary-key probe a key.
func (s *Store) ruleTimes(ctx context.Context, keys []string) (map[string]int64, error) {
	rows, err := s.conn(ctx).Raw(s.sql(`SELECT rule_key, issued_before FROM {revocation_rules} WHERE `+
		s.inKeyList("rule_key")), keyList(keys)).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[string]int64, len(keys))
	for rows.Next() {
		var key string
		var before int64
		if err := rows.Scan(&key, &before); err != nil {
			return nil, unavailable(err)
		}
		found[key] = before
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(err)
	}
	return found, nil
}

// RevokeAccessTokenID revokes the one access token with that jti, which expires at exp
// (the rule lives until then). Revoking a token twice is not an error.
func (s *Store) RevokeAccessTokenID(ctx context.Context, jti string, exp time.Time) error {
	return s.addRule(s.conn(ctx), jtiKey(jti), math.MaxInt64, utc(exp))
}

// RevokeGrantAccessTokensBefore revokes the access tokens of the grant (fosite's request id)
// issued before t, sparing those issued at t or later: a refresh revokes what the grant
// issued before the token it issues, t being that token's issue time.
func (s *Store) RevokeGrantAccessTokensBefore(ctx context.Context, grantID string, t time.Time) error {
	return s.addRule(s.conn(ctx), grantKey(grantID), micros(t), utc(t).Add(s.accessTokenLifespan()))
}

// revokeNow records, on tx, a rule revoking the tokens key matches that were issued up to
// now.
func (s *Store) revokeNow(tx *gorm.DB, key string) error {
	now := s.now()
	return s.addRule(tx, key, micros(now)+1, utc(now).Add(s.accessTokenLifespan()))
}

// addRule records, on tx, the rule revoking the tokens key matches issued before
// issuedBefore (microseconds), kept until expires. A rule already on key keeps the later of
// both times, in the same statement, so concurrent revocations never lower one another.
func (s *Store) addRule(tx *gorm.DB, key string, issuedBefore int64, expires time.Time) error {
	err := tx.Exec(s.sql(`INSERT INTO {revocation_rules} (rule_key, issued_before, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (rule_key) DO UPDATE SET
		issued_before = CASE WHEN excluded.issued_before > {revocation_rules}.issued_before
			THEN excluded.issued_before ELSE {revocation_rules}.issued_before END,
		expires_at = CASE WHEN excluded.expires_at > {revocation_rules}.expires_at
			THEN excluded.expires_at ELSE {revocation_rules}.expires_at END`),
		key, issuedBefore, expires).Error
	if err != nil {
		return fmt.Errorf("storage: add revocation rule: %w", err)
	}
	return nil
}

// micros is t in microseconds since the Unix epoch, the unit of a rule's issued_before.
func micros(t time.Time) int64 { return t.UnixMicro() }

// The keys of the four kinds of rule. A subject and client pair is length-prefixed, so no
// pair of ids can spell another's key.
func jtiKey(jti string) string { return "jti:" + jti }

func grantKey(grantID string) string { return "grant:" + grantID }

func subjectKey(subject string) string { return "sub:" + subject }

func clientKey(clientID string) string { return "client:" + clientID }

func subjectClientKey(subject, clientID string) string {
	return "subclient:" + strconv.Itoa(len(subject)) + ":" + subject + clientID
}

// schemaV10 is the revocation-rule table; rule_key is its primary key, the index every
// check probes, and expires_at is indexed for the janitor.
func schemaV10() []string {
	return []string{
		`CREATE TABLE {revocation_rules} (
		rule_key {text} PRIMARY KEY,
		issued_before {int} NOT NULL,
		expires_at {time} NOT NULL
	)`,
		`CREATE INDEX {revocation_rules_expires_at_idx} ON {revocation_rules} (expires_at)`,
	}
}
