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
	sink   Sink
	record Recorder
	log    *slog.Logger
	now    func() time.Time
}

// Recorder writes an event to the audit trail, inside the transaction ctx carries (or on
// its own without one): the change and its record commit or roll back together. Its error
// is Emit's, which the emitting change returns so that it rolls back.
type Recorder func(ctx context.Context, e Event) error

// EmitterOption configures an Emitter.
type EmitterOption func(*Emitter)

// WithRecorder makes the Emitter write every event through rec as it is emitted, in the
// emitting transaction, before (and independently of) its delivery to the sink.
func WithRecorder(rec Recorder) EmitterOption {
	return func(em *Emitter) { em.record = rec }
}

// NewEmitter returns an Emitter delivering to sink, logging a sink's panic to log
// (slog.Default() when nil) and stamping Meta.At with now (time.Now when nil). It returns
// nil for a nil sink without a recorder (WithRecorder), which drops every event.
func NewEmitter(sink Sink, log *slog.Logger, now func() time.Time, opts ...EmitterOption) *Emitter {
	em := &Emitter{sink: sink}
	for _, o := range opts {
		o(em)
	}
	if sink == nil && em.record == nil {
		return nil
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	em.log, em.now = log, now
	return em
}

// Emit stamps e (Meta.At when zero, and the request data of ctx, see WithRequest), records
// it (WithRecorder) in the transaction ctx carries, and delivers it: once that transaction
// commits, or at once without one; never when it rolls back. A panic in the sink is
// recovered and logged. The error is the recorder's: the caller returns it, so that its
// change rolls back rather than commit without its record; the event is then not delivered.
func (em *Emitter) Emit(ctx context.Context, e Event) error {
	if em == nil {
		return nil
	}
	m := e.meta()
	if m.At.IsZero() {
		m.At = em.now().UTC()
	}
	if r, ok := ctx.Value(requestKey{}).(request); ok && !m.ClientIP.IsValid() && m.UserAgent == "" {
		m.ClientIP, m.UserAgent = r.ip, r.userAgent
	}
	if em.record != nil {
		if err := em.record(ctx, e); err != nil {
			return err
		}
	}
	if em.sink != nil {
		aftercommit.Do(ctx, func(ctx context.Context) { em.deliver(ctx, e) })
	}
	return nil
}

// Request returns the client address and user agent WithRequest recorded on ctx: the zero
// Addr and "" without one.
func Request(ctx context.Context) (netip.Addr, string) {
	r, _ := ctx.Value(requestKey{}).(request)
	return r.ip, r.userAgent
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
