package publicauth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// DefaultSMTPTimeout bounds one delivery by an SMTPMailer, connecting included, unless
// WithSMTPTimeout says otherwise.
const DefaultSMTPTimeout = 10 * time.Second

// SMTPMailer is the Mailer that hands messages to an SMTP server (RFC 5321), one connection
// per message. It is safe for concurrent use.
type SMTPMailer struct {
	host        string
	port        int
	implicitTLS bool   // smtps://: TLS from the first byte (RFC 8314 §3.3)
	user, pass  string // SMTP AUTH credentials; user empty: no AUTH
	from        *mail.Address
	tlsConfig   *tls.Config
	timeout     time.Duration
}

var _ Mailer = (*SMTPMailer)(nil)

// SMTPOption adjusts an SMTPMailer made by NewSMTPMailer.
type SMTPOption func(*SMTPMailer)

// WithTLSConfig makes the mailer verify the server with cfg (for example a private CA's
// RootCAs) for STARTTLS and implicit TLS. The mailer uses a copy, setting ServerName to the
// URL's host when cfg leaves it empty and MinVersion to TLS 1.2 when cfg leaves it zero. A nil
// cfg, or no WithTLSConfig, means the system roots.
func WithTLSConfig(cfg *tls.Config) SMTPOption {
	return func(m *SMTPMailer) {
		if cfg != nil {
			m.tlsConfig = cfg.Clone()
		}
	}
}

// WithSMTPTimeout bounds one delivery (connect, TLS, AUTH and sending) by d instead of
// DefaultSMTPTimeout. A d of zero or less keeps the default.
func WithSMTPTimeout(d time.Duration) SMTPOption {
	return func(m *SMTPMailer) {
		if d > 0 {
			m.timeout = d
		}
	}
}

// ParseSender parses the sender of every mail: a bare address or "Name <address>" (RFC
// 5322) on one line.
func ParseSender(from string) (*mail.Address, error) {
	addr, err := mail.ParseAddress(from)
	if err != nil || strings.ContainsAny(from, "\r\n") {
		return nil, fmt.Errorf("mail sender %q is not an address or \"Name <address>\"", from)
	}
	return addr, nil
}

// NewSMTPMailer returns a mailer for the server named by rawURL, sending as from.
//
// rawURL is smtp://[user:pass@]host:port, which upgrades to TLS with STARTTLS (RFC 3207)
// when the server offers it, or smtps://[user:pass@]host:port, which speaks TLS from the
// start (RFC 8314). The port is required; user and password are percent-encoded. With
// credentials the mailer authenticates with SMTP AUTH, choosing a mechanism the server
// offers (PLAIN or LOGIN among them), and sends them only over TLS: an smtp:// URL with
// credentials then requires STARTTLS. from is a bare address or "Name <address>" (RFC 5322).
// NewSMTPMailer only checks its arguments; it does not connect.
func NewSMTPMailer(rawURL, from string, opts ...SMTPOption) (*SMTPMailer, error) {
	m := &SMTPMailer{timeout: DefaultSMTPTimeout}
	if err := m.parseURL(rawURL); err != nil {
		return nil, fmt.Errorf("publicauth: SMTP URL: %w", err)
	}
	addr, err := ParseSender(from)
	if err != nil {
		return nil, fmt.Errorf("publicauth: %w", err)
	}
	m.from = addr
	for _, opt := range opts {
		if opt != nil {
			opt(m)
		}
	}
	if m.tlsConfig == nil {
		m.tlsConfig = &tls.Config{}
	}
	if m.tlsConfig.ServerName == "" {
		m.tlsConfig.ServerName = m.host
	}
	if m.tlsConfig.MinVersion == 0 {
		m.tlsConfig.MinVersion = tls.VersionTLS12
	}
	return m, nil
}

