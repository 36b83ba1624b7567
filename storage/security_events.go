package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/schema"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/permissions"
)

// permissionChangedType is the type of the security events that are permission audit
// entries ((*events.PermissionChanged).Name()).
const permissionChangedType = "permission.changed"

// securityEventModel is a row of security_events (migration 20).
type securityEventModel struct {
	ID        string `gorm:"primaryKey"`
	At        time.Time
	Type      string
	UserID    *string
	ClientID  *string
	IP        string `gorm:"column:ip"`
	UserAgent string
	Method    string
	Outcome   string
	Details   string
}

func (securityEventModel) TableName(n schema.Namer) string { return n.TableName("security_events") }

// permissionDetails is the details of a permission.changed event: the permission audit
// entry's actor, action and records (the JSON of permissions.Record; before is null for a
// record created).
type permissionDetails struct {
	Action    string          `json:"action"`
	ActorType string          `json:"actorType"`
	ActorID   string          `json:"actorId"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
}

// SetSecurityEventRetention makes DeleteExpired (the janitor) delete the security events
// older than d. Zero, the default, keeps them forever.
func (s *Store) SetSecurityEventRetention(d time.Duration) { s.eventRetention.Store(int64(max(d, 0))) }

// SetSecurityEventIPTruncation makes AppendSecurityEvent store client addresses cut to
// their network (events.TruncateIP: an IPv4 /24, an IPv6 /48). Off by default.
func (s *Store) SetSecurityEventIPTruncation(on bool) { s.truncateIPs.Store(on) }

// RecordSecurityEvent is the audit trail's events.Recorder: it appends the record of e
// (events.RecordOf) to security_events on ctx's transaction. Events the trail does not
// store are skipped.
func (s *Store) RecordSecurityEvent(ctx context.Context, e events.Event) error {
	r := events.RecordOf(e)
	if r == nil {
		return nil
	}
	return s.AppendSecurityEvent(ctx, r)
}

// AppendSecurityEvent appends r to the audit trail, on the transaction ctx carries when
// there is one (so it commits or rolls back with the change it records), else on its own.
// An empty r.ID gets a time-ordered one (UUIDv7); a zero r.At the store's now; nil
// Details "{}". The address is truncated when SetSecurityEventIPTruncation is on and the
// user agent cut to events.MaxUserAgent bytes. r is not changed.
func (s *Store) AppendSecurityEvent(ctx context.Context, r *events.Record) error {
	m := securityEventModel{
		ID: r.ID, At: utc(r.At), Type: r.Type, UserID: nullable(r.UserID), ClientID: nullable(r.ClientID),
		UserAgent: r.UserAgent, Method: r.Method, Outcome: r.Outcome, Details: string(r.Details),
	}
	if m.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("storage: security event id: %w", err)
		}
		m.ID = id.String()
	}
	if r.At.IsZero() {
		m.At = utc(s.now())
	}
	if m.Details == "" {
		m.Details = "{}"
	}
	ip := r.IP
	if s.truncateIPs.Load() {
		ip = events.TruncateIP(ip)
	}
	if ip.IsValid() {
		m.IP = ip.String()
	}
	if len(m.UserAgent) > events.MaxUserAgent {
		m.UserAgent = m.UserAgent[:events.MaxUserAgent]
	}
	if err := s.conn(ctx).Create(&m).Error; err != nil {
		return fmt.Errorf("storage: append security event: %w", unavailable(err))
	}
	return nil
}

// SecurityEventFilter selects security events; zero fields select everything.
type SecurityEventFilter struct {
	// Type is an event type ("login.failed"), or a family of them ending in ".*"
	// ("permission.*", "login.*").
	Type     string
	UserID   string
	ClientID string
	// Since and Until bound At: Since ≤ At < Until.
	Since, Until time.Time
}

// SecurityEventCursor is where a page of security events ends: the (At, ID) of its last
// event. The zero cursor is the start.
type SecurityEventCursor struct {
	At time.Time
	ID string
}

// SecurityEvent is a stored record with its ID set.
type SecurityEvent = events.Record

// ListSecurityEvents returns up to limit security events matching f after the cursor,
// oldest first (ordered by At, then ID).
func (s *Store) ListSecurityEvents(ctx context.Context, f SecurityEventFilter, after SecurityEventCursor, limit int) ([]*SecurityEvent, error) {
	db := s.conn(ctx)
	if family, ok := strings.CutSuffix(f.Type, ".*"); ok {
		db = db.Where("substr(type, 1, ?) = ?", len(family)+1, family+".")
	} else if f.Type != "" {
		db = db.Where("type = ?", f.Type)
	}
	if f.UserID != "" {
		db = db.Where("user_id = ?", f.UserID)
	}
	if f.ClientID != "" {
		db = db.Where("client_id = ?", f.ClientID)
	}
	if !f.Since.IsZero() {
		db = db.Where("at >= ?", utc(f.Since))
	}
	if !f.Until.IsZero() {
		db = db.Where("at < ?", utc(f.Until))
	}
	if !after.At.IsZero() {
		at := utc(after.At)
		db = db.Where("at > ? OR (at = ? AND id > ?)", at, at, after.ID)
	}
	var ms []securityEventModel
	if err := db.Order("at, id").Limit(limit).Find(&ms).Error; err != nil {
		return nil, fmt.Errorf("storage: list security events: %w", unavailable(err))
	}
	out := make([]*SecurityEvent, 0, len(ms))
	for i := range ms {
		out = append(out, ms[i].toRecord())
	}
	return out, nil
}

func (m *securityEventModel) toRecord() *SecurityEvent {
	r := &SecurityEvent{ID: m.ID, At: timeUTC(m.At), Type: m.Type, UserAgent: m.UserAgent,
		Method: m.Method, Outcome: m.Outcome, Details: json.RawMessage(m.Details)}
	if m.UserID != nil {
		r.UserID = *m.UserID
	}
	if m.ClientID != nil {
		r.ClientID = *m.ClientID
	}
	r.IP, _ = netip.ParseAddr(m.IP) // "" parses to the zero Addr
	return r
}

// deleteOldSecurityEvents deletes the security events older than the retention
// (SetSecurityEventRetention) before now, batch rows per statement; nothing when the
// retention is zero.
func (s *Store) deleteOldSecurityEvents(ctx context.Context, now time.Time, batch int) (int64, error) {
	retention := time.Duration(s.eventRetention.Load())
	if retention <= 0 {
		return 0, nil
	}
	cutoff := utc(now.Add(-retention))
	stmt := s.sql(`DELETE FROM {security_events} WHERE id IN
		(SELECT id FROM {security_events} WHERE at < ? ORDER BY at LIMIT ?)`)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		res := s.conn(ctx).Exec(stmt, cutoff, batch)
		if res.Error != nil {
			return total, fmt.Errorf("storage: delete old security events: %w", res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < int64(batch) {
			return total, nil
		}
	}
}

// AddAuditEntry appends e to the audit trail as a permission.changed security event, with
// the client address and user agent of the request (events.WithRequest) that made it.
func (s *Store) AddAuditEntry(ctx context.Context, e *permissions.AuditEntry) error {
	d := permissionDetails{Action: e.Action, ActorType: e.Actor.Kind, ActorID: e.Actor.ID}
	var err error
	if d.After, err = json.Marshal(e.After); err != nil {
		return fmt.Errorf("storage: encode audit entry: %w", err)
	}
	if e.Before != nil {
		if d.Before, err = json.Marshal(e.Before); err != nil {
			return fmt.Errorf("storage: encode audit entry: %w", err)
		}
	}
	details, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("storage: encode audit entry: %w", err)
	}
	ip, ua := events.Request(ctx)
	return s.AppendSecurityEvent(ctx, &events.Record{ID: e.ID, At: e.At, Type: permissionChangedType,
		UserID: e.UserID, ClientID: e.ClientID, IP: ip, UserAgent: ua, Outcome: e.Action, Details: details})
}

// ListAuditEntries returns up to limit permission audit entries (the permission.changed
// security events) matching f after the cursor, ordered by (At, ID).
func (s *Store) ListAuditEntries(ctx context.Context, f permissions.AuditFilter, after permissions.Cursor, limit int) ([]*permissions.AuditEntry, error) {
	rs, err := s.ListSecurityEvents(ctx, SecurityEventFilter{Type: permissionChangedType, UserID: f.UserID, ClientID: f.ClientID},
		SecurityEventCursor{At: after.At, ID: after.Key}, limit)
	if err != nil {
		return nil, fmt.Errorf("storage: list audit entries: %w", err)
	}
	out := make([]*permissions.AuditEntry, 0, len(rs))
	for _, r := range rs {
		var d permissionDetails
		if err := json.Unmarshal(r.Details, &d); err != nil {
			return nil, fmt.Errorf("storage: decode audit entry %s: %w", r.ID, err)
		}
		e := &permissions.AuditEntry{ID: r.ID, UserID: r.UserID, ClientID: r.ClientID, Action: d.Action, At: r.At,
			Actor: permissions.Actor{Kind: d.ActorType, ID: d.ActorID}}
		if err := json.Unmarshal(d.After, &e.After); err != nil {
			return nil, fmt.Errorf("storage: decode audit entry %s: %w", r.ID, err)
		}
		if len(d.Before) > 0 && string(d.Before) != "null" {
			if err := json.Unmarshal(d.Before, &e.Before); err != nil {
				return nil, fmt.Errorf("storage: decode audit entry %s: %w", r.ID, err)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// nullable is nil for "", else a pointer to v: the NULL of an event without a user or
// client.
func nullable(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
