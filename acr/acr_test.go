package acr_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(name string, minutes int) acr.Method {
	return acr.Method{Name: name, At: t0.Add(time.Duration(minutes) * time.Minute)}
}

func passkey(minutes int, uv, deviceBound bool) acr.Method {
	m := at(acr.Passkey, minutes)
	m.UserVerified, m.DeviceBound = uv, deviceBound
	return m
}

func TestAssess(t *testing.T) {
	for _, tc := range []struct {
		name      string
		methods   []acr.Method
		notBefore time.Time
		acr       string
		amr       []string
		factors   int
		authTime  time.Time
	}{
		{name: "no methods count for nothing", acr: "", factors: 0},
		{name: "a password is one factor", methods: []acr.Method{at(acr.Password, 0)},
			acr: acr.OneFactor, amr: []string{"pwd"}, factors: 1, authTime: t0},
		{name: "a magic link is one factor stated as otp", methods: []acr.Method{at(acr.MagicLink, 0)},
			acr: acr.OneFactor, amr: []string{"otp"}, factors: 1, authTime: t0},
		{name: "password and TOTP are two factors", methods: []acr.Method{at(acr.Password, 0), at(acr.TOTP, 2)},
			acr: acr.TwoFactor, amr: []string{"pwd", "otp", "mfa"}, factors: 2, authTime: t0},
		{name: "password and a mailed PIN are two factors", methods: []acr.Method{at(acr.Password, 0), at(acr.PIN, 1)},
			acr: acr.TwoFactor, amr: []string{"pwd", "otp", "mfa"}, factors: 2, authTime: t0},
		{name: "a mailed PIN after a magic link is no second factor", methods: []acr.Method{at(acr.MagicLink, 0), at(acr.PIN, 1)},
			acr: acr.OneFactor, amr: []string{"otp"}, factors: 1, authTime: t0},
		{name: "a magic link after an upstream login is no second factor", methods: []acr.Method{at("google", 0), at(acr.MagicLink, 1)},
			acr: acr.OneFactor, amr: []string{"otp", "fed"}, factors: 1, authTime: t0},
		{name: "an upstream login and TOTP are two factors", methods: []acr.Method{at("oidc:corp", 0), at(acr.TOTP, 1)},
			acr: acr.TwoFactor, amr: []string{"otp", "fed", "mfa"}, factors: 2, authTime: t0},
		{name: "TOTP and a recovery code are one authenticator", methods: []acr.Method{at(acr.TOTP, 0), at(acr.RecoveryCode, 1)},
			acr: acr.OneFactor, amr: []string{"otp"}, factors: 1, authTime: t0},
		{name: "a verified synced passkey alone is phishing-resistant", methods: []acr.Method{passkey(0, true, false)},
			acr: acr.PhishingResistant, amr: []string{"swk", "user", "mfa"}, factors: 2, authTime: t0},
		{name: "a verified device-bound passkey is hwk", methods: []acr.Method{passkey(0, true, true)},
			acr: acr.PhishingResistant, amr: []string{"hwk", "user", "mfa"}, factors: 2, authTime: t0},
		{name: "an unverified passkey alone is one factor", methods: []acr.Method{passkey(0, false, false)},
			acr: acr.OneFactor, amr: []string{"swk"}, factors: 1, authTime: t0},
		{name: "password and an unverified passkey are phishing-resistant", methods: []acr.Method{at(acr.Password, 0), passkey(1, false, true)},
			acr: acr.PhishingResistant, amr: []string{"pwd", "hwk", "mfa"}, factors: 2, authTime: t0},
		{name: "an unverified passkey and TOTP are one authenticator", methods: []acr.Method{passkey(0, false, false), at(acr.TOTP, 1)},
			acr: acr.OneFactor, amr: []string{"otp", "swk"}, factors: 1, authTime: t0},
		{name: "an unknown method counts for nothing", methods: []acr.Method{at("sms", 0), at("oidc:", 0)}, acr: ""},
		{name: "methods before notBefore do not count", methods: []acr.Method{at(acr.Password, 0), at(acr.TOTP, 10)},
			notBefore: t0.Add(5 * time.Minute), acr: acr.OneFactor, amr: []string{"otp"}, factors: 1, authTime: t0.Add(10 * time.Minute)},
		{name: "a method at notBefore counts", methods: []acr.Method{at(acr.Password, 5), at(acr.TOTP, 10)},
			notBefore: t0.Add(5 * time.Minute), acr: acr.TwoFactor, amr: []string{"pwd", "otp", "mfa"}, factors: 2, authTime: t0.Add(5 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := acr.Assess(tc.methods, tc.notBefore)
			if got.ACR != tc.acr || !slices.Equal(got.AMR, tc.amr) || got.Factors != tc.factors || !got.AuthTime.Equal(tc.authTime) {
				t.Errorf("Assess = %+v, want acr %q, amr %q, %d factors, auth_time %v", got, tc.acr, tc.amr, tc.factors, tc.authTime)
			}
		})
	}
}

