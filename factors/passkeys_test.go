package factors_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/factors"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// origin is the origin of the env's issuer: its path (the mount) is no part of it.
const origin = "https://id.example.test:8443"

// registerPasskey registers a on the env's account under name and returns the passkey.
func registerPasskey(t *testing.T, e *env, a *softAuthenticator, name string) *factors.Passkey {
	t.Helper()
	ctx := context.Background()
	reg, err := e.svc.BeginPasskeyRegistration(ctx, e.account())
	mustNoErr(t, "BeginPasskeyRegistration", err)
	key, err := e.svc.FinishPasskeyRegistration(ctx, e.user.ID, reg.CeremonyID, name, a.register(t, reg.Options))
	mustNoErr(t, "FinishPasskeyRegistration", err)
	return key
}

// loginWith runs a second-factor passkey login of the env's account with a.
func loginWith(t *testing.T, e *env, a *softAuthenticator) (*factors.PasskeyLogin, error) {
	t.Helper()
	ctx := context.Background()
	ch, err := e.svc.BeginPasskeyLogin(ctx, e.user.ID)
	if err != nil {
		return nil, err
	}
	return e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, e.user.ID, a.assert(t, ch.Options))
}

// TestPasskeyRegistration: the options ask for a discoverable credential, user
// verification preferred and no attestation, for the issuer's host, under a random user
// handle, excluding the account's passkeys; the passkey is stored with its flags (an event,
// an audit row, a mail); a ceremony is spent once, lapses, and checks origin and account.
func TestPasskeyRegistration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		mustNoErr(t, "PasskeysAvailable", e.svc.PasskeysAvailable())
		reg, err := e.svc.BeginPasskeyRegistration(ctx, e.account())
		mustNoErr(t, "BeginPasskeyRegistration", err)
		var o struct {
			PublicKey struct {
				RP                     struct{ ID, Name string }
				User                   struct{ ID, Name, DisplayName string }
				Challenge              string
				Timeout                int
				ExcludeCredentials     []struct{ ID string }
				AuthenticatorSelection struct {
					ResidentKey        string
					RequireResidentKey bool
					UserVerification   string
				}
				Attestation string
			}
		}
		toJSON(t, reg.Options, &o)
		opts := o.PublicKey
		if opts.RP.ID != "id.example.test" || opts.RP.Name != "Acme" || opts.User.Name != "ada@example.com" || opts.User.DisplayName != "Ada" ||
			opts.AuthenticatorSelection.ResidentKey != "required" || !opts.AuthenticatorSelection.RequireResidentKey ||
			opts.AuthenticatorSelection.UserVerification != "preferred" || opts.Attestation != "none" ||
			len(unb64(t, opts.Challenge)) < 16 || opts.Timeout != 300000 || len(opts.ExcludeCredentials) != 0 {
			t.Errorf("creation options %+v", opts)
		}
		if handle := unb64(t, opts.User.ID); len(handle) != 32 || strings.Contains(string(handle), e.user.ID) {
			t.Errorf("user handle %x, want 32 random bytes, not the account id", handle)
		}
		if !reg.ExpiresAt.Equal(t0.Add(factors.DefaultCeremonyLifespan)) {
			t.Errorf("ExpiresAt = %v, want 5 minutes on", reg.ExpiresAt)
		}

		a := newSoftAuthenticator(t, origin, false)
		response := a.register(t, reg.Options)
		_, err = e.svc.FinishPasskeyRegistration(ctx, e.user.ID, reg.CeremonyID, "bad\x00name", response)
		var input *factors.InputError
		if !errors.As(err, &input) || input.Field != "name" {
			t.Errorf("a name with a control character: %v, want an InputError on name", err)
		}
		key, err := e.svc.FinishPasskeyRegistration(ctx, e.user.ID, reg.CeremonyID, "  Laptop ", response)
		mustNoErr(t, "FinishPasskeyRegistration", err)
		if key.Name != "Laptop" || key.RPID != "id.example.test" || key.ID != b64(a.credID) || key.BackupEligible || !key.Usable {
			t.Errorf("passkey %+v", key)
		}
		if added := lastEvent[*events.FactorAdded](t, e); added.Factor != events.FactorPasskey || added.FactorID != key.ID || added.Label != "Laptop" {
			t.Errorf("event %+v, want FactorAdded of the passkey", added)
		}
		if rows := e.audit(t, "factor.added"); len(rows) != 1 || rows[0].Method != "passkey" {
			t.Errorf("audit rows %+v", rows)
		}
		if m := e.mail(t); !strings.Contains(m.Text, "the passkey “Laptop”") {
			t.Errorf("mail %q:\n%s", m.Subject, m.Text)
		}
		_, err = e.svc.FinishPasskeyRegistration(ctx, e.user.ID, reg.CeremonyID, "Again", response)
		checkErr(t, "finishing a ceremony twice", err, factors.ErrCeremonyInvalid)

		again, err := e.svc.BeginPasskeyRegistration(ctx, e.account())
		mustNoErr(t, "BeginPasskeyRegistration", err)
		toJSON(t, again.Options, &o)
		if len(o.PublicKey.ExcludeCredentials) != 1 || o.PublicKey.ExcludeCredentials[0].ID != key.ID || o.PublicKey.User.ID != opts.User.ID {
			t.Errorf("second registration: exclude %+v, user %q; want the passkey excluded and the same handle", o.PublicKey.ExcludeCredentials, o.PublicKey.User.ID)
		}
		_, err = e.svc.FinishPasskeyRegistration(ctx, e.user.ID, again.CeremonyID, "Twice", a.register(t, again.Options))
		checkErr(t, "the same credential again", err, factors.ErrPasskeyExists)

		for _, c := range []struct {
			name    string
			account string
			tamper  func(a *softAuthenticator)
			advance time.Duration
			want    error
		}{
			{name: "another origin", account: e.user.ID, tamper: func(a *softAuthenticator) { a.origin = "https://evil.example" }, want: factors.ErrPasskeyInvalid},
			{name: "another relying party", account: e.user.ID, tamper: func(a *softAuthenticator) { a.rpID = "evil.example" }, want: factors.ErrPasskeyInvalid},
			{name: "another account", account: "someone-else", want: factors.ErrCeremonyInvalid},
			{name: "a lapsed ceremony", account: e.user.ID, advance: factors.DefaultCeremonyLifespan, want: factors.ErrCeremonyInvalid},
		} {
			reg, err := e.svc.BeginPasskeyRegistration(ctx, e.account())
			mustNoErr(t, "BeginPasskeyRegistration", err)
			other := newSoftAuthenticator(t, origin, false)
			if c.tamper != nil {
				c.tamper(other)
			}
			e.clock.Advance(c.advance)
			_, err = e.svc.FinishPasskeyRegistration(ctx, c.account, reg.CeremonyID, "", other.register(t, reg.Options))
			checkErr(t, "registration from "+c.name, err, c.want)
		}
		_, err = e.svc.FinishPasskeyRegistration(ctx, e.user.ID, "no-such-ceremony", "", response)
		checkErr(t, "an unknown ceremony", err, factors.ErrCeremonyInvalid)
	})
}

