package acr

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// Names of the methods a session completes (Method.Name). Password and MagicLink are
// publicauth's MethodPassword and MethodMagicLink, PIN the mailed PIN of its PIN gate
// (events.MethodPIN); TOTP, RecoveryCode and Passkey come from package factors. An upstream
// login is named by its provider: "google", "facebook", "oidc:<name>" (see Upstream).
const (
	Password     = "password"
	MagicLink    = "magic_link"
	PIN          = "pin"
	TOTP         = "totp"
	RecoveryCode = "recovery_code"
	Passkey      = "passkey"
)

// Upstream reports whether name is an upstream login: "google", "facebook" or "oidc:<name>".
func Upstream(name string) bool {
	return name == "google" || name == "facebook" || (strings.HasPrefix(name, "oidc:") && len(name) > len("oidc:"))
}

// Method is one authentication method a session completed, and when.
type Method struct {
	// Name is one of the method names above, or an upstream provider's (Upstream).
	Name string `json:"method"`
	// At is when the user completed it.
	At time.Time `json:"at"`
	// UserVerified is set for a passkey whose authenticator verified the user itself, by
	// a PIN or a biometric (WebAuthn's UV flag in this assertion).
	UserVerified bool `json:"uv,omitempty"`
	// DeviceBound is set for a passkey that cannot leave its authenticator, as the
	// authenticator states it (WebAuthn's backup-eligible flag unset).
	DeviceBound bool `json:"deviceBound,omitempty"`
}

// The ordered acr values (see the package doc).
const (
	OneFactor         = "urn:gatehouse:acr:1fa"
	TwoFactor         = "urn:gatehouse:acr:2fa"
	PhishingResistant = "phr"
)

// Supported returns the acr values Gatehouse can state, weakest first: the discovery
// document's acr_values_supported.
func Supported() []string {
	return []string{OneFactor, TwoFactor, PhishingResistant}
}

// Rank is v's place in Supported (0 for OneFactor), and false for a value not in it.
func Rank(v string) (int, bool) {
	i := slices.Index(Supported(), v)
	return i, i >= 0
}

// Meets reports whether a session at acr have satisfies a request for want: both are
// supported values and have is want or stronger. An unknown value meets nothing and is
// met by nothing.
func Meets(have, want string) bool {
	h, okH := Rank(have)
	w, okW := Rank(want)
	return okH && okW && h >= w
}

// amr values (RFC 8176 §2, and "fed"; see the package doc).
const (
	amrPassword    = "pwd"
	amrOTP         = "otp"
	amrFederated   = "fed"
	amrHardwareKey = "hwk"
	amrSoftwareKey = "swk"
	amrUser        = "user"
	amrMFA         = "mfa"
)

// amrOrder is the order AMR lists its values in, so a token's amr is stable.
var amrOrder = []string{amrPassword, amrOTP, amrFederated, amrHardwareKey, amrSoftwareKey, amrUser, amrMFA}

// class is a factor class: methods of one class together are one factor.
type class int

const (
	classNone class = iota
	classKnowledge
	classElsewhere
	classAuthenticator
)

// classOf is the factor class of a method name; an unknown name counts for nothing.
func classOf(name string) class {
	switch {
	case name == Password:
		return classKnowledge
	case name == MagicLink, name == PIN, Upstream(name):
		return classElsewhere
	case name == TOTP, name == RecoveryCode, name == Passkey:
		return classAuthenticator
	}
	return classNone
}

// firstFactor reports whether a method can start a session: it identifies the account.
func firstFactor(name string) bool {
	return name == Password || name == MagicLink || name == Passkey || Upstream(name)
}

// Level is what the methods of a session that count amount to.
type Level struct {
	// ACR is the strongest value of Supported the methods reach; "" when none counts.
	ACR string
	// AMR lists the RFC 8176 values of the methods, in a fixed order; nil when none counts.
	AMR []string
	// Factors is the number of factors (see the package doc).
	Factors int
	// AuthTime is the earliest completion among the methods that count: when the
	// authentication that reached ACR began. It is the ID token's auth_time.
	AuthTime time.Time
}

// Assess returns the level of methods, counting only those completed at or after
// notBefore (the zero time counts all; see MaxAgeCutoff).
func Assess(methods []Method, notBefore time.Time) Level {
	var lvl Level
	classes := map[class]bool{}
	amr := map[string]bool{}
	verified, passkey := false, false
	for _, m := range methods {
		c := classOf(m.Name)
		if c == classNone || m.At.Before(notBefore) {
			continue
		}
		if lvl.AuthTime.IsZero() || m.At.Before(lvl.AuthTime) {
			lvl.AuthTime = m.At
		}
		classes[c] = true
		switch {
		case m.Name == Password:
			amr[amrPassword] = true
		case Upstream(m.Name):
			amr[amrFederated] = true
		case m.Name == Passkey:
			passkey = true
			if m.DeviceBound {
				amr[amrHardwareKey] = true
			} else {
				amr[amrSoftwareKey] = true
			}
			if m.UserVerified {
				verified = true
				amr[amrUser] = true
			}
		default: // MagicLink, PIN, TOTP, RecoveryCode: one-time secrets
			amr[amrOTP] = true
		}
	}
	lvl.Factors = len(classes)
	if verified {
		lvl.Factors++
	}
	switch {
	case lvl.Factors >= 2 && passkey:
		lvl.ACR = PhishingResistant
	case lvl.Factors >= 2:
		lvl.ACR = TwoFactor
	case lvl.Factors == 1:
		lvl.ACR = OneFactor
	}
	if lvl.Factors >= 2 {
		amr[amrMFA] = true
	}
	for _, v := range amrOrder {
		if amr[v] {
			lvl.AMR = append(lvl.AMR, v)
		}
	}
	return lvl
}