func TestMeets(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		meets      bool
	}{
		{acr.OneFactor, acr.OneFactor, true},
		{acr.TwoFactor, acr.OneFactor, true},
		{acr.OneFactor, acr.TwoFactor, false},
		{acr.PhishingResistant, acr.TwoFactor, true},
		{acr.TwoFactor, acr.PhishingResistant, false},
		{acr.PhishingResistant, "phrh", false},
		{"", acr.OneFactor, false},
		{"1", acr.OneFactor, false},
	} {
		if got := acr.Meets(tc.have, tc.want); got != tc.meets {
			t.Errorf("Meets(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.meets)
		}
	}
	if got := acr.Supported(); !slices.Equal(got, []string{acr.OneFactor, acr.TwoFactor, acr.PhishingResistant}) {
		t.Errorf("Supported() = %q, want the three levels weakest first", got)
	}
}

func TestNext(t *testing.T) {
	all := []string{acr.Password, acr.MagicLink, "google", acr.Passkey, acr.TOTP, acr.RecoveryCode, acr.PIN}
	for _, tc := range []struct {
		name      string
		methods   []acr.Method
		req       acr.Requirement
		available []string
		want      acr.Step
	}{
		{name: "a fresh password meets one factor",
			methods: []acr.Method{at(acr.Password, 0)}, req: acr.Requirement{}, available: all,
			want: acr.Step{Met: true}},
		{name: "no session asks for a first factor only",
			req: acr.Requirement{ACR: acr.TwoFactor}, available: all,
			want: acr.Step{Ask: []string{acr.Password, acr.MagicLink, "google", acr.Passkey}}},
		{name: "after a password two factors ask for the second only",
			methods: []acr.Method{at(acr.Password, 0)}, req: acr.Requirement{ACR: acr.TwoFactor},
			available: []string{acr.Password, acr.TOTP, acr.RecoveryCode, acr.Passkey},
			want:      acr.Step{Ask: []string{acr.TOTP, acr.RecoveryCode, acr.Passkey}}},
		{name: "after a magic link a mailed PIN is not offered as the second factor",
			methods: []acr.Method{at(acr.MagicLink, 0)}, req: acr.Requirement{ACR: acr.TwoFactor},
			available: []string{acr.MagicLink, acr.PIN, acr.TOTP},
			want:      acr.Step{Ask: []string{acr.TOTP}}},
		{name: "after a password a mailed PIN is a second factor",
			methods: []acr.Method{at(acr.Password, 0)}, req: acr.Requirement{ACR: acr.TwoFactor},
			available: []string{acr.Password, acr.PIN},
			want:      acr.Step{Ask: []string{acr.PIN}}},
		{name: "two factors met by password and TOTP",
			methods: []acr.Method{at(acr.Password, 0), at(acr.TOTP, 1)}, req: acr.Requirement{ACR: acr.TwoFactor},
			available: all, want: acr.Step{Met: true}},
		{name: "phishing-resistant after password and TOTP asks for a passkey only",
			methods: []acr.Method{at(acr.Password, 0), at(acr.TOTP, 1)}, req: acr.Requirement{ACR: acr.PhishingResistant},
			available: all, want: acr.Step{Ask: []string{acr.Passkey}}},
		{name: "phishing-resistant without a passkey leads to enrolling one",
			methods: []acr.Method{at(acr.Password, 0)}, req: acr.Requirement{ACR: acr.PhishingResistant},
			available: []string{acr.Password, acr.TOTP}, want: acr.Step{Enrol: []string{acr.Passkey}}},
		{name: "two factors without any leads to enrolment",
			methods: []acr.Method{at(acr.Password, 0)}, req: acr.Requirement{ACR: acr.TwoFactor},
			available: []string{acr.Password}, want: acr.Step{Enrol: []string{acr.TOTP, acr.Passkey}}},
		{name: "max_age past the first factor asks for a first factor again",
			methods:   []acr.Method{at(acr.Password, 0), at(acr.TOTP, 1)},
			req:       acr.Requirement{ACR: acr.TwoFactor, NotBefore: t0.Add(30 * time.Minute)},
			available: all, want: acr.Step{Ask: []string{acr.Password, acr.MagicLink, "google", acr.Passkey}}},
		{name: "max_age past the second factor only asks for the second only",
			methods:   []acr.Method{at(acr.Password, 0), at(acr.TOTP, 1), at(acr.Password, 40)},
			req:       acr.Requirement{ACR: acr.TwoFactor, NotBefore: t0.Add(30 * time.Minute)},
			available: []string{acr.Password, acr.TOTP}, want: acr.Step{Ask: []string{acr.TOTP}}},
		{name: "max_age met by fresh methods",
			methods:   []acr.Method{at(acr.Password, 40), at(acr.TOTP, 41)},
			req:       acr.Requirement{ACR: acr.OneFactor, NotBefore: t0.Add(30 * time.Minute)},
			available: all, want: acr.Step{Met: true}},
		{name: "an unverified passkey login asks for another class, not TOTP",
			methods: []acr.Method{passkey(0, false, false)}, req: acr.Requirement{ACR: acr.TwoFactor},
			available: []string{acr.Passkey, acr.TOTP, acr.Password},
			want:      acr.Step{Ask: []string{acr.Passkey, acr.Password}}},
		{name: "an unsupported acr is unmet",
			methods: []acr.Method{at(acr.Password, 0)}, req: acr.Requirement{ACR: "phrh"}, available: all,
			want: acr.Step{}},
		{name: "after an upstream login mail is not offered as the second factor",
			methods: []acr.Method{at("google", 0)}, req: acr.Requirement{ACR: acr.TwoFactor},
			available: []string{"google", acr.MagicLink, acr.PIN, acr.TOTP, acr.Passkey},
			want:      acr.Step{Ask: []string{acr.TOTP, acr.Passkey}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := acr.Next(tc.methods, tc.req, tc.available)
			if got.Met != tc.want.Met || !slices.Equal(got.Ask, tc.want.Ask) || !slices.Equal(got.Enrol, tc.want.Enrol) {
				t.Errorf("Next = %+v, want %+v", got, tc.want)
			}
			if got.Unmet() != (!tc.want.Met && len(tc.want.Ask) == 0 && len(tc.want.Enrol) == 0) {
				t.Errorf("Unmet() = %v for %+v", got.Unmet(), got)
			}
		})
	}
}

