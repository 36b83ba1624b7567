package publicauth

import (
	"bytes"
	"testing"
)

// newPIN redraws the 32-bit values that would bias the PIN towards low numbers.
func TestNewPINRejectsBiasedDraws(t *testing.T) {
	for _, tc := range []struct {
		name   string
		random []byte
		want   string
	}{
		{"first draw kept", []byte{0, 0, 0, 7}, "000007"},
		{"largest kept draw", []byte{0xff, 0xf1, 0x3d, 0x7f}, "999999"},                                        // 4293999999
		{"draw of the last partial range redrawn", []byte{0xff, 0xf1, 0x3d, 0x80, 0, 0, 0x30, 0x39}, "012345"}, // 4294000000, then 12345
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Service{random: bytes.NewReader(tc.random)}
			got, err := s.newPIN()
			if err != nil {
				t.Fatalf("newPIN: %v", err)
			}
			if got != tc.want {
				t.Errorf("newPIN = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("a source that never yields an unbiased value fails", func(t *testing.T) {
		s := &Service{random: bytes.NewReader(bytes.Repeat([]byte{0xff}, 4*16))}
		if _, err := s.newPIN(); err == nil {
			t.Errorf("newPIN succeeded on a source of only rejected values")
		}
	})
}
