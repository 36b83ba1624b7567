package storage

import (
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// schemaV20 creates the audit trail, security_events: one append-only row per security
// event (package events, RecordOf), written in the transaction of the change it records.
// Like the permission audit log it replaces, it has no foreign keys: it is history and
// outlives the users and clients it names. user_id and client_id are NULL when the event
// has none. Every listing pages by keyset in (at, id), so each filter has an index in that
// order.
func schemaV20() []string {
	return []string{
		`CREATE TABLE {security_events} (
		id {text} PRIMARY KEY,
		at {time} NOT NULL,
		type {text} NOT NULL,
		user_id {text},
		client_id {text},
		ip {text} NOT NULL DEFAULT '',
		user_agent {text} NOT NULL DEFAULT '',
		method {text} NOT NULL DEFAULT '',
		outcome {text} NOT NULL DEFAULT '',
		details {text} NOT NULL DEFAULT '{}'
	)`,
		`CREATE INDEX {security_events_at_idx} ON {security_events} (at, id)`,
		`CREATE INDEX {security_events_user_at_idx} ON {security_events} (user_id, at, id)`,
		`CREATE INDEX {security_events_client_at_idx} ON {security_events} (client_id, at, id)`,
		`CREATE INDEX {security_events_type_at_idx} ON {security_events} (type, at, id)`,
	}
}

// migrateV20 creates security_events, moves every permission audit entry into it as a
// permission.changed event (its id, time, user and client kept; actor, action and the
// records before and after in details, see permissionDetails), and drops permission_audit:
// one table holds the audit trail.
func migrateV20(tx *gorm.DB, n schemaNames) error {
	if err := execAll(tx, n, schemaV20()); err != nil {
		return err
	}
	type oldEntry struct {
		ID, UserID, ClientID, ActorType, ActorID, Action string
		BeforeRecord                                     *string
		AfterRecord                                      string
		At                                               time.Time
	}
	const batch = 500
	last := ""
	for {
		var rows []oldEntry
		err := scan(tx.Raw(n.sql(`SELECT id, user_id, client_id, actor_type, actor_id, action, before_record, after_record, at
			FROM {permission_audit} WHERE id > ? ORDER BY id LIMIT ?`), last, batch), &rows)
		if err != nil {
			return fmt.Errorf("read permission_audit: %w", err)
		}
		for _, r := range rows {
			d := permissionDetails{Action: r.Action, ActorType: r.ActorType, ActorID: r.ActorID,
				After: json.RawMessage(r.AfterRecord)}
			if r.BeforeRecord != nil {
				d.Before = json.RawMessage(*r.BeforeRecord)
			}
			details, err := json.Marshal(d)
			if err != nil {
				return fmt.Errorf("permission audit entry %s: %w", r.ID, err)
			}
			err = tx.Exec(n.sql(`INSERT INTO {security_events} (id, at, type, user_id, client_id, outcome, details)
				VALUES (?, ?, ?, ?, ?, ?, ?)`), r.ID, utc(r.At), permissionChangedType, r.UserID, r.ClientID, r.Action, string(details)).Error
			if err != nil {
				return fmt.Errorf("move permission audit entry %s: %w", r.ID, err)
			}
		}
		if len(rows) < batch {
			break
		}
		last = rows[len(rows)-1].ID
	}
	return execAll(tx, n, []string{`DROP TABLE {permission_audit}`})
}