// parseURL fills host, port, implicitTLS and the credentials from rawURL. Its errors never
// repeat the URL, which may hold a password.
func (m *SMTPMailer) parseURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("not a valid URL")
	}
	switch u.Scheme {
	case "smtp":
	case "smtps":
		m.implicitTLS = true
	default:
		return fmt.Errorf("scheme must be smtp or smtps, got %q", u.Scheme)
	}
	if u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("must be scheme://[user:password@]host:port with nothing after the port")
	}
	m.host = u.Hostname()
	if m.host == "" {
		return errors.New("host is missing")
	}
	port := u.Port()
	if port == "" {
		example := "smtp://" + m.host + ":587"
		if m.implicitTLS {
			example = "smtps://" + m.host + ":465"
		}
		return fmt.Errorf("port is missing (for example %s)", example)
	}
	if m.port, err = strconv.Atoi(port); err != nil || m.port < 1 || m.port > 65535 {
		return fmt.Errorf("port %q is not between 1 and 65535", port)
	}
	if u.User != nil {
		m.user = u.User.Username()
		pass, ok := u.User.Password()
		if m.user == "" || !ok || pass == "" {
			return errors.New("credentials must be user:password, both non-empty")
		}
		m.pass = pass
	}
	return nil
}

// Send delivers msg: a multipart/alternative message of msg.Text and msg.HTML, or a
// text/plain one when msg.HTML is empty. It returns once the server accepted the message
// (250 after DATA), or with an error saying why not when ctx ends, the delivery takes longer
// than the mailer's timeout, a connection, TLS or AUTH step fails, or the server refuses
// the sender, the recipient or the message.
func (m *SMTPMailer) Send(ctx context.Context, msg Message) error {
	if err := m.send(ctx, msg); err != nil {
		return fmt.Errorf("publicauth: send mail via %s: %w", net.JoinHostPort(m.host, strconv.Itoa(m.port)), err)
	}
	return nil
}

func (m *SMTPMailer) send(ctx context.Context, msg Message) error {
	if strings.ContainsAny(msg.Subject, "\r\n") {
		return errors.New("subject must be a single line")
	}
	to, err := mail.ParseAddress(msg.To)
	if err != nil || to.Name != "" {
		return fmt.Errorf("recipient %q is not a bare address", msg.To)
	}
	em := gomail.NewMsg()
	if err := em.FromFormat(m.from.Name, m.from.Address); err != nil {
		return err
	}
	if err := em.To(to.Address); err != nil {
		return err
	}
	em.Subject(msg.Subject)
	em.SetDate()
	em.SetMessageID()
	em.SetBodyString(gomail.TypeTextPlain, msg.Text)
	if msg.HTML != "" {
		em.AddAlternativeString(gomail.TypeTextHTML, msg.HTML)
	}

	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	client, stop, err := m.client(ctx)
	if err != nil {
		return err
	}
	defer stop()
	err = client.DialAndSendWithContext(ctx, em)
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
		// The connection was closed under the client because ctx ended; say so.
		return fmt.Errorf("%w (%w)", ctxErr, err)
	}
	return err
}

// client returns a go-mail client for one delivery and a function that releases what it
// holds. The client dials through dial, which ties the connection to ctx: when ctx ends, the
// connection is closed, so a stalled server cannot hold Send past its deadline.
func (m *SMTPMailer) client(ctx context.Context) (*gomail.Client, func(), error) {
	var stops []func() bool
	dial := func(dialCtx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(dialCtx, network, addr)
		if err != nil {
			return nil, err
		}
		stops = append(stops, context.AfterFunc(ctx, func() { conn.Close() }))
		if !m.implicitTLS {
			return conn, nil
		}
		tlsConn := tls.Client(conn, m.tlsConfig)
		if err := tlsConn.HandshakeContext(dialCtx); err != nil {
			conn.Close()
			return nil, err
		}
		return tlsConn, nil
	}
	// With credentials, STARTTLS is mandatory: go-mail picks PLAIN or LOGIN only on an
	// encrypted connection, so without TLS AUTH would fail with a vaguer error. On an smtps
	// connection the server offers no STARTTLS and go-mail sees the TLS state of the
	// connection dial returned.
	policy := gomail.TLSOpportunistic
	if m.user != "" && !m.implicitTLS {
		policy = gomail.TLSMandatory
	}
	opts := []gomail.Option{
		gomail.WithPort(m.port),
		gomail.WithTimeout(m.timeout),
		gomail.WithTLSPolicy(policy),
		gomail.WithTLSConfig(m.tlsConfig),
		gomail.WithDialContextFunc(dial),
	}
	if m.user != "" {
		opts = append(opts,
			gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(m.user),
			gomail.WithPassword(m.pass))
	}
	client, err := gomail.NewClient(m.host, opts...)
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	return client, stop, nil
}
