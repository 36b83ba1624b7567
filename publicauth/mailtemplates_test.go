package publicauth_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
)

func newMailTemplates(t *testing.T, dir string) interface {
	Render(string, publicauth.MailData) (publicauth.Message, error)
} {
	t.Helper()
	tmpl, err := publicauth.NewMailTemplates(dir)
	if err != nil {
		t.Fatalf("newMailTemplates(%q): %v", dir, err)
	}
	return tmpl
}

func TestMailTemplatesRenderEveryKind(t *testing.T) {
	tmpl := newMailTemplates(t, "")
	const link = "https://id.example.com/api/public/magic-login?token=tok_ABC-123&x=1"
	for _, tc := range []struct {
		kind        string
		data        publicauth.MailData
		wantSubject string
		wantIn      []string // in both the text and the HTML body
		wantInText  []string
	}{
		{
			kind:        publicauth.MailVerifyEmail,
			data:        publicauth.MailData{Name: "Alice", Email: "alice@example.com", Link: link, ExpiresIn: 24 * time.Hour, ServiceName: "Acme"},
			wantSubject: "Confirm your email address for Acme",
			wantIn:      []string{"Hello Alice,", "alice@example.com", "24 hours", "Acme"},
			wantInText:  []string{link},
		},
		{
			kind:        publicauth.MailMagicLink,
			data:        publicauth.MailData{Name: "Alice", Email: "alice@example.com", Link: link, ExpiresIn: 15 * time.Minute, ServiceName: "Acme"},
			wantSubject: "Your sign-in link for Acme",
			wantIn:      []string{"Hello Alice,", "15 minutes", "If you did not ask to sign in, ignore this email"},
			wantInText:  []string{link},
		},
		{
			kind:        publicauth.MailPIN,
			data:        publicauth.MailData{Name: "Alice", Email: "alice@example.com", PIN: "042917", ExpiresIn: 10 * time.Minute, ServiceName: "Acme"},
			wantSubject: "Your sign-in PIN for Acme: 042917",
			wantIn:      []string{"Hello Alice,", "042917", "10 minutes"},
		},
		{
			kind:        publicauth.MailPasswordReset,
			data:        publicauth.MailData{Name: "Alice", Email: "alice@example.com", Link: link, ExpiresIn: time.Hour, ServiceName: "Acme"},
			wantSubject: "Reset your password for Acme",
			wantIn:      []string{"Hello Alice,", "alice@example.com", "1 hour", "If you did not ask for this, ignore this email"},
			wantInText:  []string{link},
		},
		{
			kind:        publicauth.MailLinkPassword,
			data:        publicauth.MailData{Name: "Alice", Email: "alice@example.com", Link: link, ExpiresIn: time.Hour, ServiceName: "Acme"},
			wantSubject: "Confirm adding a password to your account at Acme",
			wantIn:      []string{"Hello Alice,", "alice@example.com", "1 hour", "If this was not you, ignore this email"},
			wantInText:  []string{link},
		},
		{
			kind: publicauth.MailFactorAdded,
			data: publicauth.MailData{Name: "Alice", Email: "alice@example.com", ServiceName: "Acme",
				Factor: "passkey", FactorName: "Laptop", At: time.Date(2026, 5, 6, 7, 8, 9, 0, time.FixedZone("CEST", 7200)), ClientIP: "203.0.113.7"},
			wantSubject: "A second factor was added to your account at Acme",
			wantIn:      []string{"Hello Alice,", "passkey “Laptop”", "6 May 2026 at 05:08 UTC", "from 203.0.113.7", "remove the factor"},
		},
		{
			kind:        publicauth.MailFactorRemoved,
			data:        publicauth.MailData{Name: "Alice", Email: "alice@example.com", ServiceName: "Acme", Factor: "totp", At: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)},
			wantSubject: "A second factor was removed from your account at Acme",
			wantIn:      []string{"Hello Alice,", "an authenticator app", "6 May 2026 at 07:08 UTC", "contact the administrator of Acme"},
		},
		{
			kind:        publicauth.MailRecoveryCodeUsed,
			data:        publicauth.MailData{Name: "Alice", Email: "alice@example.com", ServiceName: "Acme", At: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC), Remaining: 1},
			wantSubject: "A recovery code was used to sign in to Acme",
			wantIn:      []string{"Hello Alice,", "1 code is left", "generate new codes"},
		},
		{
			kind:        publicauth.MailMagicLink,
			data:        publicauth.MailData{Email: "bob@example.com", Link: link, ExpiresIn: 15 * time.Minute},
			wantSubject: "Your sign-in link",
			wantIn:      []string{"Hello,", "15 minutes"},
			wantInText:  []string{link},
		},
	} {
		t.Run(tc.kind+" for "+tc.data.Email, func(t *testing.T) {
			m, err := tmpl.Render(tc.kind, tc.data)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if m.To != tc.data.Email {
				t.Errorf("To = %q, want %q", m.To, tc.data.Email)
			}
			if m.Subject != tc.wantSubject {
				t.Errorf("Subject = %q, want %q", m.Subject, tc.wantSubject)
			}
			for _, want := range tc.wantIn {
				if !strings.Contains(m.Text, want) {
					t.Errorf("text lacks %q:\n%s", want, m.Text)
				}
				if !strings.Contains(m.HTML, want) {
					t.Errorf("HTML lacks %q:\n%s", want, m.HTML)
				}
			}
			for _, want := range tc.wantInText {
				if !strings.Contains(m.Text, want) {
					t.Errorf("text lacks %q:\n%s", want, m.Text)
				}
			}
			if tc.data.Link != "" {
				// In HTML the & of the query is escaped, in an attribute and in text alike.
				escaped := strings.ReplaceAll(tc.data.Link, "&", "&amp;")
				if !strings.Contains(m.HTML, `href="`+escaped+`"`) {
					t.Errorf("HTML lacks a link to %q:\n%s", escaped, m.HTML)
				}
			}
			for _, bad := range []string{"<script", "src=", "@import", "url("} {
				if strings.Contains(m.HTML, bad) {
					t.Errorf("HTML contains %q: mails load nothing and run nothing", bad)
				}
			}
			if strings.Contains(m.Text, "<no value>") || strings.Contains(m.HTML, "<no value>") {
				t.Errorf("a template printed a missing value")
			}
		})
	}
}

