package events_test

import (
	"testing"

	"github.com/gatehouse-id/gatehouse/events"
)

func TestRecordOfFactorEvents(t *testing.T) {
	for _, tc := range []struct {
		e                               events.Event
		typ, user, method, outcome, det string
	}{
		{&events.FactorAdded{UserID: "u1", Factor: events.FactorPasskey, FactorID: "pk1", Label: "Laptop"},
			"factor.added", "u1", "passkey", "", `{"factorId":"pk1","label":"Laptop"}`},
		{&events.FactorAdded{UserID: "u1", Factor: events.FactorTOTP},
			"factor.added", "u1", "totp", "", `{}`},
		{&events.FactorRemoved{UserID: "u1", Factor: events.FactorTOTP, ActorID: "u1"},
			"factor.removed", "u1", "totp", "removed", `{"actorId":"u1"}`},
		{&events.FactorRemoved{UserID: "u1", Factor: events.FactorRecoveryCodes, ActorID: "admin1", Reset: true},
			"factor.removed", "u1", "recovery_codes", "reset", `{"actorId":"admin1"}`},
		{&events.RecoveryCodeUsed{UserID: "u1", Remaining: 9},
			"factor.recovery_code_used", "u1", "recovery_code", "", `{"remaining":9}`},
		{&events.PasskeyCloneSuspected{UserID: "u1", FactorID: "pk1", StoredCount: 7, ReceivedCount: 3},
			"factor.clone_suspected", "u1", "passkey", "", `{"factorId":"pk1","storedCount":7,"receivedCount":3}`},
	} {
		r := events.RecordOf(tc.e)
		if r == nil {
			t.Errorf("RecordOf(%T) = nil, want a record", tc.e)
			continue
		}
		if r.Type != tc.typ || r.UserID != tc.user || r.Method != tc.method || r.Outcome != tc.outcome || string(r.Details) != tc.det {
			t.Errorf("RecordOf(%T) = type %q user %q method %q outcome %q details %s; want %q %q %q %q %s",
				tc.e, r.Type, r.UserID, r.Method, r.Outcome, r.Details, tc.typ, tc.user, tc.method, tc.outcome, tc.det)
		}
	}
}