func TestMaxAgeCutoff(t *testing.T) {
	if got := acr.MaxAgeCutoff(t0, -1); !got.IsZero() {
		t.Errorf("MaxAgeCutoff without max_age = %v, want the zero time", got)
	}
	if got := acr.MaxAgeCutoff(t0, 0); !got.Equal(t0) {
		t.Errorf("MaxAgeCutoff(max_age=0) = %v, want now", got)
	}
	if got := acr.MaxAgeCutoff(t0, time.Hour); !got.Equal(t0.Add(-time.Hour)) {
		t.Errorf("MaxAgeCutoff(1h) = %v, want an hour ago", got)
	}
}

func TestAppend(t *testing.T) {
	methods := []acr.Method{at(acr.Password, 0), at(acr.TOTP, 1)}
	got := acr.Append(methods, at(acr.Password, 5))
	want := []acr.Method{at(acr.TOTP, 1), at(acr.Password, 5)}
	if !slices.Equal(got, want) {
		t.Errorf("Append of a method again = %+v, want the later completion only", got)
	}
	if !slices.Equal(methods, []acr.Method{at(acr.Password, 0), at(acr.TOTP, 1)}) {
		t.Errorf("Append changed its argument: %+v", methods)
	}
	got = acr.Append([]acr.Method{passkey(0, false, false)}, passkey(1, true, false))
	if len(got) != 2 {
		t.Errorf("Append of a passkey with other flags = %+v, want both kept", got)
	}
	var many []acr.Method
	for i := range acr.MaxMethods + 3 {
		many = acr.Append(many, at("oidc:p"+string(rune('a'+i)), i))
	}
	if len(many) != acr.MaxMethods || many[0].Name != "oidc:pd" {
		t.Errorf("Append past MaxMethods kept %d, oldest %q; want %d, the oldest dropped", len(many), many[0].Name, acr.MaxMethods)
	}
}