// TestPasskeyLogin: a passkey signs in as a second factor (allowCredentials of the account)
// and alone (empty allowCredentials, the user handle naming the account); the method says
// whether the user was verified and whether the passkey is device-bound; the counter is
// kept; a ceremony serves once and one account.
func TestPasskeyLogin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		bound := newSoftAuthenticator(t, origin, false)
		synced := newSoftAuthenticator(t, origin, true)
		registerPasskey(t, e, bound, "Key")
		registerPasskey(t, e, synced, "Phone")

		ch, err := e.svc.BeginPasskeyLogin(ctx, e.user.ID)
		mustNoErr(t, "BeginPasskeyLogin", err)
		var o struct {
			PublicKey struct {
				RPID             string `json:"rpId"`
				AllowCredentials []struct{ ID string }
				UserVerification string
			}
		}
		toJSON(t, ch.Options, &o)
		if o.PublicKey.RPID != "id.example.test" || len(o.PublicKey.AllowCredentials) != 2 || o.PublicKey.UserVerification != "preferred" {
			t.Errorf("request options %+v, want the two passkeys allowed, user verification preferred", o.PublicKey)
		}
		e.clock.Advance(time.Minute)
		login, err := e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, e.user.ID, bound.assert(t, ch.Options))
		mustNoErr(t, "FinishPasskeyLogin", err)
		want := acr.Method{Name: acr.Passkey, At: t0.Add(time.Minute), UserVerified: true, DeviceBound: true}
		if login.AccountID != e.user.ID || login.PasskeyID != b64(bound.credID) || login.Method != want {
			t.Errorf("login %+v, want the account, the key, %+v", login, want)
		}
		if lvl := acr.Assess([]acr.Method{login.Method}, time.Time{}); lvl.ACR != acr.PhishingResistant {
			t.Errorf("a verified passkey alone reaches %q, want %q", lvl.ACR, acr.PhishingResistant)
		}
		_, err = e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, e.user.ID, bound.assert(t, ch.Options))
		checkErr(t, "finishing a login twice", err, factors.ErrCeremonyInvalid)

		ch, err = e.svc.BeginPasskeyLogin(ctx, e.user.ID)
		mustNoErr(t, "BeginPasskeyLogin", err)
		_, err = e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, "someone-else", bound.assert(t, ch.Options))
		checkErr(t, "a ceremony of another account", err, factors.ErrCeremonyInvalid)

		for _, c := range []struct {
			name   string
			tamper func(a *softAuthenticator) func()
		}{
			{"another origin", func(a *softAuthenticator) func() {
				was := a.origin
				a.origin = "https://id.example.test.evil.example"
				return func() { a.origin = was }
			}},
			{"another relying party", func(a *softAuthenticator) func() {
				a.rpID = "example.test"
				return func() { a.rpID = "" }
			}},
			{"another key", func(a *softAuthenticator) func() {
				was := a.key
				a.key = newSoftAuthenticator(t, origin, false).key
				return func() { a.key = was }
			}},
		} {
			ch, err := e.svc.BeginPasskeyLogin(ctx, e.user.ID)
			mustNoErr(t, "BeginPasskeyLogin", err)
			restore := c.tamper(bound)
			_, err = e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, e.user.ID, bound.assert(t, ch.Options))
			restore()
			checkErr(t, "an assertion from "+c.name, err, factors.ErrPasskeyInvalid)
		}

		// Passwordless, with a synced passkey that does not verify its user.
		synced.verify = false
		for i := range 2 {
			ch, err := e.svc.BeginPasswordlessLogin(ctx, i == 1)
			mustNoErr(t, "BeginPasswordlessLogin", err)
			var o struct {
				Mediation string
				PublicKey struct{ AllowCredentials []any }
			}
			toJSON(t, ch.Options, &o)
			if len(o.PublicKey.AllowCredentials) != 0 || (i == 1) != (o.Mediation == "conditional") {
				t.Errorf("passwordless options %+v, want no allowCredentials, conditional mediation when asked", o)
			}
			login, err := e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, "", synced.assert(t, ch.Options))
			mustNoErr(t, "FinishPasskeyLogin passwordless", err)
			want := acr.Method{Name: acr.Passkey, At: t0.Add(time.Minute)}
			if login.AccountID != e.user.ID || login.PasskeyID != b64(synced.credID) || login.Method != want {
				t.Errorf("passwordless login %+v, want the account by its user handle, %+v", login, want)
			}
		}
		if lvl := acr.Assess([]acr.Method{{Name: acr.Passkey, At: t0}}, time.Time{}); lvl.ACR != acr.OneFactor || lvl.AMR[0] != "swk" {
			t.Errorf("an unverified synced passkey: %+v, want one factor, swk", lvl)
		}
		ch, err = e.svc.BeginPasswordlessLogin(ctx, false)
		mustNoErr(t, "BeginPasswordlessLogin", err)
		_, err = e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, "someone-else", synced.assert(t, ch.Options))
		checkErr(t, "a passwordless login expecting another account", err, factors.ErrPasskeyInvalid)

		stranger := newSoftAuthenticator(t, origin, false)
		stranger.userHandle = []byte("a handle nobody has")
		ch, err = e.svc.BeginPasswordlessLogin(ctx, false)
		mustNoErr(t, "BeginPasswordlessLogin", err)
		_, err = e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, "", stranger.assert(t, ch.Options))
		checkErr(t, "a passkey nobody registered", err, factors.ErrPasskeyInvalid)

		// The bound key signs with a counter the store kept.
		keys, err := e.svc.Passkeys(ctx, e.user.ID)
		mustNoErr(t, "Passkeys", err)
		for _, k := range keys {
			switch k.ID {
			case b64(bound.credID):
				// Four assertions signed, one of them counted: the refused ones store nothing.
				if k.SignCount != 1 || k.LastUsedAt == nil || k.BackupEligible || k.CloneWarning {
					t.Errorf("device-bound passkey after a login: counter %d, last used %v, backup eligible %v", k.SignCount, k.LastUsedAt, k.BackupEligible)
				}
			case b64(synced.credID):
				if k.SignCount != 0 || !k.BackupEligible || !k.BackupState || k.LastUsedAt == nil {
					t.Errorf("synced passkey after logins: counter %d, flags %v %v", k.SignCount, k.BackupEligible, k.BackupState)
				}
			}
		}
	})
}