// MaxAgeCutoff is the NotBefore of a max_age (OpenID Connect Core §3.1.2.1): methods
// completed more than maxAge before now do not count. A negative maxAge means no max_age
// and yields the zero time.
func MaxAgeCutoff(now time.Time, maxAge time.Duration) time.Time {
	if maxAge < 0 {
		return time.Time{}
	}
	return now.Add(-maxAge)
}

// Requirement is what an authorization request asks of the session.
type Requirement struct {
	// ACR is the least acr the session must reach: the strongest of acr_values that
	// Supported has, an essential acr claim, or a client's minimum. "" asks for OneFactor.
	ACR string
	// NotBefore: methods completed before it do not count. MaxAgeCutoff of max_age; for
	// prompt=login, the time the request arrived; the zero time counts every method.
	NotBefore time.Time
}

// Step is what Next says to do.
type Step struct {
	// Met: the session meets the requirement; nothing to ask.
	Met bool
	// Ask lists the methods, of those available, any one of which to ask for next, in the
	// order of available. Without a method that counts, only first factors are asked for;
	// after one, only the methods that complete the requirement.
	Ask []string
	// Enrol lists the authenticators (TOTP, Passkey) the account has not enrolled and
	// whose enrolment, then use, would complete the requirement, when none available would.
	// It is set only once a first factor counts, so enrolment follows a proven login.
	Enrol []string
}

// Unmet reports whether nothing can be done: not met, nothing to ask, nothing to enrol.
// The authorization endpoint answers an essential acr it cannot meet with
// unmet_authentication_requirements (OpenID Connect Core §5.5.1.1).
func (s Step) Unmet() bool {
	return !s.Met && len(s.Ask) == 0 && len(s.Enrol) == 0
}

// enrollable are the authenticators a user can enrol in the middle of a login.
var enrollable = []string{TOTP, Passkey}

// Next returns what the session whose completed methods are methods needs for req, given
// the method names available to the account (the first factors it can use and the second
// factors it has enrolled). It asks only for what is missing: a session whose first factor
// counts is asked for a second, never for everything again. A passkey is assumed to verify
// its user (registration asks for it); the assertion's own flag decides afterwards. An
// unsupported req.ACR is never met (Step.Unmet).
func Next(methods []Method, req Requirement, available []string) Step {
	want := req.ACR
	if want == "" {
		want = OneFactor
	}
	if _, ok := Rank(want); !ok {
		return Step{}
	}
	meets := func(extra ...Method) bool {
		return Meets(Assess(append(slices.Clip(methods), extra...), req.NotBefore).ACR, want)
	}
	if meets() {
		return Step{Met: true}
	}
	var step Step
	if !slices.ContainsFunc(methods, func(m Method) bool { return firstFactor(m.Name) && !m.At.Before(req.NotBefore) }) {
		for _, name := range available {
			if firstFactor(name) && !slices.Contains(step.Ask, name) {
				step.Ask = append(step.Ask, name)
			}
		}
		return step
	}
	// A candidate counts as completed now: at or after any NotBefore a caller could pass.
	now := req.NotBefore
	for _, m := range methods {
		now = maxTime(now, m.At)
	}
	candidate := func(name string) Method {
		return Method{Name: name, At: now, UserVerified: name == Passkey}
	}
	for _, name := range available {
		if classOf(name) != classNone && !slices.Contains(step.Ask, name) && meets(candidate(name)) {
			step.Ask = append(step.Ask, name)
		}
	}
	if len(step.Ask) > 0 {
		return step
	}
	for _, name := range enrollable {
		if !slices.Contains(available, name) && meets(candidate(name)) {
			step.Enrol = append(step.Enrol, name)
		}
	}
	return step
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// MaxMethods bounds the methods a session keeps (Append).
const MaxMethods = 16

// Append returns methods with m completed: an earlier entry of the same method (same name
// and flags) is replaced, since only the latest completion of a method can count for
// longer, and past MaxMethods the oldest entries go. The result is ordered by completion
// time and shares no memory with methods.
func Append(methods []Method, m Method) []Method {
	out := make([]Method, 0, len(methods)+1)
	for _, old := range methods {
		if old.Name == m.Name && old.UserVerified == m.UserVerified && old.DeviceBound == m.DeviceBound {
			continue
		}
		out = append(out, old)
	}
	out = append(out, m)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	if len(out) > MaxMethods {
		out = out[len(out)-MaxMethods:]
	}
	return out
}
