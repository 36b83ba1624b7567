package events

// Second factors: the kinds of FactorAdded and FactorRemoved, and the login methods of a
// LoginFailed at a second factor.
const (
	// FactorTOTP is an authenticator app's time-based one-time codes (RFC 6238).
	FactorTOTP = "totp"
	// FactorPasskey is a WebAuthn credential.
	FactorPasskey = "passkey"
	// FactorRecoveryCodes is a set of single-use recovery codes; MethodRecoveryCode is
	// the method of a login by one.
	FactorRecoveryCodes = "recovery_codes"
	MethodRecoveryCode  = "recovery_code"
)

// ReasonCodeReplayed is the reason of a LoginFailed whose one-time code was right but had
// been accepted before (RFC 6238 §5.2): someone saw or relayed it.
const ReasonCodeReplayed = "code_replayed"

// FactorAdded fires when an account got a second factor: an authenticator app confirmed
// by its first code, a passkey registered, or a new set of recovery codes (which replaced
// the old set).
type FactorAdded struct {
	Meta
	UserID string
	// Factor is FactorTOTP, FactorPasskey or FactorRecoveryCodes.
	Factor string
	// FactorID names it among the account's factors (a passkey's id); "" for TOTP and
	// recovery codes, of which an account has one at most.
	FactorID string
	// Label is the name the user gave a passkey; "" otherwise.
	Label string
}

// FactorRemoved fires when a second factor was removed: by the user, or by an admin who
// reset the account's factors (one event per factor).
type FactorRemoved struct {
	Meta
	UserID   string
	Factor   string
	FactorID string
	Label    string
	// ActorID is who removed it: the user's id, an admin's id, or "" for an operator at
	// the command line or through Go.
	ActorID string
	// Reset is true when an admin reset every factor of the account.
	Reset bool
}

// RecoveryCodeUsed fires when a recovery code was accepted (and so spent) at a login.
type RecoveryCodeUsed struct {
	Meta
	UserID string
	// Remaining is how many unused codes the account has left.
	Remaining int
}

// PasskeyCloneSuspected fires when a passkey signed an assertion whose signature counter
// did not go up (WebAuthn §6.1.1): two copies of its private key may exist. The login was
// refused and the passkey is refused from then on, until the user removes it.
type PasskeyCloneSuspected struct {
	Meta
	UserID string
	// FactorID is the passkey's id.
	FactorID string
	// StoredCount is the counter Gatehouse had; ReceivedCount the one the assertion bore.
	StoredCount   uint32
	ReceivedCount uint32
}

// Name implements Event.
func (*FactorAdded) Name() string { return "factor.added" }

// Name implements Event.
func (*FactorRemoved) Name() string { return "factor.removed" }

// Name implements Event.
func (*RecoveryCodeUsed) Name() string { return "factor.recovery_code_used" }

// Name implements Event.
func (*PasskeyCloneSuspected) Name() string { return "factor.clone_suspected" }
