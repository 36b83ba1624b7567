package publicauth

import (
	"context"
	"log/slog"
)

// logMailer is the Mailer used when no SMTP server is configured: it writes each message to
// the log instead, so a development server is usable without mail (people copy the link or
// PIN from the log).
type logMailer struct {
	logger *slog.Logger
}

// NewLogMailer returns a Mailer that sends nothing and logs every message at INFO, with its
// recipient, subject and full plain-text body. The body holds sign-in links and PINs, so use
// it only where the log is as private as the mailboxes would be. A nil logger means
// slog.Default().
func NewLogMailer(logger *slog.Logger) Mailer {
	if logger == nil {
		logger = slog.Default()
	}
	return logMailer{logger: logger}
}

// Send logs m and returns nil.
func (l logMailer) Send(ctx context.Context, m Message) error {
	l.logger.InfoContext(ctx, "mail not sent: no SMTP server configured; logging it instead",
		slog.String("to", m.To), slog.String("subject", m.Subject), slog.String("text", m.Text))
	return nil
}
