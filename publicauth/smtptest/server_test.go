package smtptest_test

import (
	"net/smtp"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
)

// send hands raw to srv with the standard library's SMTP client, from a@example.com to rcpts.
func send(t *testing.T, srv *smtptest.Server, raw string, rcpts ...string) {
	t.Helper()
	if err := smtp.SendMail(srv.Addr(), nil, "a@example.com", rcpts, []byte(strings.ReplaceAll(raw, "\n", "\r\n"))); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
}

func TestServerParsesNestedBase64AndEncodedHeaders(t *testing.T) {
	srv := smtptest.Start(t)
	send(t, srv, `From: =?UTF-8?q?Z=C3=B6e?= <zoe@example.com>
To: bob@example.com
Subject: =?UTF-8?b?WW91ciBQSU46IDEyMzQ1Ng==?=
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="outer"

--outer
Content-Type: multipart/alternative; boundary="inner"

--inner
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: base64

WW91ciBQSU4gaXMgMDQyOTE3LiBTZWUgaHR0cHM6Ly9pZC5leGFtcGxlLmNvbS9w
P3E9MSZyPTIu
--inner
Content-Type: text/html; charset=UTF-8
Content-Transfer-Encoding: quoted-printable

<p>Your PIN is <b>042917</b>. Caf=C3=A9 =
soft break.</p>
--inner--
--outer--
`, "bob@example.com")
	m := srv.WaitFor(t, "bob@example.com")
	if m.From != "Zöe <zoe@example.com>" || m.Subject != "Your PIN: 123456" {
		t.Errorf("From, Subject = %q, %q; want decoded headers", m.From, m.Subject)
	}
	if m.Text != "Your PIN is 042917. See https://id.example.com/p?q=1&r=2." {
		t.Errorf("Text = %q", m.Text)
	}
	if m.HTML != "<p>Your PIN is <b>042917</b>. Café soft break.</p>" {
		t.Errorf("HTML = %q", m.HTML)
	}
	if got := smtptest.PIN(t, m); got != "042917" {
		t.Errorf("PIN = %q, want the one in the text, not the subject's", got)
	}
	if got := smtptest.Link(t, m); got != "https://id.example.com/p?q=1&r=2" {
		t.Errorf("Link = %q, want it without the full stop", got)
	}
	if m.TLS || m.User != "" {
		t.Errorf("TLS, User = %v, %q; want a plain, anonymous delivery", m.TLS, m.User)
	}
}

func TestServerWaitForTakesMessagesInOrder(t *testing.T) {
	srv := smtptest.Start(t)
	for _, subject := range []string{"one", "two"} {
		send(t, srv, "Subject: "+subject+"\n\nbody\n", "carol@example.com", "dave@example.com")
	}
	send(t, srv, "Subject: other\n\nbody\n", "erin@example.com")

	if got := srv.WaitFor(t, "Carol@Example.com").Subject; got != "one" {
		t.Errorf("first WaitFor = %q, want one", got)
	}
	if got := srv.WaitFor(t, "carol@example.com").Subject; got != "two" {
		t.Errorf("second WaitFor = %q, want two", got)
	}
	// Taking carol's copies leaves dave's, which are the same messages, to take on their own.
	if got := srv.WaitFor(t, "dave@example.com").Subject; got != "one" {
		t.Errorf("WaitFor(dave) = %q, want one", got)
	}
	if n := srv.Count("carol@example.com"); n != 2 {
		t.Errorf("Count(carol) = %d, want 2", n)
	}
	if n := len(srv.Messages()); n != 3 {
		t.Errorf("Messages = %d, want 3", n)
	}
	srv.Reset()
	if n := len(srv.Messages()); n != 0 || srv.Count("erin@example.com") != 0 {
		t.Errorf("after Reset %d messages, want 0", n)
	}
}

func TestServerURLCarriesSchemeAndCredentials(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []smtptest.Option
		prefix string
		tls    bool
	}{
		{"plain", nil, "smtp://127.0.0.1:", false},
		{"STARTTLS with AUTH", []smtptest.Option{smtptest.WithTLS(), smtptest.WithAuth("u", "p w")}, "smtp://u:p%20w@127.0.0.1:", true},
		{"implicit TLS", []smtptest.Option{smtptest.WithImplicitTLS()}, "smtps://127.0.0.1:", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := smtptest.Start(t, tc.opts...)
			if u := srv.URL(); !strings.HasPrefix(u, tc.prefix) || !strings.HasSuffix(u, srv.Addr()[strings.LastIndex(srv.Addr(), ":"):]) {
				t.Errorf("URL = %q, want %s<port of %s>", u, tc.prefix, srv.Addr())
			}
			if (srv.TLSConfig() != nil) != tc.tls || (srv.RootCAs() != nil) != tc.tls {
				t.Errorf("TLSConfig, RootCAs = %v, %v; want them only with TLS", srv.TLSConfig(), srv.RootCAs())
			}
		})
	}
}
