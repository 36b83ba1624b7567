package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"gorm.io/gorm"
)

// legacyResumePrefix began the resume path that rows of mailed links and PIN challenges
// kept before v7, the paused request's token in clear in its `request` parameter.
const legacyResumePrefix = "/api/oauth/authorize/resume?"

// migrateV7 gives one-time tokens and PIN challenges a paused_request column, the reference
// to the paused authorization request (the hex SHA-256 of its token) that replaces the
// token kept in clear in resume. Rows written before hold such a path; they live minutes,
// but the token must not stay readable, so each is rewritten to the reference, which works
// as before, and its resume emptied.
func migrateV7(tx *gorm.DB, n schemaNames) error {
	for _, table := range []struct{ name, key string }{{"{one_time_tokens}", "id_hash"}, {"{pin_challenges}", "id"}} {
		if err := tx.Exec(n.sql(`ALTER TABLE ` + table.name + ` ADD COLUMN paused_request {text} NOT NULL DEFAULT ''`)).Error; err != nil {
			return err
		}
		var rows []struct{ RowKey, Resume string }
		err := scan(tx.Raw(n.sql(`SELECT `+table.key+` AS row_key, resume FROM `+table.name+` WHERE resume LIKE ?`), legacyResumePrefix+"%"), &rows)
		if err != nil {
			return err
		}
		for _, row := range rows {
			err := tx.Exec(n.sql(`UPDATE `+table.name+` SET resume = '', paused_request = ? WHERE `+table.key+` = ?`),
				legacyPausedRequest(row.Resume), row.RowKey).Error
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// legacyPausedRequest is the reference to the paused request a pre-v7 resume path names,
// or "" (the login then ends on the signed-in page) when it names none.
func legacyPausedRequest(resume string) string {
	q, err := url.ParseQuery(strings.TrimPrefix(resume, legacyResumePrefix))
	if err != nil || q.Get("request") == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(q.Get("request")))
	return hex.EncodeToString(sum[:])
}
