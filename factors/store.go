package factors

import (
	"context"
	"time"
)

// TOTPRecord is an account's TOTP secret: the confirmed one, or an enrolment waiting for
// its first code.
type TOTPRecord struct {
	// ID names the record; random.
	ID        string
	AccountID string
	// Confirmed is false for an enrolment that no code has confirmed yet.
	Confirmed bool
	// SealedSecret is the secret sealed by the service's Sealer, bound to the account.
	SealedSecret []byte
	// LastStep is the last time step a code was accepted for (RFC 6238 §5.2); -1 before
	// any.
	LastStep    int64
	CreatedAt   time.Time
	ConfirmedAt *time.Time
	LastUsedAt  *time.Time
	// ExpiresAt is when a pending enrolment lapses; nil for a confirmed record.
	ExpiresAt *time.Time
}

// TOTPStore keeps TOTP secrets; an account has at most one confirmed and one pending.
type TOTPStore interface {
	// SaveTOTPEnrolment stores r (not Confirmed) as the account's pending enrolment,
	// replacing any earlier one.
	SaveTOTPEnrolment(ctx context.Context, r *TOTPRecord) error
	// TOTP returns the account's confirmed record, or with confirmed false its pending
	// enrolment if unexpired at now; ErrNotEnrolled when there is none.
	TOTP(ctx context.Context, accountID string, confirmed bool, now time.Time) (*TOTPRecord, error)
	// ConfirmTOTP turns the account's pending enrolment, unexpired at now, into its
	// confirmed TOTP, with step as its last accepted step. It returns ErrNotEnrolled
	// without such an enrolment and ErrAlreadyEnrolled when the account has a confirmed
	// TOTP (of concurrent confirmations one wins).
	ConfirmTOTP(ctx context.Context, accountID string, step int64, now time.Time) error
	// AcceptTOTPStep records step as the account's last accepted step, at now, in one
	// conditional update that succeeds only while the stored step is lower: of
	// concurrent callers with one step exactly one wins. It returns ErrCodeReplayed when
	// the stored step is step or later, and ErrNotEnrolled without a confirmed TOTP.
	AcceptTOTPStep(ctx context.Context, accountID string, step int64, now time.Time) error
	// DeleteTOTP deletes the account's TOTP, pending enrolment included, and reports
	// whether a confirmed one was there.
	DeleteTOTP(ctx context.Context, accountID string) (bool, error)
}

// RecoveryCodeSet describes an account's recovery codes.
type RecoveryCodeSet struct {
	// Total is how many codes the set had, Remaining how many are unused.
	Total, Remaining int
	CreatedAt        time.Time
}

// RecoveryCodeStore keeps the keyed hashes of recovery codes.
type RecoveryCodeStore interface {
	// ReplaceRecoveryCodes deletes every recovery code of the account and stores hashes
	// as its new set, created at now, in one transaction.
	ReplaceRecoveryCodes(ctx context.Context, accountID string, hashes []string, now time.Time) error
	// UseRecoveryCode marks the account's unused code with that hash used at now, in one
	// conditional update (of concurrent callers with one code exactly one wins), and
	// returns how many unused codes are left. A hash of no unused code of the account is
	// ErrCodeInvalid.
	UseRecoveryCode(ctx context.Context, accountID, hash string, now time.Time) (remaining int, err error)
	// RecoveryCodes describes the account's set; ErrNotEnrolled when it has none.
	RecoveryCodes(ctx context.Context, accountID string) (RecoveryCodeSet, error)
	// DeleteRecoveryCodes deletes the account's set and reports whether there was one.
	DeleteRecoveryCodes(ctx context.Context, accountID string) (bool, error)
}

