package publicauth

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"os"
	"path/filepath"
	"strings"
	texttemplate "text/template"
	"time"
)

//go:embed mailtemplates/*.tmpl
var embeddedMailTemplates embed.FS

// mailKinds are the kinds of mail the service sends. Each has three templates, named after
// it: <kind>.subject.tmpl and <kind>.txt.tmpl (text/template) and <kind>.html.tmpl
// (html/template, framed by layout.html.tmpl's "top", "button" and "bottom").
var mailKinds = []string{MailVerifyEmail, MailMagicLink, MailPIN, MailPasswordReset, MailLinkPassword,
	MailFactorAdded, MailFactorRemoved, MailRecoveryCodeUsed}

// noticeKind reports whether kind is a security notice: it carries neither a link nor a PIN,
// so it has no ExpiresIn either.
func noticeKind(kind string) bool {
	return kind == MailFactorAdded || kind == MailFactorRemoved || kind == MailRecoveryCodeUsed
}

// mailLayout is the file of the templates every HTML body may use.
const mailLayout = "layout.html.tmpl"

// mailTemplates renders the mails of every kind. It is immutable after newMailTemplates and
// safe for concurrent use.
type mailTemplates struct {
	byKind map[string]mailKindTemplates
}

type mailKindTemplates struct {
	subject, text *texttemplate.Template
	html          *htmltemplate.Template
}

// mailButton is what layout.html.tmpl's "button" template renders: a link styled as a button.
type mailButton struct {
	Link, Label string
}

// mailFuncs are the functions the mail templates may call besides MailData's methods.
var mailFuncs = map[string]any{
	"button": func(link, label string) mailButton { return mailButton{Link: link, Label: label} },
}

// newMailTemplates parses the templates of every kind. A file of the same name in dir
// replaces the embedded one (dir empty: none does; missing files fall back to the embedded
// ones). Every template is parsed and tried on sample data here, so a broken override fails
// at start-up, not when the first mail goes out.
func newMailTemplates(dir string) (*mailTemplates, error) {
	read := func(name string) (string, error) {
		if dir != "" {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				return string(b), nil
			} else if !errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("publicauth: mail template %s: %w", name, err)
			}
		}
		b, err := embeddedMailTemplates.ReadFile("mailtemplates/" + name)
		return string(b), err
	}
	layout, err := read(mailLayout)
	if err != nil {
		return nil, err
	}
	t := &mailTemplates{byKind: map[string]mailKindTemplates{}}
	for _, kind := range mailKinds {
		var k mailKindTemplates
		var errs []error
		parseText := func(suffix string) *texttemplate.Template {
			name := kind + suffix
			src, err := read(name)
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			tmpl, err := texttemplate.New(name).Funcs(mailFuncs).Parse(src)
			if err != nil {
				errs = append(errs, fmt.Errorf("publicauth: mail template %s: %w", name, err))
			}
			return tmpl
		}
		k.subject = parseText(".subject.tmpl")
		k.text = parseText(".txt.tmpl")
		name := kind + ".html.tmpl"
		if src, err := read(name); err != nil {
			errs = append(errs, err)
		} else {
			k.html, err = htmltemplate.New(name).Funcs(mailFuncs).Parse(layout)
			if err == nil {
				k.html, err = k.html.Parse(src)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("publicauth: mail template %s (with %s): %w", name, mailLayout, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		t.byKind[kind] = k
		if _, err := t.render(kind, sampleMailData); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// sampleMailData is what newMailTemplates tries every template on.
var sampleMailData = MailData{
	Name: "Sample User", Email: "sample@example.com", Link: "https://example.com/sample?token=x",
	PIN: "123456", ExpiresIn: 15 * time.Minute, ServiceName: "Sample",
	Factor: "passkey", FactorName: "Sample key", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	ClientIP: "192.0.2.1", Remaining: 9,
}

// render renders the mail of kind for d, addressed to d.Email. It fails for an unknown kind,
// for data the kind needs and d lacks (Email always; a positive ExpiresIn and a Link, or PIN
// for MailPIN, except for a notice), and when a template fails to execute. The subject is made one line: every
// run of white space, CR and LF included, becomes one space, so no data can inject a header.
func (t *mailTemplates) render(kind string, d MailData) (Message, error) {
	k, ok := t.byKind[kind]
	if !ok {
		return Message{}, fmt.Errorf("publicauth: unknown mail kind %q", kind)
	}
	switch {
	case d.Email == "":
		return Message{}, fmt.Errorf("publicauth: mail %s: no recipient Email", kind)
	case noticeKind(kind):
	case kind == MailPIN && d.PIN == "":
		return Message{}, fmt.Errorf("publicauth: mail %s: no PIN", kind)
	case kind != MailPIN && d.Link == "":
		return Message{}, fmt.Errorf("publicauth: mail %s: no Link", kind)
	case d.ExpiresIn <= 0:
		return Message{}, fmt.Errorf("publicauth: mail %s: ExpiresIn must be positive, got %s", kind, d.ExpiresIn)
	}
	var subject, text, html bytes.Buffer
	if err := k.subject.Execute(&subject, d); err != nil {
		return Message{}, fmt.Errorf("publicauth: mail %s subject: %w", kind, err)
	}
	if err := k.text.Execute(&text, d); err != nil {
		return Message{}, fmt.Errorf("publicauth: mail %s text: %w", kind, err)
	}
	if err := k.html.Execute(&html, d); err != nil {
		return Message{}, fmt.Errorf("publicauth: mail %s HTML: %w", kind, err)
	}
	return Message{
		To:      d.Email,
		Subject: strings.Join(strings.Fields(subject.String()), " "),
		Text:    text.String(),
		HTML:    html.String(),
	}, nil
}

// ExpiresInWords returns ExpiresIn the way a person says it: "15 minutes", "1 hour",
// "24 hours", "1 hour 30 minutes", "7 days" (whole days from 2 days up). It rounds up to
// the minute from a minute up, and to the second below.
func (d MailData) ExpiresInWords() string {
	e := d.ExpiresIn
	if e < time.Minute {
		return plural(int64((e+time.Second-1)/time.Second), "second")
	}
	e = (e + time.Minute - 1).Truncate(time.Minute)
	const day = 24 * time.Hour
	if e >= 2*day && e%day == 0 {
		return plural(int64(e/day), "day")
	}
	hours, minutes := int64(e/time.Hour), int64(e%time.Hour/time.Minute)
	switch {
	case hours == 0:
		return plural(minutes, "minute")
	case minutes == 0:
		return plural(hours, "hour")
	}
	return plural(hours, "hour") + " " + plural(minutes, "minute")
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
