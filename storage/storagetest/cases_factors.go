package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/factors"
	"github.com/gatehouse-id/gatehouse/storage"
)

func factorCases() []storageCase {
	return []storageCase{
		{"TOTP", together(storageCase{"Enrolment", testTOTPEnrolment}, storageCase{"ConcurrentStep", testConcurrentTOTPStep})},
		{"RecoveryCodes", together(storageCase{"UseAndReplace", testRecoveryCodes}, storageCase{"ConcurrentUse", testConcurrentRecoveryCodeUse})},
		{"Passkeys", together(storageCase{"Records", testPasskeys}, storageCase{"Ceremonies", testPasskeyCeremonies})},
		{"FactorsExpireAndGoWithTheirUser", testFactorsExpireAndGo},
	}
}

// together runs cases that touch disjoint rows on one store, as subtests: each fresh
// Postgres schema costs seconds of migrations.
func together(cases ...storageCase) func(t *testing.T, s *storage.Store) {
	return func(t *testing.T, s *storage.Store) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { c.run(t, s) })
		}
	}
}

func pendingTOTP(account, id string, expires time.Time) *factors.TOTPRecord {
	return &factors.TOTPRecord{ID: id, AccountID: account, SealedSecret: []byte("sealed-" + id), LastStep: -1, CreatedAt: t0, ExpiresAt: &expires}
}

// testTOTPEnrolment: a pending enrolment is found until it expires and replaced by the
// next; confirming it makes the account's TOTP, at most one; deleting removes both.
func testTOTPEnrolment(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	const acct = "acct-totp"
	_, err := s.TOTP(ctx, acct, false, t0)
	checkErr(t, "TOTP pending before any", err, factors.ErrNotEnrolled)
	checkErr(t, "ConfirmTOTP without an enrolment", s.ConfirmTOTP(ctx, acct, 5, t0), factors.ErrNotEnrolled)

	mustNoErr(t, "SaveTOTPEnrolment", s.SaveTOTPEnrolment(ctx, pendingTOTP(acct, "first", t0.Add(10*time.Minute))))
	mustNoErr(t, "SaveTOTPEnrolment again", s.SaveTOTPEnrolment(ctx, pendingTOTP(acct, "second", t0.Add(10*time.Minute))))
	got, err := s.TOTP(ctx, acct, false, t0)
	mustNoErr(t, "TOTP pending", err)
	if got.ID != "second" || string(got.SealedSecret) != "sealed-second" || got.Confirmed || got.LastStep != -1 || !got.CreatedAt.Equal(t0) {
		t.Errorf("pending TOTP = %+v, want the second enrolment", got)
	}
	_, err = s.TOTP(ctx, acct, false, t0.Add(10*time.Minute))
	checkErr(t, "TOTP pending at its expiry", err, factors.ErrNotEnrolled)
	checkErr(t, "ConfirmTOTP at its expiry", s.ConfirmTOTP(ctx, acct, 5, t0.Add(10*time.Minute)), factors.ErrNotEnrolled)
	_, err = s.TOTP(ctx, acct, true, t0)
	checkErr(t, "TOTP confirmed before confirmation", err, factors.ErrNotEnrolled)

	mustNoErr(t, "ConfirmTOTP", s.ConfirmTOTP(ctx, acct, 5, t0.Add(time.Minute)))
	got, err = s.TOTP(ctx, acct, true, t0.Add(time.Hour))
	mustNoErr(t, "TOTP confirmed", err)
	if !got.Confirmed || got.LastStep != 5 || got.ConfirmedAt == nil || !got.ConfirmedAt.Equal(t0.Add(time.Minute)) || got.ExpiresAt != nil {
		t.Errorf("confirmed TOTP = %+v, want confirmed at t0+1m with step 5 and no expiry", got)
	}
	_, err = s.TOTP(ctx, acct, false, t0)
	checkErr(t, "TOTP pending after confirmation", err, factors.ErrNotEnrolled)

	mustNoErr(t, "SaveTOTPEnrolment beside a confirmed one", s.SaveTOTPEnrolment(ctx, pendingTOTP(acct, "third", t0.Add(time.Hour))))
	err = s.InTx(ctx, func(ctx context.Context) error {
		checkErr(t, "ConfirmTOTP of a second TOTP", s.ConfirmTOTP(ctx, acct, 9, t0), factors.ErrAlreadyEnrolled)
		// The refusal left the transaction usable.
		_, err := s.TOTP(ctx, acct, true, t0)
		return err
	})
	mustNoErr(t, "transaction after a refused confirmation", err)

	had, err := s.DeleteTOTP(ctx, acct)
	if err != nil || !had {
		t.Errorf("DeleteTOTP = %v, %v; want true", had, err)
	}
	_, err = s.TOTP(ctx, acct, false, t0)
	checkErr(t, "pending TOTP after DeleteTOTP", err, factors.ErrNotEnrolled)
	if had, err := s.DeleteTOTP(ctx, acct); err != nil || had {
		t.Errorf("DeleteTOTP again = %v, %v; want false", had, err)
	}
	checkErr(t, "AcceptTOTPStep without a TOTP", s.AcceptTOTPStep(ctx, acct, 7, t0), factors.ErrNotEnrolled)
}

