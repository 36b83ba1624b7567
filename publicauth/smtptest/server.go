package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/mail"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// WaitTimeout bounds how long WaitFor waits for a message.
const WaitTimeout = 10 * time.Second

// Message is one message the server received.
type Message struct {
	// From is the decoded From header, e.g. `"Gatehouse" <no-reply@example.com>`.
	From string
	// To are the envelope recipients (RCPT TO), as the client sent them.
	To []string
	// Subject is the decoded Subject header.
	Subject string
	// Text and HTML are the decoded text/plain and text/html bodies (the first of each, at
	// any depth of multipart), with line endings turned into "\n"; empty when absent.
	Text, HTML string
	// Header is the message's top-level header, undecoded.
	Header mail.Header
	// TLS reports whether the message came over TLS (STARTTLS or implicit TLS); User is the
	// name the client authenticated as, empty without AUTH.
	TLS  bool
	User string
}

// Option configures a Server started by Start.
type Option func(*config)

type config struct {
	user, pass  string
	startTLS    bool
	implicitTLS bool
	failCode    int
}

// WithAuth makes the server offer AUTH PLAIN and refuse mail from a client that has not
// authenticated as user with pass. Without WithTLS or WithImplicitTLS the server offers AUTH
// on the plain connection too (publicauth's SMTPMailer sends credentials only over TLS, so
// pair WithAuth with one of them for it).
func WithAuth(user, pass string) Option {
	return func(c *config) { c.user, c.pass = user, pass }
}

// WithTLS makes the server offer STARTTLS (RFC 3207) with a self-signed certificate for
// 127.0.0.1; RootCAs and TLSConfig give a client what it needs to trust it.
func WithTLS() Option {
	return func(c *config) { c.startTLS = true }
}

// WithImplicitTLS makes the server speak TLS from the first byte (RFC 8314, smtps) with a
// self-signed certificate for 127.0.0.1; URL then starts with smtps://.
func WithImplicitTLS() Option {
	return func(c *config) { c.implicitTLS = true }
}

// FailWith makes the server answer DATA with the SMTP reply code (400 to 599), so no
// message is ever accepted: for tests of delivery failures.
func FailWith(code int) Option {
	return func(c *config) { c.failCode = code }
}

// Server is a running test SMTP server. It is safe for concurrent use.
type Server struct {
	cfg  config
	addr string
	pool *x509.CertPool

	mu       sync.Mutex
	received []receivedMessage
	changed  chan struct{} // closed and replaced whenever a message arrives
}

type receivedMessage struct {
	Message
	takenBy map[string]bool // lower-cased recipients WaitFor handed it to
}

// Start starts a server on 127.0.0.1 on a free port with opts and stops it when the test
// ends. It fails the test when the server cannot start or an option is invalid.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{changed: make(chan struct{})}
	for _, opt := range opts {
		opt(&s.cfg)
	}
	if s.cfg.startTLS && s.cfg.implicitTLS {
		t.Fatal("smtptest: WithTLS and WithImplicitTLS exclude each other")
	}
	if s.cfg.failCode != 0 && (s.cfg.failCode < 400 || s.cfg.failCode > 599) {
		t.Fatalf("smtptest: FailWith(%d): want a code from 400 to 599", s.cfg.failCode)
	}

	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{server: s, conn: c}, nil
	}))
	srv.Domain = "smtptest.localhost"
	srv.ReadTimeout = WaitTimeout
	srv.WriteTimeout = WaitTimeout
	srv.MaxMessageBytes = 10 << 20
	srv.AllowInsecureAuth = !s.cfg.startTLS && !s.cfg.implicitTLS
	logs := &testLog{t: t}
	srv.ErrorLog = log.New(logs, "smtptest: ", 0)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	s.addr = l.Addr().String()
	if s.cfg.startTLS || s.cfg.implicitTLS {
		cert, pool, err := selfSignedCert()
		if err != nil {
			l.Close()
			t.Fatalf("smtptest: %v", err)
		}
		s.pool = pool
		tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if s.cfg.startTLS {
			srv.TLSConfig = tlsConfig
		} else {
			l = tls.NewListener(l, tlsConfig)
		}
	}

	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(l) // returns nil once Close is called
	}()
	t.Cleanup(func() {
		srv.Close()
		// Close closes only the listeners Serve has registered; if Serve has not started
		// yet, closing l ourselves still ends it.
		l.Close()
		<-served
		logs.stop()
	})
	return s
}

