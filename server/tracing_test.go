package server

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// otlpReceiver is an OTLP/HTTP trace receiver on 127.0.0.1: it decodes every
// ExportTraceServiceRequest posted to /v1/traces and keeps its spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: unexpected %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			t.Errorf("OTLP receiver: decode: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				rcv.spans = append(rcv.spans, ss.GetSpans()...)
			}
		}
		rcv.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

func (rcv *otlpReceiver) received() []*tracepb.Span {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return append([]*tracepb.Span(nil), rcv.spans...)
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, one login is one trace: the HTTP server span is
// its root, every database statement of the login is a descendant of it, the access log
// line of the request names its trace and span, and no span holds the email or password.
func TestTracingOneLoginSpanTree(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dsn := b.DSN(t)
			store := []string{"--dsn", dsn}
			if _, isFile := sqlitePath(dsn); !isFile {
				store = append(store, "--secret", strings.Repeat("k", 32))
			}
			const email, password = "ann@example.com", "correct horse battery staple"
			mustRun(t, nil, append([]string{"user", "create", "--email", email, "--password", password, "--verified"}, store...)...)

			rcv := newOTLPReceiver(t)
			base, logs, stop := startServerEnv(t, "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL},
				append([]string{"--janitor-interval=-1s"}, store...)...)
			resp, err := http.Post(base+"/api/public/login", "application/json",
				strings.NewReader(`{"email":"`+email+`","password":"`+password+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("login: %d, want 200", resp.StatusCode)
			}
			requestID := resp.Header.Get(RequestIDHeader)
			if code := stop(); code != 0 { // flushes the spans
				t.Fatalf("exit code %d; logs:\n%s", code, logs.String())
			}

			var access map[string]any
			for _, l := range logLines(t, logs) {
				if l["msg"] == "request" && l["request_id"] == requestID {
					access = l
				}
			}
			traceID, _ := access["trace_id"].(string)
			spanID, _ := access["span_id"].(string)
			if len(traceID) != 32 || len(spanID) != 16 {
				t.Fatalf("access log line of the login: want a trace_id and span_id, got %v", access)
			}

			byID := map[string]*tracepb.Span{}
			var inTrace []*tracepb.Span
			for _, s := range rcv.received() {
				for _, kv := range s.GetAttributes() {
					if v := kv.GetValue().String(); strings.Contains(v, email) || strings.Contains(v, password) {
						t.Errorf("span %q attribute %s holds a credential: %s", s.GetName(), kv.GetKey(), v)
					}
				}
				if hex.EncodeToString(s.GetTraceId()) == traceID {
					inTrace = append(inTrace, s)
					byID[hex.EncodeToString(s.GetSpanId())] = s
				}
			}
			root := byID[spanID]
			if root == nil {
				t.Fatalf("no exported span %s of trace %s; got %d spans in the trace", spanID, traceID, len(inTrace))
			}
			if root.GetKind() != tracepb.Span_SPAN_KIND_SERVER || len(root.GetParentSpanId()) != 0 || root.GetName() != "POST" {
				t.Errorf("root: got %q kind %v parent %x, want the POST server span with no parent", root.GetName(), root.GetKind(), root.GetParentSpanId())
			}
			var statements, servers int
			for _, s := range inTrace {
				if s.GetKind() == tracepb.Span_SPAN_KIND_SERVER {
					servers++
				}
				if !strings.HasPrefix(s.GetName(), "db.") {
					continue
				}
				statements++
				// Walk up: every statement span descends from the root, within the trace.
				cur, hops := s, 0
				for len(cur.GetParentSpanId()) != 0 && hops < 64 {
					cur, hops = byID[hex.EncodeToString(cur.GetParentSpanId())], hops+1
					if cur == nil {
						t.Fatalf("statement span %q has a parent outside the trace", s.GetName())
					}
				}
				if cur != root {
					t.Errorf("statement span %q does not descend from the request's span", s.GetName())
				}
				if !hasAttr(s, "db.query.text") || !hasAttr(s, "db.system.name") {
					t.Errorf("statement span %q lacks db.query.text or db.system.name: %v", s.GetName(), s.GetAttributes())
				}
			}
			if statements == 0 {
				t.Errorf("no database statement span under the login's span; trace has %d spans", len(inTrace))
			}
			if servers != 1 {
				t.Errorf("server spans in the login's trace: got %d, want 1 (the provider must not add its own under the server's)", servers)
			}
			for _, s := range rcv.received() {
				if len(s.GetParentSpanId()) == 0 && s.GetKind() == tracepb.Span_SPAN_KIND_SERVER && attr(s, "url.path") == "/healthz" {
					t.Error("a /healthz probe was traced")
				}
			}
		})
	}
}

func hasAttr(s *tracepb.Span, key string) bool { return attr(s, key) != "" }

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			if v := kv.GetValue().GetStringValue(); v != "" {
				return v
			}
			return kv.GetValue().String()
		}
	}
	return ""
}

// Without an OTLP endpoint tracing is off: no tracer provider, no trace ids in the logs.
func TestTracingOffWithoutEndpoint(t *testing.T) {
	base, logs, stop := startServer(t, "--dsn", "sqlite:"+t.TempDir()+"/g.db", "--janitor-interval=-1s")
	resp, err := http.Get(base + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop()
	if l := findLog(t, logs, "gatehouse listening"); l == nil || l["tracing"] != false {
		t.Errorf("start-up line: want tracing false, got %v", l)
	}
	if strings.Contains(logs.String(), "trace_id") {
		t.Errorf("a log line has a trace_id with tracing off:\n%s", logs.String())
	}
}

// newTracing reads the standard variables: the traces endpoint wins over the generic one,
// the SDK switch and the exporter "none" turn tracing off, and what is not built in is an
// error rather than silence.
func TestNewTracingFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		wantErr string
	}{
		{"unset", nil, false, ""},
		{"generic endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"exporter zipkin", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, false, "not supported"},
		{"grpc protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "http/protobuf"},
		{"bad endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "://nope"}, false, "not an http"},
		{"no host", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://"}, false, "not an http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := newTracing(context.Background(), envOf(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err: got %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tr != nil) != tc.on {
				t.Fatalf("tracing on: got %v, want %v", tr != nil, tc.on)
			}
			_ = tr.shutdown(context.Background())
		})
	}
}