// Passkey is a registered WebAuthn credential.
type Passkey struct {
	// ID is the credential id, base64url without padding: the id the pages use.
	ID        string
	AccountID string
	// Name is the user's name for it ("Laptop").
	Name string
	// RPID is the relying party id it was registered under; only those of the current
	// issuer are Usable.
	RPID string
	// SignCount is the last signature counter seen; BackupEligible and BackupState the
	// authenticator's flags (a synced passkey is backup eligible).
	SignCount      uint32
	BackupEligible bool
	BackupState    bool
	// CloneWarning is set once its counter went backwards: it is refused from then on.
	CloneWarning bool
	CreatedAt    time.Time
	LastUsedAt   *time.Time
	// Usable is false for a passkey of another relying party id, or marked as cloned.
	// Set by the service, not stored.
	Usable bool
	// Credential is the go-webauthn credential record (JSON) the service verifies
	// assertions with; opaque to the store, and never for a page or an API answer.
	Credential []byte `json:"-"`
}

// PasskeyStore keeps passkeys and the accounts' WebAuthn user handles.
type PasskeyStore interface {
	// PasskeyUserHandle returns the account's user handle, storing handle as it when the
	// account has none yet (of concurrent callers, the first stored wins for all).
	PasskeyUserHandle(ctx context.Context, accountID string, handle []byte) ([]byte, error)
	// AccountByUserHandle returns the id of the account with that user handle, or
	// ErrNotEnrolled.
	AccountByUserHandle(ctx context.Context, handle []byte) (string, error)
	// CreatePasskey stores p; ErrPasskeyExists when its ID is registered already.
	CreatePasskey(ctx context.Context, p *Passkey) error
	// Passkeys returns the account's passkeys, oldest first.
	Passkeys(ctx context.Context, accountID string) ([]Passkey, error)
	// RecordPasskeyUse stores a verified use of the account's passkey id at now: its
	// counter becomes signCount and its backup state backupState, in one conditional
	// update that succeeds only while the passkey is not marked as cloned and its stored
	// counter is below signCount (or both are 0). Otherwise it returns
	// ErrCounterNotIncreased (ErrNotEnrolled for no such passkey).
	RecordPasskeyUse(ctx context.Context, accountID, id string, signCount uint32, backupState bool, now time.Time) error
	// MarkPasskeyCloned sets the passkey's CloneWarning.
	MarkPasskeyCloned(ctx context.Context, accountID, id string) error
	// RenamePasskey sets its name; DeletePasskey deletes it. Both return ErrNotEnrolled
	// for no such passkey of the account.
	RenamePasskey(ctx context.Context, accountID, id, name string) error
	DeletePasskey(ctx context.Context, accountID, id string) error
}

// Kinds of passkey ceremonies.
const (
	CeremonyRegistration = "registration"
	// CeremonyLogin is an assertion by a known account's passkey: a second factor.
	CeremonyLogin = "login"
	// CeremonyPasswordless is an assertion by a discoverable passkey of any account.
	CeremonyPasswordless = "passwordless"
)

// Ceremony is the server-side state of a WebAuthn ceremony between its begin and finish.
type Ceremony struct {
	// IDHash is the hex SHA-256 of the opaque id the caller holds.
	IDHash string
	// Kind is CeremonyRegistration, CeremonyLogin or CeremonyPasswordless.
	Kind string
	// AccountID is the account it was begun for; "" for CeremonyPasswordless.
	AccountID string
	// SessionData is go-webauthn's SessionData (JSON): the challenge and what the finish
	// checks against it.
	SessionData []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// CeremonyStore keeps ceremony state, single use.
type CeremonyStore interface {
	// CreateCeremony stores c.
	CreateCeremony(ctx context.Context, c *Ceremony) error
	// ConsumeCeremony returns the ceremony with that id hash and spends it, in one
	// conditional update that succeeds only while it is unused and unexpired at now (of
	// concurrent callers exactly one wins); any other is ErrCeremonyInvalid.
	ConsumeCeremony(ctx context.Context, idHash string, now time.Time) (*Ceremony, error)
}

// Store is everything the service keeps. Package storage implements it.
type Store interface {
	TOTPStore
	RecoveryCodeStore
	PasskeyStore
	CeremonyStore
	// InTx runs fn in one transaction carried by the context fn receives; every store
	// call made with that context joins it, and an InTx inside it nests. fn's error rolls
	// it back and is returned unchanged.
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}