// testConcurrentTOTPStep: of concurrent acceptances of one time step exactly one wins;
// that step and earlier ones are replays afterwards.
func testConcurrentTOTPStep(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	const acct = "acct-race"
	mustNoErr(t, "SaveTOTPEnrolment", s.SaveTOTPEnrolment(ctx, pendingTOTP(acct, "race", t0.Add(time.Hour))))
	mustNoErr(t, "ConfirmTOTP", s.ConfirmTOTP(ctx, acct, 100, t0))
	ExactlyOneWins(t, "AcceptTOTPStep of one step", 8, factors.ErrCodeReplayed, func() error {
		return s.AcceptTOTPStep(ctx, acct, 101, t0.Add(time.Second))
	})
	checkErr(t, "AcceptTOTPStep of an earlier step", s.AcceptTOTPStep(ctx, acct, 100, t0), factors.ErrCodeReplayed)
	mustNoErr(t, "AcceptTOTPStep of a later step", s.AcceptTOTPStep(ctx, acct, 103, t0.Add(time.Minute)))
	got, err := s.TOTP(ctx, acct, true, t0)
	mustNoErr(t, "TOTP", err)
	if got.LastStep != 103 || got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("after the uses: last step %d, last used %v; want 103 at t0+1m", got.LastStep, got.LastUsedAt)
	}
}

func codeHashes(prefix string, n int) []string {
	hashes := make([]string, n)
	for i := range hashes {
		hashes[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return hashes
}

// testRecoveryCodes: a code is used once; a new set revokes the old one, and a rolled-back
// replacement leaves it; codes belong to their account.
func testRecoveryCodes(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	const acct = "acct-codes"
	_, err := s.RecoveryCodes(ctx, acct)
	checkErr(t, "RecoveryCodes before any", err, factors.ErrNotEnrolled)
	old := codeHashes("old", 10)
	mustNoErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(ctx, acct, old, t0))
	if set, err := s.RecoveryCodes(ctx, acct); err != nil || set != (factors.RecoveryCodeSet{Total: 10, Remaining: 10, CreatedAt: t0}) {
		t.Errorf("RecoveryCodes = %+v, %v; want 10 of 10 at t0", set, err)
	}
	left, err := s.UseRecoveryCode(ctx, acct, old[3], t0)
	if err != nil || left != 9 {
		t.Errorf("UseRecoveryCode = %d, %v; want 9 left", left, err)
	}
	_, err = s.UseRecoveryCode(ctx, acct, old[3], t0)
	checkErr(t, "UseRecoveryCode of a used code", err, factors.ErrCodeInvalid)
	_, err = s.UseRecoveryCode(ctx, "another-account", old[4], t0)
	checkErr(t, "UseRecoveryCode of another account's code", err, factors.ErrCodeInvalid)
	if set, err := s.RecoveryCodes(ctx, acct); err != nil || set.Total != 10 || set.Remaining != 9 {
		t.Errorf("RecoveryCodes after a use = %+v, %v; want 9 of 10", set, err)
	}

	rollback := errors.New("roll back")
	err = s.InTx(ctx, func(ctx context.Context) error {
		mustNoErr(t, "ReplaceRecoveryCodes in a transaction", s.ReplaceRecoveryCodes(ctx, acct, codeHashes("lost", 10), t0))
		return rollback
	})
	checkErr(t, "rolled-back replacement", err, rollback)
	if left, err := s.UseRecoveryCode(ctx, acct, old[4], t0); err != nil || left != 8 {
		t.Errorf("old code after a rolled-back replacement: %d, %v; want it usable, 8 left", left, err)
	}

	mustNoErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(ctx, acct, codeHashes("new", 10), t0.Add(time.Hour)))
	_, err = s.UseRecoveryCode(ctx, acct, old[5], t0.Add(time.Hour))
	checkErr(t, "UseRecoveryCode of a revoked code", err, factors.ErrCodeInvalid)
	if set, err := s.RecoveryCodes(ctx, acct); err != nil || set != (factors.RecoveryCodeSet{Total: 10, Remaining: 10, CreatedAt: t0.Add(time.Hour)}) {
		t.Errorf("RecoveryCodes of the new set = %+v, %v; want 10 of 10", set, err)
	}
	if had, err := s.DeleteRecoveryCodes(ctx, acct); err != nil || !had {
		t.Errorf("DeleteRecoveryCodes = %v, %v; want true", had, err)
	}
	if had, err := s.DeleteRecoveryCodes(ctx, acct); err != nil || had {
		t.Errorf("DeleteRecoveryCodes again = %v, %v; want false", had, err)
	}
}

