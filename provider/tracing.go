package provider

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/social"
)

// tracerName is the instrumentation scope of the provider's own spans.
const tracerName = "github.com/gatehouse-id/gatehouse/provider"

// WithTracerProvider makes the provider trace itself with OpenTelemetry spans from tp: a
// server span for every request it serves (unless the embedder's middleware already started
// one, which then is the parent of everything below), a span for every database statement
// of the store New opens (see storage.WithTracerProvider for a store given by WithStore),
// one for every mail handed to the mailer, and a client span for every call to an upstream
// identity provider or a client's jwks_uri (fosite adds spans of its own, such as
// Fosite.NewAccessRequest, from the request's span). The provider never touches the global tracer provider or propagator:
// an incoming W3C traceparent header is honoured, and none is sent to upstream providers
// or clients' key servers, which are third parties. Without it, or with nil (the default), nothing is traced and the
// request path does no tracing work at all.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error { o.tracer = tp; return nil }
}

// traceRequests wraps h in an OpenTelemetry server span per request when tracing is on.
// A request that arrives with a span of this process already (the server's or an
// embedder's middleware) keeps it, so each request has exactly one server span.
func traceRequests(tp trace.TracerProvider, h http.Handler) http.Handler {
	if tp == nil {
		return h
	}
	traced := otelhttp.NewHandler(h, "gatehouse", otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(noop.NewMeterProvider()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() && !sc.IsRemote() {
			h.ServeHTTP(w, r)
			return
		}
		traced.ServeHTTP(w, r)
	})
}

// tracedClient returns client, or a copy of it whose calls are client spans when tracing is
// on. No trace context is propagated: the other side is a third party.
func tracedClient(tp trace.TracerProvider, client *http.Client) *http.Client {
	if tp == nil {
		return client
	}
	c := &http.Client{Timeout: social.DefaultHTTPTimeout}
	if client != nil {
		copied := *client
		c = &copied
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = tracedTransport(tp, next)
	return c
}

// tracedTransport wraps next so that every request is a client span under tp, without a
// traceparent sent: the servers called are third parties.
func tracedTransport(tp trace.TracerProvider, next http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(next, otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()),
		otelhttp.WithMeterProvider(noop.NewMeterProvider()))
}

// tracedMailer wraps every Send of a mailer in a span.
type tracedMailer struct {
	next   publicauth.Mailer
	tracer trace.Tracer
}

// Send implements publicauth.Mailer. The span names the mail's subject line, never its
// recipient or body, which carry addresses and one-time secrets.
func (m tracedMailer) Send(ctx context.Context, msg publicauth.Message) error {
	ctx, span := m.tracer.Start(ctx, "mail.send", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gatehouse.mail.subject", msg.Subject)))
	defer span.End()
	err := m.next.Send(ctx, msg)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "mail not sent")
	}
	return err
}

// traceMailer returns m, wrapped in spans when tracing is on.
func traceMailer(tp trace.TracerProvider, m publicauth.Mailer) publicauth.Mailer {
	if tp == nil {
		return m
	}
	return tracedMailer{next: m, tracer: tp.Tracer(tracerName)}
}
