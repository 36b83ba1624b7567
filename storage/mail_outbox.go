package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/schema"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

type mailOutboxModel struct {
	ID            string `gorm:"primaryKey"`
	Kind          string
	UserID        string
	Sealed        []byte
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	NextAttemptAt time.Time
	Attempts      int
	LastError     string
	FailedAt      *time.Time
	MailExpiresAt time.Time
	ExpiresAt     time.Time
}

func (mailOutboxModel) TableName(n schema.Namer) string { return n.TableName("mail_outbox") }

func (m mailOutboxModel) toQueued() publicauth.QueuedMail {
	return publicauth.QueuedMail{
		ID: m.ID, Kind: m.Kind, UserID: m.UserID, Sealed: m.Sealed,
		CreatedAt: timeUTC(m.CreatedAt), MailExpiresAt: timeUTC(m.MailExpiresAt), PurgeAt: timeUTC(m.ExpiresAt),
		Attempts: m.Attempts, LastError: m.LastError, FailedAt: timePtrUTC(m.FailedAt),
	}
}

// EnqueueMail inserts m into the mail outbox, due at its CreatedAt. Inside a transaction
// it is part of it, so the mail exists exactly when the token or challenge it carries does.
func (s *Store) EnqueueMail(ctx context.Context, m *publicauth.QueuedMail) error {
	row := mailOutboxModel{
		ID: m.ID, Kind: m.Kind, UserID: m.UserID, Sealed: m.Sealed,
		CreatedAt: utc(m.CreatedAt), NextAttemptAt: utc(m.CreatedAt),
		MailExpiresAt: utc(m.MailExpiresAt), ExpiresAt: utc(m.PurgeAt),
	}
	if err := s.conn(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("storage: queue mail: %w", err)
	}
	return nil
}

// ClaimMail claims up to limit mails due at now for delivery, as ClaimLogouts does logout
// messages: in one short transaction each one's next attempt moves to now+lease and its
// attempt count goes up by one. On Postgres the due rows are read FOR UPDATE SKIP LOCKED, so
// concurrent workers on several replicas claim disjoint sets without waiting; on SQLite the
// transaction holds the database's one write lock. Mails given up on are never claimed.
func (s *Store) ClaimMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]publicauth.QueuedMail, error) {
	rows, err := claimDue[mailOutboxModel](ctx, s, now, lease, limit)
	if err != nil {
		return nil, fmt.Errorf("storage: claim mail: %w", err)
	}
	claimed := make([]publicauth.QueuedMail, 0, len(rows))
	for _, r := range rows {
		claimed = append(claimed, r.toQueued())
	}
	return claimed, nil
}

// MailDelivered deletes the mail with that id: the mail server took it. Deleting a
// missing mail is not an error.
func (s *Store) MailDelivered(ctx context.Context, id string) error {
	if err := s.conn(ctx).Where("id = ?", id).Delete(&mailOutboxModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete delivered mail: %w", err)
	}
	return nil
}

// MailFailed records a failed delivery of the mail with that id: with giveUp false it is
// tried again at next; with giveUp true it is never tried again, its sealed message is
// erased and failed_at set to now, and the janitor deletes the row at its expires_at.
func (s *Store) MailFailed(ctx context.Context, id, reason string, next time.Time, giveUp bool, now time.Time) error {
	set := map[string]any{"next_attempt_at": utc(next), "last_error": truncate(reason, 500)}
	if giveUp {
		set["failed_at"] = utc(now)
		set["sealed"] = nil
	}
	if err := s.conn(ctx).Model(&mailOutboxModel{}).Where("id = ?", id).Updates(set).Error; err != nil {
		return fmt.Errorf("storage: record failed mail delivery: %w", err)
	}
	return nil
}

// MailQueueState counts the mail outbox at now in one statement: mails still to deliver,
// those of them due, and mails given up on.
func (s *Store) MailQueueState(ctx context.Context, now time.Time) (publicauth.MailQueue, error) {
	var q struct{ Queued, Due, GivenUp int64 }
	err := scan(s.conn(ctx).Raw(s.sql(`SELECT
		COALESCE(SUM(CASE WHEN failed_at IS NULL THEN 1 ELSE 0 END), 0) AS queued,
		COALESCE(SUM(CASE WHEN failed_at IS NULL AND next_attempt_at <= ? THEN 1 ELSE 0 END), 0) AS due,
		COALESCE(SUM(CASE WHEN failed_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS given_up
		FROM {mail_outbox}`), utc(now)), &q)
	if err != nil {
		return publicauth.MailQueue{}, fmt.Errorf("storage: count the mail outbox: %w", err)
	}
	return publicauth.MailQueue{Queued: q.Queued, Due: q.Due, GivenUp: q.GivenUp}, nil
}

// PendingMail returns every mail of the outbox, given-up ones included, oldest first: for
// operators and tests. The messages stay sealed.
func (s *Store) PendingMail(ctx context.Context) ([]publicauth.QueuedMail, error) {
	var rows []mailOutboxModel
	if err := s.conn(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("storage: list queued mail: %w", err)
	}
	out := make([]publicauth.QueuedMail, len(rows))
	for i, r := range rows {
		out[i] = r.toQueued()
	}
	return out, nil
}

func (r *mailOutboxModel) outboxID() string { return r.ID }
func (r *mailOutboxModel) countAttempt()    { r.Attempts++ }
