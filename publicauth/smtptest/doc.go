// Package smtptest runs a real SMTP server on 127.0.0.1 for tests: it receives messages
// over the network like a mail server (go-smtp), optionally behind STARTTLS or implicit TLS
// with a self-signed certificate and with AUTH PLAIN, parses each one (net/mail,
// mime/multipart, quoted-printable and base64 bodies) and hands it to the test.
//
//	srv := smtptest.Start(t, smtptest.WithTLS())
//	mailer, _ := publicauth.NewSMTPMailer(srv.URL(), "Gatehouse <no-reply@example.com>",
//		publicauth.WithTLSConfig(srv.TLSConfig()))
//	// … the code under test sends mail to alice@example.com …
//	m := srv.WaitFor(t, "alice@example.com")
//	link := smtptest.Link(t, m)
//
// It is meant for tests only: the server accepts mail for any address and keeps every
// message in memory until the test ends.
package smtptest
