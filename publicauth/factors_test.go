package publicauth_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestSessionRecordsMethods: a session records its first factor, a PIN the gate asked for,
// and every method added later, with their times; a session that ended takes none.
func TestSessionRecordsMethods(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b, publicauth.Config{})
		u, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "ada@example.com", Password: "correct horse", Name: "Ada"})
		mustNoErr(t, "CreateUser", err)
		gated, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "pin@example.com", Password: "correct horse", RequirePIN: true})
		mustNoErr(t, "CreateUser", err)

		c := startSession(t, e.svc, u, publicauth.SessionPublic)
		sess, _, err := e.svc.CurrentSession(requestWith(c), publicauth.SessionPublic)
		mustNoErr(t, "CurrentSession", err)
		if want := []acr.Method{{Name: acr.Password, At: t0}}; !slices.Equal(sess.Methods, want) {
			t.Errorf("Methods after a password login = %+v, want %+v", sess.Methods, want)
		}

		e.clock.Advance(time.Minute)
		added, err := e.svc.AddSessionMethod(ctx, sess, acr.Method{Name: acr.TOTP})
		mustNoErr(t, "AddSessionMethod", err)
		want := []acr.Method{{Name: acr.Password, At: t0}, {Name: acr.TOTP, At: t0.Add(time.Minute)}}
		if !slices.Equal(added.Methods, want) {
			t.Errorf("Methods after a step-up = %+v, want %+v", added.Methods, want)
		}
		again, _, err := e.svc.CurrentSession(requestWith(c), publicauth.SessionPublic)
		mustNoErr(t, "CurrentSession after the step-up", err)
		if !slices.Equal(again.Methods, want) || again.SID != sess.SID || !again.AuthTime.Equal(t0) {
			t.Errorf("session after a step-up = %+v; want the same session (sid, auth_time) with %+v", again, want)
		}
		if lvl := acr.Assess(again.Methods, time.Time{}); lvl.ACR != acr.TwoFactor {
			t.Errorf("the stepped-up session is %q, want %q", lvl.ACR, acr.TwoFactor)
		}

		pinned := startSession(t, e.svc, gated, publicauth.SessionPublic)
		sess, _, err = e.svc.CurrentSession(requestWith(pinned), publicauth.SessionPublic)
		mustNoErr(t, "CurrentSession behind the PIN gate", err)
		if names := methodNames(sess.Methods); !slices.Equal(names, []string{acr.Password, acr.PIN}) {
			t.Errorf("Methods of a login behind the PIN gate = %q, want password and pin", names)
		}

		w := httptest.NewRecorder()
		mustNoErr(t, "EndSession", e.svc.EndSession(ctx, w, requestWith(c), publicauth.SessionPublic))
		if _, err := e.svc.AddSessionMethod(ctx, again, acr.Method{Name: acr.Passkey}); !errors.Is(err, publicauth.ErrSessionNotFound) {
			t.Errorf("AddSessionMethod to an ended session: error = %v, want ErrSessionNotFound", err)
		}
	})
}

func methodNames(methods []acr.Method) []string {
	var names []string
	for _, m := range methods {
		names = append(names, m.Name)
	}
	return names
}

// TestFactorLockout: wrong second-factor codes count per account against the lockout's
// rate, apart from the email's password lockout; a right code clears the count.
func TestFactorLockout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b, publicauth.Config{Limits: publicauth.RateLimits{Lockout: publicauth.Rate{Limit: 3, Window: 15 * time.Minute}}})
		for i := range 3 {
			if ok, _ := e.svc.ReserveFactorAttempt(ctx, "acct-1"); !ok {
				t.Fatalf("attempt %d refused, want 3 allowed", i+1)
			}
		}
		ok, retryAfter := e.svc.ReserveFactorAttempt(ctx, "acct-1")
		if ok || retryAfter <= 0 || retryAfter > 15*time.Minute {
			t.Errorf("4th attempt: ok %v, retry after %v; want refused for up to 15 minutes", ok, retryAfter)
		}
		if ok, _ := e.svc.ReserveFactorAttempt(ctx, "acct-2"); !ok {
			t.Errorf("another account's attempt refused")
		}
		e.svc.ClearFactorAttempts(ctx, "acct-1")
		if ok, _ := e.svc.ReserveFactorAttempt(ctx, "acct-1"); !ok {
			t.Errorf("attempt after ClearFactorAttempts refused")
		}
		e.clock.Advance(16 * time.Minute)
		for range 3 {
			e.svc.ReserveFactorAttempt(ctx, "acct-3")
		}
		if ok, _ := e.svc.ReserveFactorAttempt(ctx, "acct-3"); ok {
			t.Errorf("4th attempt in a new window allowed, want refused")
		}
		e.clock.Advance(16 * time.Minute)
		if ok, _ := e.svc.ReserveFactorAttempt(ctx, "acct-3"); !ok {
			t.Errorf("attempt after the window refused")
		}
	})
}

// TestMailFactorNotice: a notice is mailed when its change commits and never when it rolls
// back; events without a notice mail nothing.
func TestMailFactorNotice(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b, publicauth.Config{ServiceName: "Acme"})
		u, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: "ada@example.com", Password: "correct horse", Name: "Ada"})
		mustNoErr(t, "CreateUser", err)
		at := t0.Add(time.Hour)
		added := &events.FactorAdded{Meta: events.Meta{At: at, ClientIP: netip.MustParseAddr("203.0.113.9")},
			UserID: u.ID, Factor: events.FactorPasskey, Label: "Laptop"}

		rollback := errors.New("roll back")
		err = e.store.InTx(ctx, func(ctx context.Context) error {
			mustNoErr(t, "MailFactorNotice", e.svc.MailFactorNotice(ctx, added))
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("InTx = %v, want the rollback", err)
		}
		mustNoErr(t, "MailFactorNotice of an event without a notice", e.svc.MailFactorNotice(ctx, &events.PasswordReset{UserID: u.ID}))
		mustNoErr(t, "MailFactorNotice of an unknown account", e.svc.MailFactorNotice(ctx, &events.RecoveryCodeUsed{UserID: "nobody"}))
		e.svc.Wait()
		if n := e.smtp.Count(u.Email); n != 0 {
			t.Fatalf("%d mails after a rolled-back change and events without notices, want none", n)
		}

		err = e.store.InTx(ctx, func(ctx context.Context) error { return e.svc.MailFactorNotice(ctx, added) })
		mustNoErr(t, "InTx", err)
		e.svc.Wait()
		m := e.smtp.WaitFor(t, u.Email)
		if m.Subject != "A second factor was added to your account at Acme" ||
			!strings.Contains(m.Text, "the passkey “Laptop”") || !strings.Contains(m.Text, "from 203.0.113.9") {
			t.Errorf("notice = %q:\n%s", m.Subject, m.Text)
		}
		// An event no emitter stamped takes the request's address.
		req := events.WithRequest(ctx, netip.MustParseAddr("198.51.100.4"), "test")
		mustNoErr(t, "MailFactorNotice(RecoveryCodeUsed)", e.svc.MailFactorNotice(req, &events.RecoveryCodeUsed{UserID: u.ID, Remaining: 4}))
		e.svc.Wait()
		if m := e.smtp.WaitFor(t, u.Email); !strings.Contains(m.Text, "4 codes are left") || !strings.Contains(m.Text, "from 198.51.100.4") {
			t.Errorf("recovery code notice:\n%s", m.Text)
		}
	})
}

// mustNoErr fails t now when err is not nil.
func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