// TestPasskeyCounterGoesBackwards: an assertion whose counter is not above the stored one
// (a cloned key) is refused, the passkey marked and refused from then on, even with a
// higher counter, an event emitted; removing it is what the user can do.
func TestPasskeyCounterGoesBackwards(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		a := newSoftAuthenticator(t, origin, false)
		key := registerPasskey(t, e, a, "Key")
		for range 3 {
			mustNoErr(t, "a login", errOf(loginWith(t, e, a)))
		}
		clone := *a
		clone.counter = 1 // the copy has signed less: its next counter, 2, is below 3
		_, err := loginWith(t, e, &clone)
		checkErr(t, "a login with a lower counter", err, factors.ErrPasskeyCloned)
		suspected := lastEvent[*events.PasskeyCloneSuspected](t, e)
		if suspected.FactorID != key.ID || suspected.StoredCount != 3 || suspected.ReceivedCount != 2 || suspected.UserID != e.user.ID {
			t.Errorf("event %+v, want the passkey, stored 3, received 2", suspected)
		}
		if rows := e.audit(t, "factor.clone_suspected"); len(rows) != 1 {
			t.Errorf("%d audit rows of the suspected clone, want 1", len(rows))
		}
		keys, err := e.svc.Passkeys(ctx, e.user.ID)
		mustNoErr(t, "Passkeys", err)
		if !keys[0].CloneWarning || keys[0].Usable {
			t.Errorf("passkey after a suspected clone: %+v, want marked and unusable", keys[0])
		}
		// The original, with a higher counter, is refused too: either copy may be the thief's.
		ch, err := e.svc.BeginPasskeyLogin(ctx, e.user.ID)
		checkErr(t, "BeginPasskeyLogin with only a marked passkey", err, factors.ErrNotEnrolled)
		ch, err = e.svc.BeginPasswordlessLogin(ctx, false)
		mustNoErr(t, "BeginPasswordlessLogin", err)
		_, err = e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, "", a.assert(t, ch.Options))
		checkErr(t, "a marked passkey, passwordless", err, factors.ErrPasskeyCloned)
		sum, err := e.svc.Factors(ctx, e.user.ID)
		mustNoErr(t, "Factors", err)
		if got := sum.Available(); len(got) != 0 {
			t.Errorf("Available with only a marked passkey = %q, want nothing", got)
		}

		mustNoErr(t, "RemovePasskey", e.svc.RemovePasskey(ctx, e.user.ID, key.ID, e.user.ID))
		if removed := lastEvent[*events.FactorRemoved](t, e); removed.FactorID != key.ID || removed.Label != "Key" || removed.Reset {
			t.Errorf("event %+v, want the passkey removed", removed)
		}
		checkErr(t, "RemovePasskey again", e.svc.RemovePasskey(ctx, e.user.ID, key.ID, e.user.ID), factors.ErrNotEnrolled)
		fresh := registerPasskey(t, e, newSoftAuthenticator(t, origin, false), "New key")
		if !fresh.Usable {
			t.Errorf("a passkey registered after the removal is not usable")
		}
	})
}