// URL returns the server's URL for publicauth.NewSMTPMailer:
// smtp://[user:pass@]127.0.0.1:port, or smtps://… with WithImplicitTLS.
func (s *Server) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.addr}
	if s.cfg.implicitTLS {
		u.Scheme = "smtps"
	}
	if s.cfg.user != "" {
		u.User = url.UserPassword(s.cfg.user, s.cfg.pass)
	}
	return u.String()
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// RootCAs returns a pool holding the server's self-signed certificate, or nil when the
// server does no TLS.
func (s *Server) RootCAs() *x509.CertPool { return s.pool }

// TLSConfig returns a client configuration that trusts the server's certificate, or nil when
// the server does no TLS.
func (s *Server) TLSConfig() *tls.Config {
	if s.pool == nil {
		return nil
	}
	return &tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12}
}

// Messages returns every message received so far, oldest first, WaitFor's included.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.received))
	for i, r := range s.received {
		out[i] = r.Message
	}
	return out
}

// Count returns how many messages received so far are addressed to to (compared
// case-insensitively), WaitFor's included.
func (s *Server) Count(to string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.received {
		if r.addressedTo(to) {
			n++
		}
	}
	return n
}

// Reset forgets every message received so far.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = nil
}

// WaitFor returns the oldest message addressed to to (compared case-insensitively) that no
// earlier WaitFor for to returned, waiting for it up to WaitTimeout. It fails the test when none
// arrives in time, so call it from the test's goroutine.
func (s *Server) WaitFor(t testing.TB, to string) Message {
	t.Helper()
	deadline := time.NewTimer(WaitTimeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for i := range s.received {
			if r := &s.received[i]; !r.takenBy[strings.ToLower(to)] && r.addressedTo(to) {
				r.takenBy[strings.ToLower(to)] = true
				s.mu.Unlock()
				return r.Message
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("smtptest: no new message to %s within %s (%d received in all)", to, WaitTimeout, len(s.Messages()))
			return Message{}
		}
	}
}

func (r *receivedMessage) addressedTo(to string) bool {
	for _, rcpt := range r.To {
		if strings.EqualFold(rcpt, to) {
			return true
		}
	}
	return false
}

func (s *Server) add(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, receivedMessage{Message: m, takenBy: map[string]bool{}})
	close(s.changed)
	s.changed = make(chan struct{})
}

// session is one SMTP transaction state of a connection.
type session struct {
	server *Server
	conn   *smtp.Conn
	user   string // authenticated user, empty before AUTH
	from   string
	to     []string
}

var _ smtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string {
	if ss.server.cfg.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if ss.server.cfg.user == "" || mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if (identity != "" && identity != user) || user != ss.server.cfg.user || pass != ss.server.cfg.pass {
			return smtp.ErrAuthFailed
		}
		ss.user = user
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.server.cfg.user != "" && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if code := ss.server.cfg.failCode; code != 0 {
		return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCodeNotSet, Message: "message refused by smtptest.FailWith"}
	}
	m, err := parseMessage(raw)
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "smtptest cannot parse the message: " + err.Error()}
	}
	m.To = append([]string(nil), ss.to...)
	_, m.TLS = ss.conn.TLSConnectionState()
	m.User = ss.user
	ss.server.add(m)
	return nil
}

func (ss *session) Reset() { ss.from, ss.to = "", nil }

func (ss *session) Logout() error { return nil }

// selfSignedCert makes a short-lived ECDSA certificate for 127.0.0.1 and localhost and a
// pool that trusts it.
func selfSignedCert() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "smtptest"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("create certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("parse certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}

// testLog passes the SMTP server's error log to the test log until stop, after which the
// test may have ended and logging to it would panic.
type testLog struct {
	t       testing.TB
	mu      sync.Mutex
	stopped bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Log(string(bytes.TrimRight(p, "\n")))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
}
