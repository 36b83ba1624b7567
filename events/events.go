package events

import (
	"context"
	"log/slog"
	"net/netip"
	"runtime/debug"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/aftercommit"
)

// Event is one of the event types of this package (always a pointer: *LoginSucceeded, …).
type Event interface {
	// Name is the event's stable name, such as "login.succeeded": a metric label or an
	// audit-trail column.
	Name() string
	// When is the time the change took effect (Meta.At).
	When() time.Time
	// Metadata is a copy of the event's Meta, for a sink that handles every event alike
	// (an audit trail writing the client address of each).
	Metadata() Meta
	// meta closes the set: only types embedding Meta are events.
	meta() *Meta
}

// Meta is what every event carries besides its own fields.
type Meta struct {
	// At is when the change took effect, by the emitting provider's clock, in UTC.
	At time.Time
	// ClientIP is the address of the client whose request made the change: the
	// connection's peer, or behind a trusted proxy the address it forwarded
	// (publicauth.ClientIP). The zero Addr when the change came from no request (a call
	// from Go, the command line).
	ClientIP netip.Addr
	// UserAgent is that request's User-Agent header, at most MaxUserAgent bytes; "" without
	// a request.
	UserAgent string
}

// When returns m.At.
func (m *Meta) When() time.Time { return m.At }

// Metadata returns a copy of m.
func (m *Meta) Metadata() Meta { return *m }

func (m *Meta) meta() *Meta { return m }

// MaxUserAgent bounds Meta.UserAgent: a longer header is cut to this many bytes.
const MaxUserAgent = 256

// Sink receives every event. A nil Sink drops them.
type Sink func(ctx context.Context, e Event)

// requestKey is the context key of the request data WithRequest records.
type requestKey struct{}

type request struct {
	ip        netip.Addr
	userAgent string
}

// WithRequest returns a context recording the client address and user agent of the request
// it serves; every event emitted with it (or a context derived from it) carries them in its
// Meta.
func WithRequest(ctx context.Context, clientIP netip.Addr, userAgent string) context.Context {
	if len(userAgent) > MaxUserAgent {
		userAgent = userAgent[:MaxUserAgent]
	}
	return context.WithValue(ctx, requestKey{}, request{ip: clientIP, userAgent: userAgent})
}

// Emitter stamps events and delivers them to a Sink by the package's rules: after the
// commit, safely, in the request. A nil *Emitter, and one with a nil Sink, drop every event.
// It is safe for concurrent use.
type Emitter struct {
	sink Sink
	log  *slog.Logger
	now  func() time.Time
}

// NewEmitter returns an Emitter delivering to sink, logging a sink's panic to log
// (slog.Default() when nil) and stamping Meta.At with now (time.Now when nil). It returns
// nil for a nil sink, which drops every event.
func NewEmitter(sink Sink, log *slog.Logger, now func() time.Time) *Emitter {
	if sink == nil {
		return nil
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Emitter{sink: sink, log: log, now: now}
}

// Emit stamps e (Meta.At when zero, and the request data of ctx, see WithRequest) and
// delivers it: once the transaction ctx carries commits, or at once without one; never
// when that transaction rolls back. A panic in the sink is recovered and logged.
func (em *Emitter) Emit(ctx context.Context, e Event) {
	if em == nil || em.sink == nil {
		return
	}
	m := e.meta()
	if m.At.IsZero() {
		m.At = em.now().UTC()
	}
	if r, ok := ctx.Value(requestKey{}).(request); ok && !m.ClientIP.IsValid() && m.UserAgent == "" {
		m.ClientIP, m.UserAgent = r.ip, r.userAgent
	}
	aftercommit.Do(ctx, func(ctx context.Context) { em.deliver(ctx, e) })
}

// deliver calls the sink, recovering a panic.
func (em *Emitter) deliver(ctx context.Context, e Event) {
	defer func() {
		if v := recover(); v != nil {
			em.log.ErrorContext(ctx, "events: the event sink panicked", "event", e.Name(),
				"panic", v, "stack", string(debug.Stack()))
		}
	}()
	em.sink(ctx, e)
}
