package publicauth

import (
	"context"
	"time"
)

// Message is one email the service sends: a plain-text body and an HTML alternative, both
// rendered from the mail templates.
type Message struct {
	// To is the recipient's bare address.
	To string
	// Subject is one line: SMTPMailer refuses a subject with CR or LF (header injection),
	// and the mail templates render every subject as one line.
	Subject string
	// Text is the plain-text body; HTML the HTML alternative (may be empty).
	Text string
	HTML string
}

// Mailer delivers messages. Send returns once the message was handed to the mail system (an
// SMTP server's 250 after DATA), or with the reason it could not be. Implementations must be
// safe for concurrent use. NewSMTPMailer and NewLogMailer are the two the package ships;
// package smtptest runs a real SMTP server for tests of code that sends mail.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Kinds of mail the service sends; each has a template of that name (see mailTemplates).
const (
	MailVerifyEmail   = "verify_email"
	MailMagicLink     = "magic_link"
	MailPIN           = "pin"
	MailPasswordReset = "password_reset"
	// MailLinkPassword asks the owner of a social-only account to confirm adding the
	// password a registration with their email chose.
	MailLinkPassword = "link_password"
)

// MailData is what a mail template is rendered with.
type MailData struct {
	// Name is the recipient's display name; Email their address.
	Name  string
	Email string
	// Link is the URL the mail asks the user to open (verification, magic link, reset,
	// password linking); empty
	// for MailPIN.
	Link string
	// PIN is the one-time PIN of a MailPIN message; empty otherwise.
	PIN string
	// ExpiresIn is how long Link or PIN stays usable; templates print it with ExpiresInWords.
	ExpiresIn time.Duration
	// ServiceName names the deployment in subjects and greetings (Config.ServiceName).
	ServiceName string
}