// TestPasskeyConcurrentFinish: two finishes of one ceremony at once: exactly one goes on.
func TestPasskeyConcurrentFinish(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		a := newSoftAuthenticator(t, origin, true)
		registerPasskey(t, e, a, "Phone")
		ch, err := e.svc.BeginPasskeyLogin(ctx, e.user.ID)
		mustNoErr(t, "BeginPasskeyLogin", err)
		response := a.assert(t, ch.Options)
		storagetest.ExactlyOneWins(t, "FinishPasskeyLogin of one ceremony", 4, factors.ErrCeremonyInvalid, func() error {
			return errOf(e.svc.FinishPasskeyLogin(ctx, ch.CeremonyID, e.user.ID, response))
		})
	})
}

// TestPasskeyManagement: rename checks the name; the summary lists every factor and what a
// step-up may ask for; an admin reset removes them all, each an event and a mail.
func TestPasskeyManagement(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		e := newEnv(t, b)
		key := registerPasskey(t, e, newSoftAuthenticator(t, origin, false), "")
		if key.Name != factors.DefaultPasskeyName {
			t.Errorf("name of a passkey registered without one: %q", key.Name)
		}
		var input *factors.InputError
		if err := e.svc.RenamePasskey(ctx, e.user.ID, key.ID, strings.Repeat("x", factors.MaxPasskeyName+1)); !errors.As(err, &input) {
			t.Errorf("a name too long: %v, want an InputError", err)
		}
		mustNoErr(t, "RenamePasskey", e.svc.RenamePasskey(ctx, e.user.ID, key.ID, "Desk key"))
		checkErr(t, "RenamePasskey of another account's", e.svc.RenamePasskey(ctx, "someone-else", key.ID, "Mine"), factors.ErrNotEnrolled)
		enrolTOTP(t, e)
		_, err := e.svc.GenerateRecoveryCodes(ctx, e.user.ID)
		mustNoErr(t, "GenerateRecoveryCodes", err)

		sum, err := e.svc.Factors(ctx, e.user.ID)
		mustNoErr(t, "Factors", err)
		if sum.TOTP == nil || sum.TOTP.SealedSecret != nil || len(sum.Passkeys) != 1 || sum.Passkeys[0].Name != "Desk key" || sum.RecoveryCodes == nil {
			t.Errorf("summary %+v, want TOTP (without its secret), the renamed passkey, recovery codes", sum)
		}
		if got, want := sum.Available(), []string{acr.TOTP, acr.Passkey, acr.RecoveryCode}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("Available = %q, want %q", got, want)
		}
		step := acr.Next([]acr.Method{{Name: acr.Password, At: t0}}, acr.Requirement{ACR: acr.PhishingResistant}, append([]string{acr.Password}, sum.Available()...))
		if strings.Join(step.Ask, ",") != acr.Passkey {
			t.Errorf("a phishing-resistant step-up after a password asks for %q, want the passkey", step.Ask)
		}
		e.names()
		for range 3 {
			e.mail(t) // the three enrolments' notices
		}

		removed, err := e.svc.ResetFactors(ctx, e.user.ID, "admin-7")
		mustNoErr(t, "ResetFactors", err)
		if removed.TOTP == nil || len(removed.Passkeys) != 1 || removed.RecoveryCodes == nil {
			t.Errorf("ResetFactors removed %+v, want all three", removed)
		}
		if got := strings.Join(e.names(), ","); got != "factor.removed,factor.removed,factor.removed" {
			t.Errorf("events of a reset: %s", got)
		}
		rows := e.audit(t, "factor.removed")
		if len(rows) != 3 {
			t.Fatalf("%d factor.removed rows, want 3", len(rows))
		}
		for _, r := range rows {
			var d struct{ ActorID string }
			_ = json.Unmarshal(r.Details, &d)
			if r.Outcome != "reset" || d.ActorID != "admin-7" {
				t.Errorf("audit row %+v, want a reset by admin-7", r)
			}
		}
		for range 3 {
			if m := e.mail(t); !strings.Contains(m.Subject, "removed") {
				t.Errorf("mail %q, want a removal notice", m.Subject)
			}
		}
		sum, err = e.svc.Factors(ctx, e.user.ID)
		mustNoErr(t, "Factors after a reset", err)
		if sum.TOTP != nil || len(sum.Passkeys) != 0 || sum.RecoveryCodes != nil {
			t.Errorf("summary after a reset: %+v, want nothing", sum)
		}
		if removed, err := e.svc.ResetFactors(ctx, e.user.ID, "admin-7"); err != nil || removed.TOTP != nil || len(removed.Passkeys) != 0 {
			t.Errorf("ResetFactors of an account without factors = %+v, %v", removed, err)
		}
	})
}

