package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// PushedRequest is an authorization request a client pushed to the pushed authorization
// request endpoint (RFC 9126), waiting for the browser to bring its request_uri to the
// authorization endpoint. It is single-use: ConsumePushedRequest hands it out once.
type PushedRequest struct {
	// IDHash is the hex SHA-256 of the request_uri; the request_uri is never stored.
	IDHash string
	// ClientID is the client that pushed it, the only one that may use it.
	ClientID string
	// Form is the URL-encoded parameters of the pushed request, without the client's
	// credentials.
	Form        string
	RequestedAt time.Time
	ExpiresAt   time.Time
}

type pushedRequestModel struct {
	IDHash      string `gorm:"primaryKey"`
	ClientID    string
	Form        string
	RequestedAt time.Time
	ExpiresAt   time.Time
}

func (pushedRequestModel) TableName(n schema.Namer) string { return n.TableName("pushed_requests") }

// CreatePushedRequest inserts r, setting a zero r.RequestedAt to now. It returns
// ErrConflict when a request with r.IDHash exists and ErrNotFound when r.ClientID is no
// client.
func (s *Store) CreatePushedRequest(ctx context.Context, r *PushedRequest) error {
	if r.RequestedAt.IsZero() {
		r.RequestedAt = s.nowUTC()
	}
	m := pushedRequestModel{
		IDHash:      r.IDHash,
		ClientID:    r.ClientID,
		Form:        r.Form,
		RequestedAt: utc(r.RequestedAt),
		ExpiresAt:   utc(r.ExpiresAt),
	}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
	if err != nil {
		switch {
		case isDuplicate(err):
			return ErrConflict
		case isForeignKey(err):
			return ErrNotFound
		}
		return fmt.Errorf("storage: create pushed request: %w", err)
	}
	return nil
}

// ConsumePushedRequest deletes the pushed request with that id hash, pushed by clientID
// and expiring after now, and returns it. It is one conditional delete: of concurrent
// calls for one request exactly one gets it, and every other call, like a call for a
// missing, expired or already consumed request, or one naming another client (which
// leaves a live request to its own client), gets ErrNotFound. An expired request it meets
// is deleted all the same, by whichever client names it: the janitor need not wait for it.
func (s *Store) ConsumePushedRequest(ctx context.Context, idHash, clientID string, now time.Time) (*PushedRequest, error) {
	var rows []pushedRequestModel
	err := scan(s.conn(ctx).Raw(s.sql(`DELETE FROM {pushed_requests}
		WHERE id_hash = ? AND (client_id = ? OR expires_at <= ?)
		RETURNING id_hash, client_id, form, requested_at, expires_at`), idHash, clientID, utc(now)), &rows)
	if err != nil {
		return nil, fmt.Errorf("storage: consume pushed request: %w", err)
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	m := rows[0]
	if m.ClientID != clientID || !timeUTC(m.ExpiresAt).After(now) {
		return nil, ErrNotFound // expired: deleted, and of no use
	}
	return &PushedRequest{
		IDHash:      m.IDHash,
		ClientID:    m.ClientID,
		Form:        m.Form,
		RequestedAt: timeUTC(m.RequestedAt),
		ExpiresAt:   timeUTC(m.ExpiresAt),
	}, nil
}