// testConcurrentRecoveryCodeUse: of concurrent uses of one code exactly one wins.
func testConcurrentRecoveryCodeUse(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	const acct = "acct-code-race"
	hashes := codeHashes("race", 10)
	mustNoErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(ctx, acct, hashes, t0))
	ExactlyOneWins(t, "UseRecoveryCode of one code", 8, factors.ErrCodeInvalid, func() error {
		_, err := s.UseRecoveryCode(ctx, acct, hashes[0], t0)
		return err
	})
}

// testPasskeys: the user handle is drawn once per account and names it; passkeys are
// stored once and listed oldest first; a use must raise the counter (or keep both at 0),
// and a passkey marked as cloned takes no use; rename and delete find only the account's.
func testPasskeys(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	const acct = "acct-pk"
	handles := runConcurrently(6, func(i int) error {
		h, err := s.PasskeyUserHandle(ctx, acct, []byte{byte(i), 1, 2, 3})
		if err != nil {
			return err
		}
		first, err := s.PasskeyUserHandle(ctx, acct, []byte{0xff})
		if err == nil && string(first) != string(h) {
			err = fmt.Errorf("handle %x, then %x", h, first)
		}
		return err
	})
	for _, err := range handles {
		mustNoErr(t, "PasskeyUserHandle", err)
	}
	h, err := s.PasskeyUserHandle(ctx, acct, []byte("unused"))
	mustNoErr(t, "PasskeyUserHandle", err)
	if got, err := s.AccountByUserHandle(ctx, h); err != nil || got != acct {
		t.Errorf("AccountByUserHandle = %q, %v; want %q", got, err, acct)
	}
	_, err = s.AccountByUserHandle(ctx, []byte("no such handle"))
	checkErr(t, "AccountByUserHandle of an unknown handle", err, factors.ErrNotEnrolled)

	older := &factors.Passkey{ID: "cred-b", AccountID: acct, Name: "Phone", RPID: "id.example", BackupEligible: true,
		CreatedAt: t0, Credential: []byte(`{"id":"b"}`)}
	newer := &factors.Passkey{ID: "cred-a", AccountID: acct, Name: "Key", RPID: "id.example", SignCount: 4,
		CreatedAt: t0.Add(time.Minute).In(otherZone), Credential: []byte(`{"id":"a"}`)}
	mustNoErr(t, "CreatePasskey", s.CreatePasskey(ctx, older))
	mustNoErr(t, "CreatePasskey", s.CreatePasskey(ctx, newer))
	checkErr(t, "CreatePasskey twice", s.CreatePasskey(ctx, newer), factors.ErrPasskeyExists)
	keys, err := s.Passkeys(ctx, acct)
	mustNoErr(t, "Passkeys", err)
	if len(keys) != 2 || keys[0].ID != "cred-b" || keys[1].ID != "cred-a" || !keys[1].CreatedAt.Equal(t0.Add(time.Minute)) ||
		keys[1].SignCount != 4 || !keys[0].BackupEligible || string(keys[0].Credential) != `{"id":"b"}` || keys[0].Name != "Phone" {
		t.Errorf("Passkeys = %+v, want the two, oldest first, as stored", keys)
	}

	for _, c := range []struct {
		name  string
		id    string
		count uint32
		want  error
	}{
		{"a counterless use", "cred-b", 0, nil},
		{"another counterless use", "cred-b", 0, nil},
		{"a higher counter", "cred-a", 5, nil},
		{"the same counter", "cred-a", 5, factors.ErrCounterNotIncreased},
		{"a lower counter", "cred-a", 3, factors.ErrCounterNotIncreased},
		{"0 after a counter", "cred-a", 0, factors.ErrCounterNotIncreased},
		{"an unknown passkey", "cred-z", 9, factors.ErrNotEnrolled},
	} {
		checkErr(t, "RecordPasskeyUse of "+c.name, s.RecordPasskeyUse(ctx, acct, c.id, c.count, true, t0.Add(time.Hour)), c.want)
	}
	checkErr(t, "RecordPasskeyUse by another account", s.RecordPasskeyUse(ctx, "other", "cred-a", 9, false, t0), factors.ErrNotEnrolled)
	mustNoErr(t, "MarkPasskeyCloned", s.MarkPasskeyCloned(ctx, acct, "cred-a"))
	checkErr(t, "RecordPasskeyUse of a passkey marked as cloned", s.RecordPasskeyUse(ctx, acct, "cred-a", 50, false, t0), factors.ErrCounterNotIncreased)
	mustNoErr(t, "RenamePasskey", s.RenamePasskey(ctx, acct, "cred-b", "Work phone"))
	checkErr(t, "RenamePasskey of another account's", s.RenamePasskey(ctx, "other", "cred-b", "Mine"), factors.ErrNotEnrolled)
	keys, err = s.Passkeys(ctx, acct)
	mustNoErr(t, "Passkeys", err)
	if k := keys[1]; k.SignCount != 5 || !k.BackupState || !k.CloneWarning || k.LastUsedAt == nil || !k.LastUsedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("used passkey = %+v, want counter 5, backed up, marked as cloned, used at t0+1h", k)
	}
	if k := keys[0]; k.Name != "Work phone" || k.SignCount != 0 {
		t.Errorf("renamed passkey = %+v", k)
	}
	checkErr(t, "DeletePasskey of another account's", s.DeletePasskey(ctx, "other", "cred-a"), factors.ErrNotEnrolled)
	mustNoErr(t, "DeletePasskey", s.DeletePasskey(ctx, acct, "cred-a"))
	checkErr(t, "DeletePasskey again", s.DeletePasskey(ctx, acct, "cred-a"), factors.ErrNotEnrolled)
	if keys, err := s.Passkeys(ctx, acct); err != nil || len(keys) != 1 {
		t.Errorf("Passkeys after a delete = %d, %v; want 1", len(keys), err)
	}
}