// TestPasskeysFollowTheIssuer: a passkey works only under the host it was registered for;
// an issuer on an IP address has none, while TOTP works there.
func TestPasskeysFollowTheIssuer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		store := b.Open(t)
		e := newEnvOn(t, store, issuer)
		registerPasskey(t, e, newSoftAuthenticator(t, origin, false), "Key")

		moved := newEnvOn(t, store, "https://login.example.test/")
		keys, err := moved.svc.Passkeys(ctx, moved.user.ID)
		mustNoErr(t, "Passkeys", err)
		if len(keys) != 1 || keys[0].Usable {
			t.Errorf("after the issuer moved: %+v, want the passkey listed, not usable", keys)
		}
		_, err = moved.svc.BeginPasskeyLogin(ctx, moved.user.ID)
		checkErr(t, "BeginPasskeyLogin after the issuer moved", err, factors.ErrNotEnrolled)

		local := newEnvOn(t, store, "http://127.0.0.1:8080")
		err = local.svc.PasskeysAvailable()
		checkErr(t, "PasskeysAvailable on an IP address", err, factors.ErrPasskeysUnavailable)
		_, err = local.svc.BeginPasskeyRegistration(ctx, local.account())
		checkErr(t, "BeginPasskeyRegistration on an IP address", err, factors.ErrPasskeysUnavailable)
		_, err = local.svc.BeginPasswordlessLogin(ctx, false)
		checkErr(t, "BeginPasswordlessLogin on an IP address", err, factors.ErrPasskeysUnavailable)
		local.clock.Advance(time.Hour)
		mustNoErr(t, "TOTP on an IP address", errOf(local.svc.BeginTOTP(ctx, local.account())))
	})
}

// TestNewRefusesBadConfig: a missing issuer, a short recovery key and missing
// collaborators are refused, each named.
func TestNewRefusesBadConfig(t *testing.T) {
	_, err := factors.New(factors.Config{Issuer: "id.example.test", RecoveryCodeKey: []byte("short")}, nil)
	if err == nil {
		t.Fatal("New accepted a bad config")
	}
	for _, want := range []string{"Issuer", "RecoveryCodeKey", "a Store", "WithSealer", "WithLockout", "WithNotifier"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
