package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// The states of a device code (DeviceCode.Status).
const (
	// DeviceCodePending: the user has not decided yet; the device keeps polling.
	DeviceCodePending = "pending"
	// DeviceCodeApproved: the user approved; the next poll gets the tokens.
	DeviceCodeApproved = "approved"
	// DeviceCodeDenied: the user refused; every poll gets access_denied.
	DeviceCodeDenied = "denied"
	// DeviceCodeIssued: the tokens were issued, once; the code is spent.
	DeviceCodeIssued = "issued"
)

// DeviceCode is one device authorization request (RFC 8628) and its progress.
type DeviceCode struct {
	// DeviceCodeHash is the hex SHA-256 of the device code the device polls with.
	DeviceCodeHash string
	// UserCode is the code the user types, normalized (upper case, no separator).
	UserCode string
	ClientID string
	// RequestID is the grant id of the tokens the code yields (fosite's request id).
	RequestID string
	// Form is the device authorization request's parameters (scope, audience),
	// url.Values.Encode()d.
	Form        string
	RequestedAt time.Time
	ExpiresAt   time.Time
	// PollInterval is the least time between two polls; a faster poll gets slow_down and
	// lengthens it by five seconds (RFC 8628 §3.5).
	PollInterval time.Duration
	LastPolledAt *time.Time
	Status       string
	// Subject is the user who decided, and Session the fosite session the tokens are
	// issued from (JSON, the provider's own); both are set by DecideDeviceCode.
	Subject   string
	Session   string
	DecidedAt *time.Time
}

type deviceCodeModel struct {
	DeviceCodeHash string `gorm:"primaryKey"`
	UserCode       string
	ClientID       string
	RequestID      string
	Form           string
	RequestedAt    time.Time
	ExpiresAt      time.Time
	PollInterval   int64
	LastPolledAt   *time.Time
	Status         string
	Subject        *string
	Session        *string
	DecidedAt      *time.Time
}

func (deviceCodeModel) TableName(n schema.Namer) string { return n.TableName("device_codes") }

func (m *deviceCodeModel) toDeviceCode() *DeviceCode {
	d := &DeviceCode{
		DeviceCodeHash: m.DeviceCodeHash, UserCode: m.UserCode, ClientID: m.ClientID,
		RequestID: m.RequestID, Form: m.Form,
		RequestedAt: timeUTC(m.RequestedAt), ExpiresAt: timeUTC(m.ExpiresAt),
		PollInterval: time.Duration(m.PollInterval) * time.Second,
		LastPolledAt: timePtrUTC(m.LastPolledAt), Status: m.Status,
		DecidedAt: timePtrUTC(m.DecidedAt),
	}
	if m.Subject != nil {
		d.Subject = *m.Subject
	}
	if m.Session != nil {
		d.Session = *m.Session
	}
	return d
}

// CreateDeviceCode inserts d as a pending device code. It returns ErrConflict when its
// device code hash or its user code is taken (by a live row or one the janitor has not
// removed yet): the caller draws new codes.
func (s *Store) CreateDeviceCode(ctx context.Context, d *DeviceCode) error {
	m := deviceCodeModel{
		DeviceCodeHash: d.DeviceCodeHash, UserCode: d.UserCode, ClientID: d.ClientID,
		RequestID: d.RequestID, Form: d.Form,
		RequestedAt: utc(d.RequestedAt), ExpiresAt: utc(d.ExpiresAt),
		PollInterval: int64(d.PollInterval / time.Second), Status: DeviceCodePending,
	}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
	if err != nil {
		if isDuplicate(err) {
			return ErrConflict
		}
		return fmt.Errorf("storage: create device code: %w", err)
	}
	d.Status = DeviceCodePending
	return nil
}

