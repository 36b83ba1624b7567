package provider

import (
	"reflect"
	"testing"
	"time"

	"github.com/ory/fosite/token/jwt"

	"github.com/gatehouse-id/gatehouse/storage"
)

// TestLogoutTokenClaims: a logout token carries iss, aud, iat, a two-minute exp, the
// message's id as jti, sub and sid when known, the backchannel-logout event, and never a
// nonce (Back-Channel Logout 1.0 §2.4).
func TestLogoutTokenClaims(t *testing.T) {
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	event := map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}
	for _, c := range []struct {
		name string
		msg  storage.LogoutMessage
		want jwt.MapClaims
	}{
		{"session and subject", storage.LogoutMessage{ID: "jti-1", ClientID: "app", SID: "sid-1", Subject: "user-1"},
			jwt.MapClaims{"iss": "https://op.example", "aud": "app", "iat": now.Unix(), "exp": now.Unix() + 120,
				"jti": "jti-1", "sid": "sid-1", "sub": "user-1", "events": event}},
		{"no subject: sid alone", storage.LogoutMessage{ID: "jti-2", ClientID: "app", SID: "sid-2"},
			jwt.MapClaims{"iss": "https://op.example", "aud": "app", "iat": now.Unix(), "exp": now.Unix() + 120,
				"jti": "jti-2", "sid": "sid-2", "events": event}},
		{"no session: sub alone", storage.LogoutMessage{ID: "jti-3", ClientID: "other", Subject: "user-3"},
			jwt.MapClaims{"iss": "https://op.example", "aud": "other", "iat": now.Unix(), "exp": now.Unix() + 120,
				"jti": "jti-3", "sub": "user-3", "events": event}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := logoutTokenClaims("https://op.example", c.msg, now)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			if _, ok := got["nonce"]; ok {
				t.Errorf("got a nonce")
			}
		})
	}
}

// TestLogoutBackoff: retries wait 10 s, doubling, at most an hour.
func TestLogoutBackoff(t *testing.T) {
	for _, c := range []struct {
		attempts int
		want     time.Duration
	}{
		{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {4, 80 * time.Second},
		{9, 2560 * time.Second}, {10, time.Hour}, {100, time.Hour},
	} {
		if got := logoutBackoff(c.attempts); got != c.want {
			t.Errorf("after %d attempts: got %v, want %v", c.attempts, got, c.want)
		}
	}
}
