package events

import (
	"encoding/json"
	"net/netip"
	"time"
)

// Record is one row of the audit trail: an event flattened into the columns an operator
// filters on, with the rest of its fields in Details. It is built by RecordOf, the one
// place that knows how each event is stored, and holds no secret: only what the event
// carries (see the package doc).
type Record struct {
	// ID orders the records of one instant: time-ordered (a UUIDv7) for recorded events;
	// the audit entry's id for a permission change.
	ID string
	At time.Time
	// Type is the event's Name ("login.failed", "permission.changed", …).
	Type string
	// UserID and ClientID are "" when the event has none.
	UserID   string
	ClientID string
	// IP is the client address (maybe truncated, see TruncateIP); the zero Addr without
	// a request.
	IP        netip.Addr
	UserAgent string
	// Method is a login's method ("password", "magic_link", "pin", "google", "totp", …), a
	// revocation's or a token's kind, a second factor's kind; Outcome a login failure's
	// reason, a family revocation's, a client change's or a permission change's action, a
	// factor's removal ("removed", or "reset" by an admin).
	Method  string
	Outcome string
	// Details is a small JSON object of the event's other fields; never nil.
	Details json.RawMessage
}

// RecordOf flattens e into the Record the audit trail stores, without ID. It returns nil
// for an event the trail does not store: TokenIssued (one per token request: the
// grant's history is in the token tables, and its volume would drown the trail), and
// PermissionChanged, whose row is the permission audit entry written with it (package
// permissions, storage's AddAuditEntry), which carries the records before and after.
func RecordOf(e Event) *Record {
	m := e.Metadata()
	r := &Record{At: m.At.UTC(), Type: e.Name(), IP: m.ClientIP, UserAgent: m.UserAgent}
	var details any
	switch e := e.(type) {
	case *LoginSucceeded:
		r.UserID, r.Method, r.Outcome = e.UserID, e.Method, "succeeded"
		details = struct {
			SessionKind string `json:"sessionKind"`
			PIN         bool   `json:"pin"`
		}{e.SessionKind, e.PIN}
	case *LoginFailed:
		// No email: LoginFailed never carries the address typed.
		r.UserID, r.Method, r.Outcome = e.UserID, e.Method, e.Reason
	case *UserRegistered:
		r.UserID, r.Method = e.UserID, e.Method
		details = struct {
			Email string `json:"email"`
		}{e.Email}
	case *EmailVerified:
		r.UserID = e.UserID
		details = struct {
			Email string `json:"email"`
		}{e.Email}
	case *PasswordReset:
		r.UserID = e.UserID
	case *PasswordAdded:
		r.UserID = e.UserID
	case *TokenRevoked:
		r.UserID, r.ClientID, r.Method = e.Subject, e.ClientID, e.Kind
		details = struct {
			GrantID string `json:"grantId"`
		}{e.GrantID}
	case *FamilyRevoked:
		r.UserID, r.ClientID, r.Outcome = e.Subject, e.ClientID, e.Reason
		if e.GrantID != "" {
			details = struct {
				GrantID string `json:"grantId"`
			}{e.GrantID}
		}
	case *ConsentGranted:
		r.UserID, r.ClientID = e.UserID, e.ClientID
		details = struct {
			Scopes []string `json:"scopes"`
		}{e.Scopes}
	case *ConsentWithdrawn:
		r.UserID, r.ClientID, r.Outcome = e.UserID, e.ClientID, e.Reason
	case *IdentityLinked:
		r.UserID, r.Method = e.UserID, e.Provider
	case *ClientChanged:
		r.ClientID, r.Outcome = e.ClientID, e.Action
	case *KeyAdded:
		details = struct {
			KID       string `json:"kid"`
			Algorithm string `json:"alg"`
			Scheduled bool   `json:"scheduled"`
		}{e.KID, e.Algorithm, e.Scheduled}
	case *FactorAdded:
		r.UserID, r.Method = e.UserID, e.Factor
		details = factorDetails{FactorID: e.FactorID, Label: e.Label}
	case *FactorRemoved:
		r.UserID, r.Method, r.Outcome = e.UserID, e.Factor, "removed"
		if e.Reset {
			r.Outcome = "reset"
		}
		details = factorDetails{FactorID: e.FactorID, Label: e.Label, ActorID: e.ActorID}
	case *RecoveryCodeUsed:
		r.UserID, r.Method = e.UserID, MethodRecoveryCode
		details = struct {
			Remaining int `json:"remaining"`
		}{e.Remaining}
	case *PasskeyCloneSuspected:
		r.UserID, r.Method = e.UserID, FactorPasskey
		details = struct {
			FactorID      string `json:"factorId"`
			StoredCount   uint32 `json:"storedCount"`
			ReceivedCount uint32 `json:"receivedCount"`
		}{e.FactorID, e.StoredCount, e.ReceivedCount}
	default: // TokenIssued, PermissionChanged
		return nil
	}
	r.Details = json.RawMessage("{}")
	if details != nil {
		if b, err := json.Marshal(details); err == nil { // plain structs: cannot fail
			r.Details = b
		}
	}
	return r
}

// factorDetails are the details of a factor's record.
type factorDetails struct {
	FactorID string `json:"factorId,omitempty"`
	Label    string `json:"label,omitempty"`
	ActorID  string `json:"actorId,omitempty"`
}

// TruncateIP returns ip cut to its network: the /24 of an IPv4 address, the /48 of an IPv6
// one (an IPv4-mapped IPv6 address counts as IPv4). It keeps where a request came from
// (a provider, a region) and drops which machine.
func TruncateIP(ip netip.Addr) netip.Addr {
	if !ip.IsValid() {
		return ip
	}
	ip = ip.Unmap()
	bits := 48
	if ip.Is4() {
		bits = 24
	}
	p, err := ip.WithZone("").Prefix(bits)
	if err != nil {
		return netip.Addr{}
	}
	return p.Addr()
}
