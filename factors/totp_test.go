package factors_test

import (
	"bytes"
	"context"
	"encoding/base32"
	"errors"
	"image/png"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/factors"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// codeAt is the TOTP code of secret at t, as an authenticator app computes it.
func codeAt(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCode(secret, at)
	mustNoErr(t, "totp.GenerateCode", err)
	return code
}

// enrolTOTP enrols TOTP for the env's account at the clock's time and returns its secret.
func enrolTOTP(t *testing.T, e *env) string {
	t.Helper()
	ctx := context.Background()
	enrol, err := e.svc.BeginTOTP(ctx, e.account())
	mustNoErr(t, "BeginTOTP", err)
	mustNoErr(t, "ConfirmTOTP", e.svc.ConfirmTOTP(ctx, e.user.ID, codeAt(t, enrol.Secret, e.clock.Now())))
	return enrol.Secret
}

// TestTOTPEnrolment: the enrolment shows a 160-bit secret, its otpauth URI and a QR code of
// it; the secret is stored sealed; a wrong code does not confirm, the right one does (an
// event, an audit row, a mail), and its step is spent.
func TestTOTPEnrolment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		enrol, err := e.svc.BeginTOTP(ctx, e.account())
		mustNoErr(t, "BeginTOTP", err)
		secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(enrol.Secret)
		if err != nil || len(secret) != 20 {
			t.Errorf("Secret %q decodes to %d bytes, %v; want 20", enrol.Secret, len(secret), err)
		}
		u, err := url.Parse(enrol.URI)
		mustNoErr(t, "parse the URI", err)
		q := u.Query()
		if u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/Acme:ada@example.com" || q.Get("secret") != enrol.Secret ||
			q.Get("issuer") != "Acme" || q.Get("digits") != "6" || q.Get("period") != "30" || q.Get("algorithm") != "SHA1" {
			t.Errorf("URI = %s, want otpauth://totp/Acme:ada@example.com with the secret, issuer Acme, 6 digits, 30 s, SHA1", enrol.URI)
		}
		img, err := png.Decode(bytes.NewReader(enrol.QRCodePNG))
		if err != nil || img.Bounds().Dx() != 256 || img.Bounds().Dy() != 256 {
			t.Errorf("QR code: %v, %v; want a 256×256 PNG", img.Bounds(), err)
		}
		if !enrol.ExpiresAt.Equal(t0.Add(factors.DefaultTOTPEnrolmentLifespan)) {
			t.Errorf("ExpiresAt = %v, want 10 minutes on", enrol.ExpiresAt)
		}
		rec, err := e.store.TOTP(ctx, e.user.ID, false, t0)
		mustNoErr(t, "stored enrolment", err)
		if bytes.Contains(rec.SealedSecret, secret) || bytes.Contains(rec.SealedSecret, []byte(enrol.Secret)) || len(rec.SealedSecret) < len(secret)+16 {
			t.Errorf("stored secret %x is not sealed", rec.SealedSecret)
		}

		wrong := codeAt(t, enrol.Secret, t0.Add(-time.Hour))
		checkErr(t, "ConfirmTOTP with a wrong code", e.svc.ConfirmTOTP(ctx, e.user.ID, wrong), factors.ErrCodeInvalid)
		checkErr(t, "ConfirmTOTP with a non-code", e.svc.ConfirmTOTP(ctx, e.user.ID, "12a456"), factors.ErrCodeInvalid)
		code := codeAt(t, enrol.Secret, t0)
		mustNoErr(t, "ConfirmTOTP", e.svc.ConfirmTOTP(ctx, e.user.ID, " "+code+" "))
		if added := lastEvent[*events.FactorAdded](t, e); added.Factor != events.FactorTOTP || added.UserID != e.user.ID {
			t.Errorf("event %+v, want FactorAdded of TOTP", added)
		}
		if rows := e.audit(t, "factor.added"); len(rows) != 1 || rows[0].Method != "totp" {
			t.Errorf("audit rows %+v, want one factor.added of totp", rows)
		}
		if m := e.mail(t); m.Subject != "A second factor was added to your account at Acme" || !strings.Contains(m.Text, "an authenticator app") {
			t.Errorf("mail %q:\n%s", m.Subject, m.Text)
		}
		_, err = e.svc.VerifyTOTP(ctx, e.user.ID, code)
		checkErr(t, "VerifyTOTP with the confirming code", err, factors.ErrCodeReplayed)
		_, err = e.svc.BeginTOTP(ctx, e.account())
		checkErr(t, "BeginTOTP with a TOTP", err, factors.ErrAlreadyEnrolled)

		e.clock.Advance(11 * time.Minute)
		mustNoErr(t, "RemoveTOTP", e.svc.RemoveTOTP(ctx, e.user.ID, e.user.ID))
		if m := e.mail(t); !strings.Contains(m.Subject, "removed") {
			t.Errorf("mail %q, want the removal notice", m.Subject)
		}
		_, err = e.svc.VerifyTOTP(ctx, e.user.ID, codeAt(t, enrol.Secret, e.clock.Now()))
		checkErr(t, "VerifyTOTP after RemoveTOTP", err, factors.ErrNotEnrolled)
		checkErr(t, "RemoveTOTP again", e.svc.RemoveTOTP(ctx, e.user.ID, e.user.ID), factors.ErrNotEnrolled)
		// An enrolment lapses unconfirmed.
		enrol, err = e.svc.BeginTOTP(ctx, e.account())
		mustNoErr(t, "BeginTOTP", err)
		e.clock.Advance(10 * time.Minute)
		checkErr(t, "ConfirmTOTP of a lapsed enrolment", e.svc.ConfirmTOTP(ctx, e.user.ID, codeAt(t, enrol.Secret, e.clock.Now())), factors.ErrNotEnrolled)
	})
}

