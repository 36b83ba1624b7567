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
	// Security notices about second factors (MailFactorNotice): one was added, one was
	// removed, a recovery code was used. They carry no link and no PIN.
	MailFactorAdded      = "factor_added"
	MailFactorRemoved    = "factor_removed"
	MailRecoveryCodeUsed = "recovery_code_used"
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

	// The fields of the second-factor notices (MailFactorAdded, MailFactorRemoved,
	// MailRecoveryCodeUsed). Factor is the factor's kind ("totp", "passkey",
	// "recovery_codes"), FactorName a passkey's name; templates print FactorWords. At is
	// when it happened, printed in UTC; ClientIP the address it came from ("" when not
	// from a request); Remaining the recovery codes left after one was used.
	Factor     string
	FactorName string
	At         time.Time
	ClientIP   string
	Remaining  int
}

// FactorWords names the factor of a notice the way a sentence does: "an authenticator
// app", "the passkey “Laptop”" (or "a passkey"), "a set of recovery codes".
func (d MailData) FactorWords() string {
	switch d.Factor {
	case "totp":
		return "an authenticator app"
	case "passkey":
		if d.FactorName != "" {
			return "the passkey “" + d.FactorName + "”"
		}
		return "a passkey"
	case "recovery_codes":
		return "a set of recovery codes"
	}
	return "a second factor"
}
