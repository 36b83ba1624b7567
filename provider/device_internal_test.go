package provider

import (
	"testing"
	"time"
)

// TestPollTooSoon is the decision behind slow_down (RFC 8628 §3.5): a poll is too soon
// only when it arrives earlier than the interval, less pollTolerance, after the previous
// one. The clock is the test's: each case gives the previous poll and now.
func TestPollTooSoon(t *testing.T) {
	last := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, c := range []struct {
		name     string
		interval time.Duration
		// since is now minus the previous poll; noPrevious for the first poll.
		since      time.Duration
		noPrevious bool
		want       bool
	}{
		{name: "the first poll", interval: 5 * time.Second, noPrevious: true},
		{name: "5 s interval, exactly on time", interval: 5 * time.Second, since: 5 * time.Second},
		{name: "5 s interval, late", interval: 5 * time.Second, since: 7 * time.Second},
		{name: "5 s interval, 3 ms early (a fixed timer's jitter)", interval: 5 * time.Second, since: 5*time.Second - 3*time.Millisecond},
		{name: "5 s interval, 1 s early: the tolerance", interval: 5 * time.Second, since: 4 * time.Second},
		{name: "5 s interval, just over 1 s early", interval: 5 * time.Second, since: 4*time.Second - time.Millisecond, want: true},
		{name: "5 s interval, at once", interval: 5 * time.Second, since: 0, want: true},
		{name: "1 s interval, 200 ms early: a fifth", interval: time.Second, since: 800 * time.Millisecond},
		{name: "1 s interval, 201 ms early", interval: time.Second, since: 799 * time.Millisecond, want: true},
		{name: "30 s interval, the tolerance stays 1 s", interval: 30 * time.Second, since: 29 * time.Second},
		{name: "30 s interval, 2 s early", interval: 30 * time.Second, since: 28 * time.Second, want: true},
		{name: "the clock went back", interval: time.Second, since: -time.Second, want: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			previous := &last
			if c.noPrevious {
				previous = nil
			}
			if got := pollTooSoon(previous, c.interval, last.Add(c.since)); got != c.want {
				t.Errorf("pollTooSoon(%v after, interval %v) = %v, want %v", c.since, c.interval, got, c.want)
			}
		})
	}
}
