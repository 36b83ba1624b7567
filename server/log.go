package server

import (
	"context"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log/slog"
)

// newLogger returns a JSON logger writing to w at level and above. Records logged with a
// context that carries a request id (see RequestID) get a "request_id" attribute, and with
// a context in a trace (tracing on) a "trace_id" and a "span_id", so the provider's own log
// lines, the access log among them, name the request and the trace they belong to.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(requestIDHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})})
}

// requestIDHandler adds the context's request id to every record.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
