package publicauth_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
)

const testSender = "Gatehouse Ünïcode <no-reply@example.com>"

// newSMTPMailer returns a mailer for srv that trusts srv's certificate.
func newSMTPMailer(t *testing.T, srv *smtptest.Server, opts ...publicauth.SMTPOption) *publicauth.SMTPMailer {
	t.Helper()
	opts = append([]publicauth.SMTPOption{publicauth.WithTLSConfig(srv.TLSConfig())}, opts...)
	m, err := publicauth.NewSMTPMailer(srv.URL(), testSender, opts...)
	if err != nil {
		t.Fatalf("NewSMTPMailer(%q): %v", srv.URL(), err)
	}
	return m
}

func TestSMTPMailerDeliversToARealServer(t *testing.T) {
	msg := publicauth.Message{
		To:      "alice@example.com",
		Subject: "Your sign-in link for Ünïcode Ltd",
		Text:    "Hello Alice,\n\nopen https://id.example.com/magic?token=abc_DEF-123 to sign in.\n\nA line that is long enough to be wrapped by quoted-printable encoding, so that soft line breaks are tested too: é ü ß.\n",
		HTML:    `<p>Hello Alice, <a href="https://id.example.com/magic?token=abc_DEF-123">sign in</a> é</p>`,
	}
	for _, tc := range []struct {
		name     string
		opts     []smtptest.Option
		wantTLS  bool
		wantUser string
	}{
		{"plain connection", nil, false, ""},
		{"STARTTLS offered, no AUTH", []smtptest.Option{smtptest.WithTLS()}, true, ""},
		{"STARTTLS and AUTH", []smtptest.Option{smtptest.WithTLS(), smtptest.WithAuth("mailer", "s3cret p@ss:/")}, true, "mailer"},
		{"implicit TLS and AUTH", []smtptest.Option{smtptest.WithImplicitTLS(), smtptest.WithAuth("mailer", "s3cret p@ss:/")}, true, "mailer"},
		{"implicit TLS, no AUTH", []smtptest.Option{smtptest.WithImplicitTLS()}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := smtptest.Start(t, tc.opts...)
			if err := newSMTPMailer(t, srv).Send(context.Background(), msg); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := srv.WaitFor(t, "alice@example.com")
			if got.From != "Gatehouse Ünïcode <no-reply@example.com>" {
				t.Errorf("From = %q, want the sender with its name", got.From)
			}
			if got.Subject != msg.Subject {
				t.Errorf("Subject = %q, want %q", got.Subject, msg.Subject)
			}
			if got.Text != msg.Text {
				t.Errorf("Text = %q, want %q", got.Text, msg.Text)
			}
			if got.HTML != msg.HTML {
				t.Errorf("HTML = %q, want %q", got.HTML, msg.HTML)
			}
			if ct := got.Header.Get("Content-Type"); !strings.HasPrefix(ct, "multipart/alternative;") {
				t.Errorf("Content-Type = %q, want multipart/alternative", ct)
			}
			for _, h := range []string{"Date", "Message-Id"} {
				if got.Header.Get(h) == "" {
					t.Errorf("header %s missing", h)
				}
			}
			if got.TLS != tc.wantTLS || got.User != tc.wantUser {
				t.Errorf("received over TLS=%v as user %q, want TLS=%v, user %q", got.TLS, got.User, tc.wantTLS, tc.wantUser)
			}
			if link := smtptest.Link(t, got); link != "https://id.example.com/magic?token=abc_DEF-123" {
				t.Errorf("Link = %q", link)
			}
		})
	}
}

func TestSMTPMailerSendsTextOnlyWithoutHTML(t *testing.T) {
	srv := smtptest.Start(t)
	msg := publicauth.Message{To: "bob@example.com", Subject: "Plain", Text: "Just text.\n"}
	if err := newSMTPMailer(t, srv).Send(context.Background(), msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.WaitFor(t, "BOB@example.com")
	if ct := got.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain", ct)
	}
	if got.Text != msg.Text || got.HTML != "" {
		t.Errorf("Text, HTML = %q, %q; want %q, empty", got.Text, got.HTML, msg.Text)
	}
}

func TestSMTPMailerIsSafeForConcurrentSends(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("mailer", "secret"))
	mailer := newSMTPMailer(t, srv)
	const n = 5
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- mailer.Send(context.Background(), publicauth.Message{
				To: fmt.Sprintf("user%d@example.com", i), Subject: "Hello", Text: "Hi.\n",
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Send: %v", err)
		}
	}
	for i := range n {
		if got := srv.Count(fmt.Sprintf("user%d@example.com", i)); got != 1 {
			t.Errorf("user%d got %d messages, want 1", i, got)
		}
	}
}

