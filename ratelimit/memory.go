package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Sweeping: expired windows are dropped in a sweep of the whole table, run inline (there is
// no background goroutine, so a Memory needs no Close). A sweep runs once the operations
// since the last one reach the number of windows that sweep left (at least minSweepOps):
// its cost stays constant per operation on average, and the table holds at most about twice
// its live windows (plus minSweepOps).
const (
	minSweepOps = 1024
	// fullSweepInterval spaces the sweeps forced by a full table, so that a flood of new
	// keys cannot make every Hit scan the whole table.
	fullSweepInterval = time.Second
)

// Memory is a Limiter that keeps its counts in this process: right for a single node, since
// replicas would each count apart. It is safe for concurrent use; its memory is bounded by
// WithMaxKeys. The zero Memory is not usable; call NewMemory.
type Memory struct {
	now     func() time.Time
	maxKeys int

	mu            sync.Mutex
	windows       map[string]memoryWindow
	opsSince      int       // operations since the last sweep
	sweepAt       int       // opsSince that calls for the next sweep
	nextFullSweep time.Time // a full table is swept again no sooner than this
}

// memoryWindow is one key's current window.
type memoryWindow struct {
	count int
	end   time.Time
}

// NewMemory returns an empty Memory. It takes WithClock and WithMaxKeys.
func NewMemory(opts ...Option) *Memory {
	c := newConfig(opts)
	return &Memory{now: c.clock, maxKeys: c.maxKeys, windows: make(map[string]memoryWindow), sweepAt: minSweepOps}
}

// Hit records one attempt under key and reports whether key's current window, this attempt
// included, holds at most limit attempts; when it does not, retryAfter is the time until the
// window ends, in whole seconds and at least one. When the table is full (WithMaxKeys), a new
// key takes the place of a window chosen at random. The only error is ErrInvalidWindow.
func (m *Memory) Hit(_ context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	if window <= 0 {
		return false, 0, ErrInvalidWindow
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maybeSweep(now)
	w, held := m.windows[key]
	if !held || !now.Before(w.end) {
		if !held {
			m.makeRoom(now)
		}
		w = memoryWindow{end: now.Add(window)}
	}
	w.count++
	m.windows[key] = w
	if w.count <= limit {
		return true, 0, nil
	}
	return false, RetryAfter(w.end.Sub(now)), nil
}

// Exceeded reports, without recording anything, whether key's current window already holds
// limit or more attempts, and if so the time until it ends (whole seconds, at least one). The
// only error is ErrInvalidWindow.
func (m *Memory) Exceeded(_ context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	if window <= 0 {
		return false, 0, ErrInvalidWindow
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maybeSweep(now)
	w, held := m.windows[key]
	if !held || !now.Before(w.end) || w.count < limit {
		return false, 0, nil
	}
	return true, RetryAfter(w.end.Sub(now)), nil
}

// Reset forgets every attempt recorded under key. It never fails.
func (m *Memory) Reset(_ context.Context, key string) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maybeSweep(now)
	delete(m.windows, key)
	return nil
}

// maybeSweep counts one operation and sweeps when enough have passed. m.mu is held.
func (m *Memory) maybeSweep(now time.Time) {
	m.opsSince++
	if m.opsSince >= m.sweepAt {
		m.sweep(now)
	}
}

// makeRoom frees a slot for a new key in a full table: by a sweep of the ended windows (at
// most once per fullSweepInterval, so a flood of new keys cannot make every Hit scan the
// table), else by evicting one window chosen at random (Go randomizes map iteration). A
// flood of distinct keys so mostly evicts its own windows, while refusing new keys would
// have locked every newcomer out. m.mu is held.
func (m *Memory) makeRoom(now time.Time) {
	if len(m.windows) < m.maxKeys {
		return
	}
	if !now.Before(m.nextFullSweep) {
		m.sweep(now)
		m.nextFullSweep = now.Add(fullSweepInterval)
		if len(m.windows) < m.maxKeys {
			return
		}
	}
	for key := range m.windows {
		delete(m.windows, key)
		return
	}
}

// sweep drops the windows that have ended by now. m.mu is held.
func (m *Memory) sweep(now time.Time) {
	for key, w := range m.windows {
		if !now.Before(w.end) {
			delete(m.windows, key)
		}
	}
	m.opsSince, m.sweepAt = 0, max(minSweepOps, len(m.windows))
}