// testPasskeyCeremonies: a ceremony is spent once, by one of concurrent finishes, and not
// after its expiry.
func testPasskeyCeremonies(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	c := &factors.Ceremony{IDHash: "cer-1", Kind: factors.CeremonyLogin, AccountID: "acct-cer",
		SessionData: []byte(`{"challenge":"abc"}`), CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
	mustNoErr(t, "CreateCeremony", s.CreateCeremony(ctx, c))
	_, err := s.ConsumeCeremony(ctx, "cer-1", t0.Add(5*time.Minute))
	checkErr(t, "ConsumeCeremony at its expiry", err, factors.ErrCeremonyInvalid)
	var won []*factors.Ceremony
	errs := runConcurrently(6, func(int) error {
		got, err := s.ConsumeCeremony(ctx, "cer-1", t0.Add(time.Minute))
		if err == nil {
			won = append(won, got) // one winner at most: no race on won
		}
		return err
	})
	for _, err := range errs {
		if err != nil && !errors.Is(err, factors.ErrCeremonyInvalid) {
			t.Errorf("ConsumeCeremony: %v", err)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d of 6 concurrent finishes spent the ceremony, want exactly 1", len(won))
	}
	if g := won[0]; g.Kind != c.Kind || g.AccountID != c.AccountID || string(g.SessionData) != string(c.SessionData) || !g.ExpiresAt.Equal(c.ExpiresAt) {
		t.Errorf("ConsumeCeremony = %+v, want %+v", g, c)
	}
	_, err = s.ConsumeCeremony(ctx, "no-such-ceremony", t0)
	checkErr(t, "ConsumeCeremony of an unknown ceremony", err, factors.ErrCeremonyInvalid)
}

// testFactorsExpireAndGo: the janitor deletes unconfirmed TOTP enrolments and spent or
// expired ceremonies and keeps the rest; deleting a user deletes every factor of theirs.
func testFactorsExpireAndGo(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, s, "factors@example.com")
	mustNoErr(t, "SaveTOTPEnrolment", s.SaveTOTPEnrolment(ctx, pendingTOTP(u.ID, "confirmed", t0.Add(time.Hour))))
	mustNoErr(t, "ConfirmTOTP", s.ConfirmTOTP(ctx, u.ID, 1, t0))
	mustNoErr(t, "SaveTOTPEnrolment", s.SaveTOTPEnrolment(ctx, pendingTOTP(u.ID, "lapsing", t0.Add(time.Minute))))
	mustNoErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(ctx, u.ID, codeHashes("c", 10), t0))
	_, err := s.PasskeyUserHandle(ctx, u.ID, []byte("handle"))
	mustNoErr(t, "PasskeyUserHandle", err)
	mustNoErr(t, "CreatePasskey", s.CreatePasskey(ctx, &factors.Passkey{ID: "cred", AccountID: u.ID, RPID: "id.example", CreatedAt: t0, Credential: []byte("{}")}))
	for i, exp := range []time.Duration{time.Minute, time.Hour, time.Hour} {
		mustNoErr(t, "CreateCeremony", s.CreateCeremony(ctx, &factors.Ceremony{IDHash: fmt.Sprintf("cer-%d", i),
			Kind: factors.CeremonyRegistration, AccountID: u.ID, SessionData: []byte("{}"), CreatedAt: t0, ExpiresAt: t0.Add(exp)}))
	}
	_, err = s.ConsumeCeremony(ctx, "cer-1", t0)
	mustNoErr(t, "ConsumeCeremony", err)

	_, err = s.DeleteExpired(ctx, t0.Add(2*time.Minute), 0)
	mustNoErr(t, "DeleteExpired", err)
	if _, err := s.TOTP(ctx, u.ID, true, t0); err != nil {
		t.Errorf("confirmed TOTP after the janitor: %v", err)
	}
	// Read as of t0, when the deleted rows were still valid: only the janitor removed them.
	_, err = s.TOTP(ctx, u.ID, false, t0)
	checkErr(t, "lapsed TOTP enrolment after the janitor", err, factors.ErrNotEnrolled)
	_, err = s.ConsumeCeremony(ctx, "cer-0", t0)
	checkErr(t, "expired ceremony after the janitor", err, factors.ErrCeremonyInvalid)
	_, err = s.ConsumeCeremony(ctx, "cer-2", t0)
	mustNoErr(t, "ConsumeCeremony of the ceremony the janitor kept", err)
	mustNoErr(t, "SaveTOTPEnrolment", s.SaveTOTPEnrolment(ctx, pendingTOTP(u.ID, "pending", t0.Add(time.Hour))))

	mustNoErr(t, "DeleteUser", s.DeleteUser(ctx, u.ID))
	_, err = s.TOTP(ctx, u.ID, true, t0)
	checkErr(t, "TOTP after DeleteUser", err, factors.ErrNotEnrolled)
	_, err = s.TOTP(ctx, u.ID, false, t0)
	checkErr(t, "pending TOTP after DeleteUser", err, factors.ErrNotEnrolled)
	_, err = s.RecoveryCodes(ctx, u.ID)
	checkErr(t, "RecoveryCodes after DeleteUser", err, factors.ErrNotEnrolled)
	if keys, err := s.Passkeys(ctx, u.ID); err != nil || len(keys) != 0 {
		t.Errorf("Passkeys after DeleteUser = %d, %v; want none", len(keys), err)
	}
	_, err = s.AccountByUserHandle(ctx, []byte("handle"))
	checkErr(t, "user handle after DeleteUser", err, factors.ErrNotEnrolled)
}

// ExactlyOneWins runs fn n times at once and fails t unless exactly one run succeeded and
// every other failed with lose: the check of a single-use value (a code, a time step) raced
// by concurrent users, which suites of domain packages run on each backend too.
func ExactlyOneWins(t *testing.T, what string, n int, lose error, fn func() error) {
	t.Helper()
	won := 0
	for _, err := range runConcurrently(n, func(int) error { return fn() }) {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, lose):
			t.Errorf("%s: %v, want nil or %v", what, err, lose)
		}
	}
	if won != 1 {
		t.Errorf("%s: %d of %d concurrent runs won, want exactly 1", what, won, n)
	}
}