// PendingDeviceCode returns the device code with that user code while it waits for the
// user's decision (pending and unexpired at now), or ErrNotFound.
func (s *Store) PendingDeviceCode(ctx context.Context, userCode string, now time.Time) (*DeviceCode, error) {
	return s.takeDeviceCode(ctx, "user_code = ? AND status = ? AND expires_at > ?", userCode, DeviceCodePending, utc(now))
}

// DeviceCodeByHash returns the device code with that device code hash whatever its state,
// expired or not, or ErrNotFound.
func (s *Store) DeviceCodeByHash(ctx context.Context, hash string) (*DeviceCode, error) {
	return s.takeDeviceCode(ctx, "device_code_hash = ?", hash)
}

func (s *Store) takeDeviceCode(ctx context.Context, where string, args ...any) (*DeviceCode, error) {
	var m deviceCodeModel
	if err := s.conn(ctx).Where(where, args...).Take(&m).Error; err != nil {
		if isNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("storage: get device code: %w", err)
	}
	return m.toDeviceCode(), nil
}

// PollDeviceCode records a poll at now of the pending device code d (as read by
// DeviceCodeByHash). tooSoon is the caller's judgment that the poll came before d's interval
// had passed since the previous one (d.LastPolledAt): such a poll lengthens the interval
// by five seconds (RFC 8628 §3.5 slow_down). It reports whether the device must slow
// down: tooSoon, or the poll raced another poll of the same code. The update is
// conditional on the previous poll time d holds, so of two concurrent polls one slows
// down.
func (s *Store) PollDeviceCode(ctx context.Context, d *DeviceCode, now time.Time, tooSoon bool) (slowDown bool, err error) {
	now = utc(now)
	interval := int64(d.PollInterval / time.Second)
	if tooSoon {
		interval += 5
	}
	q := s.conn(ctx).Model(&deviceCodeModel{}).Where("device_code_hash = ? AND status = ?", d.DeviceCodeHash, DeviceCodePending)
	if d.LastPolledAt == nil {
		q = q.Where("last_polled_at IS NULL")
	} else {
		q = q.Where("last_polled_at = ?", utc(*d.LastPolledAt))
	}
	res := q.Updates(map[string]any{"last_polled_at": now, "poll_interval": interval})
	if res.Error != nil {
		return false, fmt.Errorf("storage: poll device code: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		// Another poll got there first (or the user decided just now): this one waits.
		return true, nil
	}
	d.LastPolledAt, d.PollInterval = &now, time.Duration(interval)*time.Second
	return tooSoon, nil
}

// DecideDeviceCode records the user's decision on the pending device code with that hash:
// approved with the subject and the session the tokens will carry, or denied. It returns
// ErrNotFound when the code is not pending and unexpired at now (decided already, spent or
// expired), so of two decisions only the first counts.
func (s *Store) DecideDeviceCode(ctx context.Context, hash string, approve bool, subject, session string, now time.Time) error {
	status := DeviceCodeDenied
	values := map[string]any{"decided_at": utc(now)}
	if approve {
		status = DeviceCodeApproved
		values["subject"], values["session"] = subject, session
	}
	values["status"] = status
	res := s.conn(ctx).Model(&deviceCodeModel{}).
		Where("device_code_hash = ? AND status = ? AND expires_at > ?", hash, DeviceCodePending, utc(now)).
		Updates(values)
	if res.Error != nil {
		return fmt.Errorf("storage: decide device code: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// SpendDeviceCode marks the approved device code with that hash issued, unless it expired
// at now. It returns ErrNotFound when it is not approved (issued already, by a concurrent
// poll among others) or has expired: run in the transaction that stores the tokens, it
// makes them be issued once.
func (s *Store) SpendDeviceCode(ctx context.Context, hash string, now time.Time) error {
	res := s.conn(ctx).Model(&deviceCodeModel{}).
		Where("device_code_hash = ? AND status = ? AND expires_at > ?", hash, DeviceCodeApproved, utc(now)).
		Update("status", DeviceCodeIssued)
	if res.Error != nil {
		return fmt.Errorf("storage: spend device code: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}