func TestSMTPMailerReportsFailures(t *testing.T) {
	msg := publicauth.Message{To: "alice@example.com", Subject: "Hello", Text: "Hi.\n"}
	t.Run("server rejects DATA permanently", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.FailWith(554))
		err := newSMTPMailer(t, srv).Send(context.Background(), msg)
		if err == nil || !strings.Contains(err.Error(), "554") {
			t.Errorf("Send = %v, want an error naming the 554 reply", err)
		}
		if n := len(srv.Messages()); n != 0 {
			t.Errorf("server kept %d messages, want 0", n)
		}
	})
	t.Run("server rejects DATA temporarily", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.FailWith(451))
		if err := newSMTPMailer(t, srv).Send(context.Background(), msg); err == nil || !strings.Contains(err.Error(), "451") {
			t.Errorf("Send = %v, want an error naming the 451 reply", err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("mailer", "right"))
		url := strings.Replace(srv.URL(), ":right@", ":wrong@", 1)
		mailer, err := publicauth.NewSMTPMailer(url, testSender, publicauth.WithTLSConfig(srv.TLSConfig()))
		if err != nil {
			t.Fatal(err)
		}
		if err := mailer.Send(context.Background(), msg); err == nil || !strings.Contains(err.Error(), "535") {
			t.Errorf("Send = %v, want an error naming the 535 reply", err)
		}
	})
	t.Run("credentials but no STARTTLS offered", func(t *testing.T) {
		// The server would take AUTH PLAIN in the clear; the mailer must not send it.
		srv := smtptest.Start(t, smtptest.WithAuth("mailer", "secret"))
		err := newSMTPMailer(t, srv).Send(context.Background(), msg)
		if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
			t.Errorf("Send = %v, want an error saying STARTTLS is missing", err)
		}
	})
	t.Run("certificate not trusted", func(t *testing.T) {
		srv := smtptest.Start(t, smtptest.WithTLS())
		mailer, err := publicauth.NewSMTPMailer(srv.URL(), testSender) // system roots
		if err != nil {
			t.Fatal(err)
		}
		if err := mailer.Send(context.Background(), msg); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("Send = %v, want a certificate error", err)
		}
	})
	t.Run("nothing listens on the port", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		mailer, err := publicauth.NewSMTPMailer("smtp://"+addr, testSender, publicauth.WithSMTPTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := mailer.Send(context.Background(), msg); err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("Send = %v, want an error naming %s", err, addr)
		}
	})
	t.Run("server never answers: ctx ends the send", func(t *testing.T) {
		addr := silentServer(t)
		mailer, err := publicauth.NewSMTPMailer("smtp://"+addr, testSender)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := mailer.Send(ctx, msg); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Send = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("server never answers: the mailer's timeout ends the send", func(t *testing.T) {
		addr := silentServer(t)
		mailer, err := publicauth.NewSMTPMailer("smtp://"+addr, testSender, publicauth.WithSMTPTimeout(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if err := mailer.Send(context.Background(), msg); err == nil {
			t.Error("Send = nil, want a timeout error")
		}
	})
	t.Run("bad messages", func(t *testing.T) {
		srv := smtptest.Start(t)
		mailer := newSMTPMailer(t, srv)
		for _, bad := range []publicauth.Message{
			{To: "not an address", Subject: "Hello", Text: "Hi.\n"},
			{To: "Alice <alice@example.com>", Subject: "Hello", Text: "Hi.\n"},
			{To: "alice@example.com", Subject: "Hello\r\nBcc: mallory@example.com", Text: "Hi.\n"},
		} {
			if err := mailer.Send(context.Background(), bad); err == nil {
				t.Errorf("Send(%+v) = nil, want an error", bad)
			}
		}
		if n := len(srv.Messages()); n != 0 {
			t.Errorf("server got %d messages, want 0", n)
		}
	})
}

// silentServer accepts TCP connections on 127.0.0.1 and never says a word, like a stalled
// mail server. It returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

func TestNewSMTPMailerRefusesBadArguments(t *testing.T) {
	const from = "no-reply@example.com"
	for _, tc := range []struct {
		name, url, from, wantErr string
	}{
		{"unknown scheme", "http://mail.example.com:25", from, "scheme must be smtp or smtps"},
		{"no scheme", "mail.example.com:25", from, "scheme must be smtp or smtps"},
		{"no host", "smtp://:25", from, "host is missing"},
		{"no port", "smtp://mail.example.com", from, "port is missing (for example smtp://mail.example.com:587)"},
		{"no port for smtps", "smtps://mail.example.com", from, "port is missing (for example smtps://mail.example.com:465)"},
		{"port out of range", "smtp://mail.example.com:70000", from, "not between 1 and 65535"},
		{"path", "smtp://mail.example.com:25/inbox", from, "nothing after the port"},
		{"query", "smtp://mail.example.com:25?tls=off", from, "nothing after the port"},
		{"user without password", "smtp://mailer@mail.example.com:25", from, "credentials must be user:password"},
		{"empty password", "smtp://mailer:@mail.example.com:25", from, "credentials must be user:password"},
		{"not a URL", "smtp://mail example com:25", from, "not a valid URL"},
		{"empty from", "smtp://mail.example.com:25", "", "is not an address"},
		{"from without domain", "smtp://mail.example.com:25", "no-reply", "is not an address"},
		{"two senders", "smtp://mail.example.com:25", "a@example.com, b@example.com", "is not an address"},
		{"from with a line break", "smtp://mail.example.com:25", "Gatehouse\r\n <no-reply@example.com>", "is not an address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := publicauth.NewSMTPMailer(tc.url, tc.from)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewSMTPMailer(%q, %q) = %v, want an error containing %q", tc.url, tc.from, err, tc.wantErr)
			}
		})
	}
	t.Run("errors never repeat the password", func(t *testing.T) {
		_, err := publicauth.NewSMTPMailer("smtp://mailer:hunter2secret@mail.example.com:25/x", from)
		if err == nil || strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("error = %v, want one without the password", err)
		}
	})
	for _, tc := range []struct{ url, from string }{
		{"smtp://mail.example.com:587", "no-reply@example.com"},
		{"smtp://mail.example.com:587/", "Gatehouse <no-reply@example.com>"},
		{"smtps://mailer:p%40ss%3Aword@mail.example.com:465", `"Gatehouse, Inc." <no-reply@example.com>`},
		{"smtp://[::1]:25", "no-reply@example.com"},
	} {
		t.Run("accepts "+tc.url, func(t *testing.T) {
			if _, err := publicauth.NewSMTPMailer(tc.url, tc.from); err != nil {
				t.Errorf("NewSMTPMailer(%q, %q) = %v, want nil", tc.url, tc.from, err)
			}
		})
	}
}
