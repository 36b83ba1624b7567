package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// With WithTracerProvider every statement is a span under the caller's span, carrying the
// SQL with its placeholders and never a bound value; PoolStats reads the pool.
func TestStatementSpansCarryNoValues(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			s := b.OpenWith(t, storage.WithTracerProvider(tp))
			rec.Reset() // the migration's statements

			ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
			const secret = "needle-7f3a@example.com"
			if _, err := s.UserByEmail(ctx, secret); !errors.Is(err, publicauth.ErrUserNotFound) {
				t.Fatalf("UserByEmail of nobody: got %v, want ErrUserNotFound", err)
			}
			parent.End()

			var statements int
			for _, span := range rec.Ended() {
				if !strings.HasPrefix(span.Name(), "db.") {
					continue
				}
				statements++
				if span.Parent().SpanID() != parent.SpanContext().SpanID() {
					t.Errorf("span %q is not a child of the caller's span", span.Name())
				}
				var query string
				for _, kv := range span.Attributes() {
					if strings.Contains(kv.Value.Emit(), secret) {
						t.Errorf("span %q attribute %s holds the bound value: %s", span.Name(), kv.Key, kv.Value.Emit())
					}
					if kv.Key == "db.query.text" {
						query = kv.Value.AsString()
					}
				}
				if !strings.Contains(query, "SELECT") {
					t.Errorf("span %q: db.query.text %q, want the SELECT", span.Name(), query)
				}
				if span.Status().Code != 0 {
					t.Errorf("span %q: status %v, want unset for a row not found", span.Name(), span.Status())
				}
			}
			if statements == 0 {
				t.Error("no statement span")
			}

			stats, err := s.PoolStats()
			if err != nil || stats.OpenConnections < 1 {
				t.Errorf("PoolStats: %+v, %v; want an open connection", stats, err)
			}
		})
	}
}
