package redis

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/ratelimit"
)

// Once the cool-down is over, one call probes and the others keep failing fast until the
// probe answers; a probe its caller abandoned is owed to the next call.
func TestBreakerOneProbe(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := &breaker{coolDown: time.Second, now: func() time.Time { return now }, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := b.allow(); err != nil {
		t.Fatalf("closed: %v", err)
	}
	b.done(failed, errors.New("connection refused"))
	if err := b.allow(); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("open: %v, want ErrBreakerOpen", err)
	}
	now = now.Add(time.Second)
	if err := b.allow(); err != nil {
		t.Fatalf("the probe: %v", err)
	}
	if err := b.allow(); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("a call during the probe: %v, want ErrBreakerOpen", err)
	}
	b.done(abandoned, errors.New("context canceled"))
	if err := b.allow(); err != nil {
		t.Fatalf("the next call after an abandoned probe: %v, want it to probe", err)
	}
	b.done(answered, nil)
	if state, opened := b.snapshot(); state != ratelimit.BreakerClosed || opened != 1 {
		t.Errorf("after the probe answered: %v, opened %d; want closed, 1", state, opened)
	}
}

// New bounds connecting, reading and writing by the timeout, dials once and retries a
// command once, unless the URL says otherwise.
func TestNewBoundsTimeouts(t *testing.T) {
	r, err := New("redis://127.0.0.1:6379/0", WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o := r.client.Options()
	if o.DialTimeout != 300*time.Millisecond || o.ReadTimeout != 300*time.Millisecond || o.WriteTimeout != 300*time.Millisecond || o.MaxRetries != 1 || o.DialerRetries != 1 {
		t.Errorf("dial %v read %v write %v retries %d dial tries %d; want 300ms each, 1 retry, 1 dial", o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries, o.DialerRetries)
	}
	r, err = New("redis://127.0.0.1:6379/0?dial_timeout=2s&max_retries=4", WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if o := r.client.Options(); o.DialTimeout != 2*time.Second || o.MaxRetries != 4 || o.ReadTimeout != 300*time.Millisecond {
		t.Errorf("dial %v retries %d read %v; want the URL's 2s and 4, and 300ms", o.DialTimeout, o.MaxRetries, o.ReadTimeout)
	}
}
