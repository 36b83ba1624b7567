package factors_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/factors"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

var recoveryCodeShape = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}$`)

// TestRecoveryCodes: ten distinct codes of 50 bits, stored only as keyed hashes; each
// works once, typed loosely; using one is an event, an audit row and a mail; a new set
// revokes the old one; two uses of one code at once: exactly one wins.
func TestRecoveryCodes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		codes, err := e.svc.GenerateRecoveryCodes(ctx, e.user.ID)
		mustNoErr(t, "GenerateRecoveryCodes", err)
		seen := map[string]bool{}
		for _, c := range codes {
			if !recoveryCodeShape.MatchString(c) || seen[c] {
				t.Errorf("code %q: want XXXXX-XXXXX of Crockford's alphabet, all distinct", c)
			}
			seen[c] = true
		}
		if len(codes) != factors.RecoveryCodeCount || factors.RecoveryCodeCount != 10 {
			t.Fatalf("%d codes, want 10", len(codes))
		}
		if added := lastEvent[*events.FactorAdded](t, e); added.Factor != events.FactorRecoveryCodes {
			t.Errorf("event %+v, want FactorAdded of recovery codes", added)
		}
		if m := e.mail(t); !strings.Contains(m.Text, "a set of recovery codes") {
			t.Errorf("mail %q:\n%s", m.Subject, m.Text)
		}

		// Typed in lower case, without the dash, with spaces.
		typed := strings.ToLower(strings.ReplaceAll(codes[0], "-", " "))
		m, err := e.svc.UseRecoveryCode(ctx, e.user.ID, typed)
		mustNoErr(t, "UseRecoveryCode", err)
		if m != (acr.Method{Name: acr.RecoveryCode, At: t0}) {
			t.Errorf("method %+v, want recovery_code now", m)
		}
		if used := lastEvent[*events.RecoveryCodeUsed](t, e); used.Remaining != 9 || used.UserID != e.user.ID {
			t.Errorf("event %+v, want RecoveryCodeUsed with 9 left", used)
		}
		if rows := e.audit(t, "factor.recovery_code_used"); len(rows) != 1 || string(rows[0].Details) != `{"remaining":9}` {
			t.Errorf("audit rows %+v, want one with 9 remaining", rows)
		}
		if m := e.mail(t); m.Subject != "A recovery code was used to sign in to Acme" || !strings.Contains(m.Text, "9 codes are left") {
			t.Errorf("mail %q:\n%s", m.Subject, m.Text)
		}
		_, err = e.svc.UseRecoveryCode(ctx, e.user.ID, codes[0])
		checkErr(t, "a used code", err, factors.ErrCodeInvalid)
		if got := lastEvent[*events.LoginFailed](t, e); got.Method != events.MethodRecoveryCode || got.Reason != events.ReasonBadCredentials {
			t.Errorf("refusal %+v, want a bad recovery code", got)
		}
		for _, bad := range []string{"", "hello", codes[1] + "0", "ÄBCDE-FGHJK"} {
			_, err = e.svc.UseRecoveryCode(ctx, e.user.ID, bad)
			checkErr(t, "UseRecoveryCode("+bad+")", err, factors.ErrCodeInvalid)
		}
		_, err = e.svc.UseRecoveryCode(ctx, "another-account", codes[1])
		checkErr(t, "another account's code", err, factors.ErrCodeInvalid)
		sum, err := e.svc.Factors(ctx, e.user.ID)
		mustNoErr(t, "Factors", err)
		if sum.RecoveryCodes == nil || sum.RecoveryCodes.Total != 10 || sum.RecoveryCodes.Remaining != 9 {
			t.Errorf("summary %+v, want 9 of 10 codes", sum.RecoveryCodes)
		}

		fresh, err := e.svc.GenerateRecoveryCodes(ctx, e.user.ID)
		mustNoErr(t, "GenerateRecoveryCodes again", err)
		_, err = e.svc.UseRecoveryCode(ctx, e.user.ID, codes[1])
		checkErr(t, "a code of the revoked set", err, factors.ErrCodeInvalid)

		e.clock.Advance(15 * time.Minute) // a new lockout window
		storagetest.ExactlyOneWins(t, "UseRecoveryCode of one code", 6, factors.ErrCodeInvalid, func() error {
			return errOf(e.svc.UseRecoveryCode(ctx, e.user.ID, fresh[2]))
		})

		mustNoErr(t, "RemoveRecoveryCodes", e.svc.RemoveRecoveryCodes(ctx, e.user.ID, "admin-1"))
		_, err = e.svc.UseRecoveryCode(ctx, e.user.ID, fresh[3])
		checkErr(t, "a code after RemoveRecoveryCodes", err, factors.ErrCodeInvalid)
		checkErr(t, "RemoveRecoveryCodes again", e.svc.RemoveRecoveryCodes(ctx, e.user.ID, "admin-1"), factors.ErrNotEnrolled)
	})
}

// TestRecoveryCodesStoredAsKeyedHashes: the store holds no code, and the hashes depend on
// the key: a service under another key finds no code.
func TestRecoveryCodesStoredAsKeyedHashes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		codes, err := e.svc.GenerateRecoveryCodes(ctx, e.user.ID)
		mustNoErr(t, "GenerateRecoveryCodes", err)
		other, err := factors.New(factors.Config{Issuer: issuer, RecoveryCodeKey: []byte("another-key-of-at-least-32-bytes")}, e.store,
			factors.WithSealer(testSealer(t)), factors.WithLockout(e.auth), factors.WithNotifier(e.auth), factors.WithClock(e.clock.Now))
		mustNoErr(t, "factors.New", err)
		_, err = other.UseRecoveryCode(ctx, e.user.ID, codes[0])
		checkErr(t, "a code under another key", err, factors.ErrCodeInvalid)
		// No code is the stored value.
		for _, c := range codes {
			for _, stored := range []string{c, strings.ReplaceAll(c, "-", "")} {
				if _, err := e.store.UseRecoveryCode(ctx, e.user.ID, stored, t0); !errors.Is(err, factors.ErrCodeInvalid) {
					t.Errorf("the code %s is stored as itself", c)
				}
			}
		}
	})
}
