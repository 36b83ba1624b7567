package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracing is the process's OpenTelemetry tracer provider, or nil when tracing is off.
type tracing struct {
	tp *sdktrace.TracerProvider
}

// newTracing reads the standard OpenTelemetry variables through lookupEnv and, when an
// OTLP endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT),
// returns a tracer provider that exports spans in batches over OTLP/HTTP (protobuf). Off,
// it returns nil: no exporter, no spans, no tracing work on any request. OTEL_SDK_DISABLED=
// true or OTEL_TRACES_EXPORTER=none turn it off even with an endpoint. The exporter reads
// the rest of its variables itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE…), and the SDK reads OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. Only the http/protobuf protocol is built in.
func newTracing(ctx context.Context, lookupEnv func(string) (string, bool)) (*tracing, error) {
	env := func(k string) string { v, _ := lookupEnv(k); return strings.TrimSpace(v) }
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") || env("OTEL_TRACES_EXPORTER") == "none" {
		return nil, nil
	}
	if e := env("OTEL_TRACES_EXPORTER"); e != "" && e != "otlp" {
		return nil, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q is not supported (want otlp or none)", e)
	}
	protocol := env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = env("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		return nil, fmt.Errorf("tracing: OTLP protocol %q is not supported (want http/protobuf)", protocol)
	}
	endpoint := env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		if base := env("OTEL_EXPORTER_OTLP_ENDPOINT"); base != "" {
			// The signal's path is appended to the generic endpoint (OTLP exporter spec).
			endpoint = strings.TrimRight(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return nil, nil
	}
	// The exporter only logs a bad URL, to the global logger, and then exports nowhere:
	// refuse it here, at start-up, where the operator sees it.
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tracing: OTLP endpoint %q is not an http:// or https:// URL", endpoint)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "gatehouse")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return &tracing{tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// provider is the tracer provider to hand the library, nil when tracing is off.
func (t *tracing) provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tp
}

// handler wraps h in a server span per request, the parent of every span below and the
// span whose trace id the access log names. Probes and scrapes are not traced: they would
// drown the requests that matter. Off, it returns h itself.
func (t *tracing) handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return otelhttp.NewHandler(h, "gatehouse",
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(noop.NewMeterProvider()),
		otelhttp.WithFilter(func(r *http.Request) bool { return !quietPath(r.URL.Path) }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}

// shutdown exports the spans still buffered and stops the exporter.
func (t *tracing) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}
