package storage

// schemaV22 is the durable mail outbox, mail_outbox: every mail publicauth sends (magic
// link, password reset, email verification, PIN, password linking) is written here, in the
// transaction that stores its link token or PIN challenge, and deleted once the mail server
// took it. sealed is the message (recipient, subject, bodies) sealed by publicauth with
// AES-GCM under a key derived from the system secret: the mails carry live links and PINs.
// mail_expires_at is when that link or PIN stops working (retrying after it is pointless);
// a mail given up on keeps its row, failed_at set and sealed emptied, and every row is
// deleted by the janitor at expires_at (mail_expires_at plus a few days for operators).
func schemaV22() []string {
	return []string{
		`CREATE TABLE {mail_outbox} (
		id {text} PRIMARY KEY,
		kind {text} NOT NULL,
		user_id {text} NOT NULL DEFAULT '',
		sealed {blob},
		created_at {time} NOT NULL,
		next_attempt_at {time} NOT NULL,
		attempts {int} NOT NULL DEFAULT 0,
		last_error {text} NOT NULL DEFAULT '',
		failed_at {time},
		mail_expires_at {time} NOT NULL,
		expires_at {time} NOT NULL
	)`,
		`CREATE INDEX {mail_outbox_next_attempt_at_idx} ON {mail_outbox} (next_attempt_at)`,
		`CREATE INDEX {mail_outbox_expires_at_idx} ON {mail_outbox} (expires_at)`,
	}
}
