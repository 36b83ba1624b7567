package social

import (
	"context"
	"net/http"

	"github.com/markbates/goth/providers/facebook"
	"github.com/markbates/goth/providers/openidConnect"
	"go.opentelemetry.io/otel/trace"
)

// goth makes its calls without a context, so a client span of an instrumented transport
// (Config.HTTPClient wrapped by the provider's tracing) would start a trace of its own.
// These helpers hand goth, for one request, a copy of its provider whose client carries
// the request's span to the transport. Without a span in ctx (tracing off) they return the
// shared provider itself: no copy, no cost.

// spanTransport sets span as the parent of every request's context; nothing else of the
// request's context changes, so timeouts stay the client's.
type spanTransport struct {
	span trace.Span
	next http.RoundTripper
}

func (t spanTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(r.WithContext(trace.ContextWithSpan(r.Context(), t.span)))
}

// spanClient returns client with ctx's span carried to its transport, or nil when ctx has
// no span.
func spanClient(ctx context.Context, client *http.Client) *http.Client {
	span := trace.SpanFromContext(ctx)
	if !span.SpanContext().IsValid() {
		return nil
	}
	c := &http.Client{}
	if client != nil {
		copied := *client
		c = &copied
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = spanTransport{span: span, next: next}
	return c
}

// openIDWithSpan is p, or a copy whose calls are children of ctx's span.
func openIDWithSpan(ctx context.Context, p *openidConnect.Provider) *openidConnect.Provider {
	c := spanClient(ctx, p.HTTPClient)
	if c == nil {
		return p
	}
	cp := *p
	cp.HTTPClient = c
	return &cp
}

// facebookWithSpan is p, or a copy whose calls are children of ctx's span.
func facebookWithSpan(ctx context.Context, p *facebook.Provider) *facebook.Provider {
	c := spanClient(ctx, p.HTTPClient)
	if c == nil {
		return p
	}
	cp := *p
	cp.HTTPClient = c
	return &cp
}
