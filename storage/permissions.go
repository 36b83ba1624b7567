package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-id/gatehouse/permissions"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

var _ permissions.Store = (*Store)(nil)

type permissionModel struct {
	UserID      string `gorm:"primaryKey"`
	ClientID    string `gorm:"primaryKey"`
	Status      string
	Role        string
	HasAccess   bool
	RequestedAt *time.Time
	GrantedAt   *time.Time
	GrantedBy   string
	CreatedAt   time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt   time.Time `gorm:"autoUpdateTime:false"`
}

func (permissionModel) TableName(n schema.Namer) string { return n.TableName("permissions") }

func (m *permissionModel) toRecord() *permissions.Record {
	return &permissions.Record{
		UserID: m.UserID, ClientID: m.ClientID, Status: m.Status, Role: m.Role, HasAccess: m.HasAccess,
		RequestedAt: timePtrUTC(m.RequestedAt), GrantedAt: timePtrUTC(m.GrantedAt), GrantedBy: m.GrantedBy,
		CreatedAt: timeUTC(m.CreatedAt), UpdatedAt: timeUTC(m.UpdatedAt),
	}
}

// Permission returns the record of (userID, clientID) without AppName, or
// permissions.ErrNoRecord. Inside a transaction on Postgres it takes the row lock
// (SELECT … FOR UPDATE); SQLite's transactions already hold the database's write lock
// (BEGIN IMMEDIATE), so changes of one pair never interleave on either database.
func (s *Store) Permission(ctx context.Context, userID, clientID string) (*permissions.Record, error) {
	db := s.conn(ctx)
	if s.dialect == dialectPostgres && s.txFrom(ctx) != nil {
		db = db.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var m permissionModel
	if err := db.Take(&m, "user_id = ? AND client_id = ?", userID, clientID).Error; err != nil {
		if isNotFound(err) {
			return nil, permissions.ErrNoRecord
		}
		return nil, fmt.Errorf("storage: get permission: %w", err)
	}
	return m.toRecord(), nil
}

// SavePermission inserts r (created) or updates the record of (r.UserID, r.ClientID) to r.
// An insert that collides with a record inserted meanwhile returns
// permissions.ErrRecordExists (in a savepoint, so ctx's transaction stays usable); one for a
// missing client returns permissions.ErrUnknownClient. The user id is not checked: it need
// not be a row of users (v9). An update
// of a missing record returns permissions.ErrNoRecord.
func (s *Store) SavePermission(ctx context.Context, r *permissions.Record, created bool) error {
	m := permissionModel{
		UserID: r.UserID, ClientID: r.ClientID, Status: r.Status, Role: r.Role, HasAccess: r.HasAccess,
		RequestedAt: utcPtr(r.RequestedAt), GrantedAt: utcPtr(r.GrantedAt), GrantedBy: r.GrantedBy,
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt),
	}
	if created {
		err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(&m).Error })
		switch {
		case err == nil:
			return nil
		case isDuplicate(err):
			return permissions.ErrRecordExists
		case isForeignKey(err):
			// Only the client is a foreign key: a record refers to its account by id,
			// which need not be a row of users (v9).
			return permissions.ErrUnknownClient
		}
		return fmt.Errorf("storage: insert permission: %w", err)
	}
	res := s.conn(ctx).Model(&permissionModel{}).
		Where("user_id = ? AND client_id = ?", r.UserID, r.ClientID).
		Updates(map[string]any{
			"status": m.Status, "role": m.Role, "has_access": m.HasAccess, "requested_at": m.RequestedAt,
			"granted_at": m.GrantedAt, "granted_by": m.GrantedBy, "updated_at": m.UpdatedAt,
		})
	switch {
	case res.Error != nil:
		return fmt.Errorf("storage: update permission: %w", res.Error)
	case res.RowsAffected == 0:
		return permissions.ErrNoRecord
	}
	return nil
}

// afterKeyset restricts db to rows after the cursor in the order (timeCol, keyCol).
func afterKeyset(db *gorm.DB, timeCol, keyCol string, after permissions.Cursor) *gorm.DB {
	if after.IsZero() {
		return db
	}
	at := utc(after.At)
	return db.Where(timeCol+" > ? OR ("+timeCol+" = ? AND "+keyCol+" > ?)", at, at, after.Key)
}

// ListPermissions returns up to limit records of clientID (of that status, unless status is
// empty) after the cursor, ordered by (CreatedAt, UserID); AppName is left empty.
func (s *Store) ListPermissions(ctx context.Context, clientID, status string, after permissions.Cursor, limit int) ([]*permissions.Record, error) {
	db := s.conn(ctx).Where("client_id = ?", clientID)
	if status != "" {
		db = db.Where("status = ?", status)
	}
	var ms []permissionModel
	err := afterKeyset(db, "created_at", "user_id", after).Order("created_at, user_id").Limit(limit).Find(&ms).Error
	if err != nil {
		return nil, fmt.Errorf("storage: list permissions: %w", err)
	}
	out := make([]*permissions.Record, 0, len(ms))
	for i := range ms {
		out = append(out, ms[i].toRecord())
	}
	return out, nil
}
