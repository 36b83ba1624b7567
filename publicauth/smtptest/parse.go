package smtptest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"regexp"
	"strings"
	"testing"
)

// parseMessage parses a message as received after DATA: its From and Subject headers
// (RFC 2047 encoded words decoded) and its first text/plain and text/html bodies.
func parseMessage(raw []byte) (Message, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Message{}, err
	}
	var dec mime.WordDecoder
	m := Message{Header: msg.Header}
	if m.From, err = dec.DecodeHeader(msg.Header.Get("From")); err != nil {
		return Message{}, fmt.Errorf("From header: %w", err)
	}
	if m.Subject, err = dec.DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return Message{}, fmt.Errorf("Subject header: %w", err)
	}
	if err := readPart(&m, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body); err != nil {
		return Message{}, err
	}
	return m, nil
}

// readPart reads one body of the given Content-Type and Content-Transfer-Encoding into m,
// descending into multipart bodies.
func readPart(m *Message, contentType, encoding string, body io.Reader) error {
	mediaType, params := "text/plain", map[string]string{}
	if contentType != "" {
		var err error
		if mediaType, params, err = mime.ParseMediaType(contentType); err != nil {
			return fmt.Errorf("Content-Type %q: %w", contentType, err)
		}
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		if params["boundary"] == "" {
			return errors.New("multipart body without a boundary")
		}
		parts := multipart.NewReader(body, params["boundary"])
		for {
			// NextPart decodes quoted-printable parts itself and drops their
			// Content-Transfer-Encoding header; readPart decodes base64.
			p, err := parts.NextPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("multipart body: %w", err)
			}
			if err := readPart(m, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p); err != nil {
				return err
			}
		}
	}
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("%s body: %w", mediaType, err)
	}
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	switch {
	case mediaType == "text/plain" && m.Text == "":
		m.Text = text
	case mediaType == "text/html" && m.HTML == "":
		m.HTML = text
	}
	return nil
}

var (
	linkPattern = regexp.MustCompile(`https?://[^\s<>"']+`)
	pinPattern  = regexp.MustCompile(`\b[0-9]{6}\b`)
)

// Link returns the first http or https URL in m's text body, without trailing punctuation
// that ends a sentence. It fails the test when there is none.
func Link(t testing.TB, m Message) string {
	t.Helper()
	link := linkPattern.FindString(m.Text)
	if link == "" {
		t.Fatalf("smtptest: no link in the text of the message %q to %v:\n%s", m.Subject, m.To, m.Text)
	}
	return strings.TrimRight(link, ".,;:!?)")
}

// PIN returns the first standalone 6-digit number in m's text body. It fails the test when
// there is none.
func PIN(t testing.TB, m Message) string {
	t.Helper()
	pin := pinPattern.FindString(m.Text)
	if pin == "" {
		t.Fatalf("smtptest: no 6-digit PIN in the text of the message %q to %v:\n%s", m.Subject, m.To, m.Text)
	}
	return pin
}