func TestMailTemplatesEscapeHostileData(t *testing.T) {
	tmpl := newMailTemplates(t, "")
	m, err := tmpl.Render(publicauth.MailMagicLink, publicauth.MailData{
		Name:        `<script>alert("x")</script><img src=x>`,
		Email:       "alice@example.com",
		Link:        "https://id.example.com/magic?token=abc",
		ExpiresIn:   15 * time.Minute,
		ServiceName: "Acme\r\nBcc: mallory@example.com\n<b>",
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.HTML, "<script") || strings.Contains(m.HTML, "<img") || strings.Contains(m.HTML, "<b>") {
		t.Errorf("HTML carries markup from the data:\n%s", m.HTML)
	}
	if !strings.Contains(m.HTML, "&lt;script&gt;") {
		t.Errorf("HTML lacks the escaped name:\n%s", m.HTML)
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		t.Errorf("Subject = %q, want a single line", m.Subject)
	}
	if want := "Your sign-in link for Acme Bcc: mallory@example.com <b>"; m.Subject != want {
		t.Errorf("Subject = %q, want %q", m.Subject, want)
	}

	t.Run("a javascript link is not rendered as a link", func(t *testing.T) {
		m, err := tmpl.Render(publicauth.MailMagicLink, publicauth.MailData{
			Email: "alice@example.com", Link: "javascript:alert(1)", ExpiresIn: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(m.HTML, `href="javascript:`) {
			t.Errorf("HTML links to javascript:\n%s", m.HTML)
		}
	})
}

func TestMailTemplatesRefuseBadRequests(t *testing.T) {
	tmpl := newMailTemplates(t, "")
	ok := publicauth.MailData{Email: "alice@example.com", Link: "https://id.example.com/x", PIN: "123456", ExpiresIn: time.Minute}
	for _, tc := range []struct {
		name, kind string
		edit       func(*publicauth.MailData)
		wantErr    string
	}{
		{"unknown kind", "welcome", func(*publicauth.MailData) {}, `unknown mail kind "welcome"`},
		{"no recipient", publicauth.MailMagicLink, func(d *publicauth.MailData) { d.Email = "" }, "no recipient"},
		{"link mail without a link", publicauth.MailVerifyEmail, func(d *publicauth.MailData) { d.Link = "" }, "no Link"},
		{"PIN mail without a PIN", publicauth.MailPIN, func(d *publicauth.MailData) { d.PIN = "" }, "no PIN"},
		{"no expiry", publicauth.MailPasswordReset, func(d *publicauth.MailData) { d.ExpiresIn = 0 }, "ExpiresIn must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ok
			tc.edit(&d)
			if _, err := tmpl.Render(tc.kind, d); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("render = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestMailTemplatesOverrides(t *testing.T) {
	data := publicauth.MailData{Name: "Alice", Email: "alice@example.com", Link: "https://id.example.com/x", ExpiresIn: 15 * time.Minute, ServiceName: "Acme"}
	defaults := newMailTemplates(t, "")
	want, err := defaults.Render(publicauth.MailMagicLink, data)
	if err != nil {
		t.Fatal(err)
	}
	wantPIN, err := defaults.Render(publicauth.MailPIN, publicauth.MailData{Email: "alice@example.com", PIN: "123456", ExpiresIn: time.Minute})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a file in dir replaces the embedded template of its name only", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "magic_link.txt.tmpl", "Sign in to {{.ServiceName}}: {{.Link}} ({{.ExpiresInWords}})\n")
		writeFile(t, dir, "unrelated.html", "<p>not a mail template</p>")
		m, err := newMailTemplates(t, dir).Render(publicauth.MailMagicLink, data)
		if err != nil {
			t.Fatal(err)
		}
		if m.Text != "Sign in to Acme: https://id.example.com/x (15 minutes)\n" {
			t.Errorf("Text = %q, want the override's", m.Text)
		}
		if m.Subject != want.Subject || m.HTML != want.HTML {
			t.Errorf("subject or HTML changed; only the text was overridden")
		}
	})
	t.Run("the layout can be replaced", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "layout.html.tmpl", `{{define "top"}}<main>{{end}}{{define "button"}}<a href="{{.Link}}">{{.Label}}</a>{{end}}{{define "bottom"}}</main>{{end}}`)
		m, err := newMailTemplates(t, dir).Render(publicauth.MailPIN, publicauth.MailData{Email: "alice@example.com", PIN: "123456", ExpiresIn: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m.HTML, "<main>") || !strings.Contains(m.HTML, "123456") || m.Text != wantPIN.Text {
			t.Errorf("HTML = %q, want the new layout around the PIN", m.HTML)
		}
	})
	t.Run("a missing dir means the embedded templates", func(t *testing.T) {
		m, err := newMailTemplates(t, filepath.Join(t.TempDir(), "nope")).Render(publicauth.MailMagicLink, data)
		if err != nil || m.Text != want.Text {
			t.Errorf("render = %v, %v; want the embedded template", m.Text, err)
		}
	})
	for _, tc := range []struct {
		name, file, src, wantErr string
	}{
		{"a template that does not parse", "pin.txt.tmpl", "PIN: {{.PIN", "pin.txt.tmpl"},
		{"a template naming a field MailData lacks", "magic_link.subject.tmpl", "Hi {{.Nickname}}", "magic_link subject"},
		{"an HTML template that does not parse", "verify_email.html.tmpl", "{{template \"top\" .}}{{if}}", "verify_email.html.tmpl"},
		{"an HTML template using a template the layout lacks", "password_reset.html.tmpl", "{{template \"header\" .}}", "password_reset HTML"},
		{"a layout that does not parse", "layout.html.tmpl", "{{define \"top\"}}", "layout.html.tmpl"},
	} {
		t.Run(tc.name+" fails construction", func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, tc.file, tc.src)
			_, err := publicauth.NewMailTemplates(dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("newMailTemplates = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestMailDataExpiresInWords(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{30 * time.Second, "30 seconds"},
		{time.Second, "1 second"},
		{1500 * time.Millisecond, "2 seconds"},
		{time.Minute, "1 minute"},
		{15 * time.Minute, "15 minutes"},
		{14*time.Minute + time.Second, "15 minutes"},
		{time.Hour, "1 hour"},
		{90 * time.Minute, "1 hour 30 minutes"},
		{24 * time.Hour, "24 hours"},
		{47 * time.Hour, "47 hours"},
		{48 * time.Hour, "2 days"},
		{7 * 24 * time.Hour, "7 days"},
		{49 * time.Hour, "49 hours"},
	} {
		if got := (publicauth.MailData{ExpiresIn: tc.in}).ExpiresInWords(); got != tc.want {
			t.Errorf("ExpiresInWords(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRenderedMailTravelsThroughSMTP sends every kind through the SMTP mailer and reads the
// link and PIN back the way the flows' tests will.
func TestRenderedMailTravelsThroughSMTP(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("mailer", "secret"))
	mailer := newSMTPMailer(t, srv)
	tmpl := newMailTemplates(t, "")
	const link = "https://id.example.com/api/public/verify-email?token=Zm9v_YmFy-123"
	for _, kind := range []string{publicauth.MailVerifyEmail, publicauth.MailMagicLink, publicauth.MailPIN, publicauth.MailPasswordReset, publicauth.MailLinkPassword} {
		t.Run(kind, func(t *testing.T) {
			m, err := tmpl.Render(kind, publicauth.MailData{
				Name: "Zoë", Email: "zoe@example.com", Link: link, PIN: "009876", ExpiresIn: 15 * time.Minute, ServiceName: "Acme Ünïcode",
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := mailer.Send(context.Background(), m); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := srv.WaitFor(t, "zoe@example.com")
			if got.Subject != m.Subject || got.Text != m.Text || got.HTML != m.HTML {
				t.Errorf("received %q / %q, want the rendered %q / %q", got.Subject, got.Text, m.Subject, m.Text)
			}
			if kind == publicauth.MailPIN {
				if pin := smtptest.PIN(t, got); pin != "009876" {
					t.Errorf("PIN = %q, want 009876", pin)
				}
			} else if l := smtptest.Link(t, got); l != link {
				t.Errorf("Link = %q, want %q", l, link)
			}
		})
	}
}

func TestLogMailerLogsTheMessage(t *testing.T) {
	var buf bytes.Buffer
	mailer := publicauth.NewLogMailer(slog.New(slog.NewJSONHandler(&buf, nil)))
	const link = "https://id.example.com/api/public/magic-login?token=abc"
	err := mailer.Send(context.Background(), publicauth.Message{
		To: "alice@example.com", Subject: "Your sign-in link", Text: "Open " + link + " to sign in.\n", HTML: "<p>ignored</p>",
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	out := buf.String()
	for _, want := range []string{
		`"level":"INFO"`,
		`"msg":"mail not sent: no SMTP server configured; logging it instead"`,
		`"to":"alice@example.com"`, `"subject":"Your sign-in link"`, link,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}

	t.Run("nil logger means slog.Default", func(t *testing.T) {
		var buf bytes.Buffer
		old := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
		t.Cleanup(func() { slog.SetDefault(old) })
		if err := publicauth.NewLogMailer(nil).Send(context.Background(), publicauth.Message{To: "bob@example.com", Subject: "Hi", Text: "PIN 123456\n"}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "PIN 123456") {
			t.Errorf("default log lacks the text:\n%s", buf.String())
		}
	})
}