// TestTOTPVerify: a code is accepted once (RFC 6238 §5.2); one step of drift either way is
// accepted, two are not; wrong codes count against the lockout, which refuses even the
// right code once over; two uses of one code at once: exactly one wins.
func TestTOTPVerify(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		secret := enrolTOTP(t, e)
		e.names()

		e.clock.Advance(time.Minute)
		code := codeAt(t, secret, e.clock.Now())
		m, err := e.svc.VerifyTOTP(ctx, e.user.ID, code)
		mustNoErr(t, "VerifyTOTP", err)
		if m != (acr.Method{Name: acr.TOTP, At: e.clock.Now()}) {
			t.Errorf("method %+v, want totp now", m)
		}
		_, err = e.svc.VerifyTOTP(ctx, e.user.ID, code)
		checkErr(t, "the same code again", err, factors.ErrCodeReplayed)
		if got := lastEvent[*events.LoginFailed](t, e); got.Reason != events.ReasonCodeReplayed || got.Method != "totp" || got.UserID != e.user.ID {
			t.Errorf("refusal event %+v, want a replayed totp code", got)
		}

		for _, c := range []struct {
			name  string
			drift int
			want  error
		}{
			{"two steps behind", -2, factors.ErrCodeInvalid},
			{"one step behind", -1, nil},
			{"on time", 0, nil},
			{"one step ahead", 1, nil},
			{"two steps ahead", 2, factors.ErrCodeInvalid},
		} {
			// Five steps on: every earlier acceptance is out of reach.
			e.clock.Advance(150 * time.Second)
			_, err := e.svc.VerifyTOTP(ctx, e.user.ID, codeAt(t, secret, e.clock.Now().Add(time.Duration(c.drift)*30*time.Second)))
			if !errors.Is(err, c.want) {
				t.Errorf("a code %s: error %v, want %v", c.name, err, c.want)
			}
		}
		// After a code of the next step, the current step's code is a replay.
		e.clock.Advance(150 * time.Second)
		mustNoErr(t, "a code one step ahead", errOf(e.svc.VerifyTOTP(ctx, e.user.ID, codeAt(t, secret, e.clock.Now().Add(30*time.Second)))))
		_, err = e.svc.VerifyTOTP(ctx, e.user.ID, codeAt(t, secret, e.clock.Now()))
		checkErr(t, "the current code after the next one", err, factors.ErrCodeReplayed)

		// A new lockout window: the replay above counted in the last one.
		e.clock.Advance(15 * time.Minute)
		right := codeAt(t, secret, e.clock.Now())
		wrong := codeAt(t, secret, e.clock.Now().Add(time.Hour))
		for i := range publicauth.DefaultLockoutLimit {
			_, err := e.svc.VerifyTOTP(ctx, e.user.ID, wrong)
			if !errors.Is(err, factors.ErrCodeInvalid) {
				t.Fatalf("wrong code %d: %v, want ErrCodeInvalid", i+1, err)
			}
		}
		_, err = e.svc.VerifyTOTP(ctx, e.user.ID, right)
		var locked *factors.LockedError
		if !errors.As(err, &locked) || locked.RetryAfter <= 0 || locked.RetryAfter > 15*time.Minute {
			t.Fatalf("right code after %d wrong ones: %v, want a lockout of up to 15 minutes", publicauth.DefaultLockoutLimit, err)
		}
		if got := lastEvent[*events.LoginFailed](t, e); got.Reason != events.ReasonLocked {
			t.Errorf("refusal event %+v, want locked", got)
		}
		if rows := e.audit(t, "login.failed"); len(rows) < publicauth.DefaultLockoutLimit+1 {
			t.Errorf("%d login.failed rows, want every refusal", len(rows))
		}
		e.clock.Advance(15 * time.Minute)
		mustNoErr(t, "the right code after the lockout", errOf(e.svc.VerifyTOTP(ctx, e.user.ID, codeAt(t, secret, e.clock.Now()))))

		e.clock.Advance(time.Minute)
		race := codeAt(t, secret, e.clock.Now())
		storagetest.ExactlyOneWins(t, "VerifyTOTP of one code", 6, factors.ErrCodeReplayed, func() error {
			return errOf(e.svc.VerifyTOTP(ctx, e.user.ID, race))
		})
	})
}

// errOf is the error of a call's two results.
func errOf[T any](_ T, err error) error { return err }
