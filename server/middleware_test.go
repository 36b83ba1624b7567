package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/testlog"
)

func TestAccessLogRequestID(t *testing.T) {
	tests := []struct {
		name     string
		incoming string
		wantSame bool
	}{
		{"valid incoming id is kept", "0f8c2b6e-5d7a-4c1e-9a3b-2d4f6e8a0c1b", true},
		{"missing id is generated", "", false},
		{"id with a space is replaced", "abc def", false},
		{"id with a newline is replaced", "abc\ninjected", false},
		{"id longer than 128 characters is replaced", strings.Repeat("a", 129), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs testlog.Buffer
			var inCtx string
			h := accessLog(newLogger(&logs, slog.LevelInfo), nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inCtx = RequestID(r.Context())
				w.WriteHeader(http.StatusTeapot)
			}))
			req := httptest.NewRequest("GET", "/api/oauth/authorize?code=secret-code", nil)
			if tt.incoming != "" {
				req.Header.Set(RequestIDHeader, tt.incoming)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			got := rec.Header().Get(RequestIDHeader)
			if got == "" || !validRequestID(got) {
				t.Fatalf("response id: got %q, want a valid id", got)
			}
			if (got == tt.incoming) != tt.wantSame {
				t.Errorf("response id: got %q, incoming %q, want kept=%v", got, tt.incoming, tt.wantSame)
			}
			if inCtx != got {
				t.Errorf("context id: got %q, want %q", inCtx, got)
			}
			line := findLog(t, &logs, "request")
			if line == nil {
				t.Fatalf("no access log line in %s", logs.String())
			}
			want := map[string]any{"method": "GET", "path": "/api/oauth/authorize", "status": float64(418), "request_id": got}
			for k, v := range want {
				if line[k] != v {
					t.Errorf("log %s: got %v, want %v", k, line[k], v)
				}
			}
			if _, ok := line["duration_ms"].(float64); !ok {
				t.Errorf("log duration_ms: got %v, want a number", line["duration_ms"])
			}
			if strings.Contains(logs.String(), "secret-code") {
				t.Errorf("the log shows the query string: %s", logs.String())
			}
		})
	}
}

func TestLoggerAddsRequestIDFromContext(t *testing.T) {
	var logs testlog.Buffer
	logger := newLogger(&logs, slog.LevelInfo).With("component", "x")
	logger.InfoContext(withRequestID(context.Background(), "req-1"), "hello")
	line := findLog(t, &logs, "hello")
	if line == nil || line["request_id"] != "req-1" || line["component"] != "x" {
		t.Errorf("got %v, want request_id req-1 and component x", line)
	}
}

func TestRecoverPanics(t *testing.T) {
	var logs testlog.Buffer
	logger := newLogger(&logs, slog.LevelInfo)
	h := accessLog(logger, nil, recoverPanics(logger, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("kaboom")
	})))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))

	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status: got %d, want 500", rec.Code)
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	if body["error"] != "Internal Server Error" || body["message"] != "internal error" || len(body) != 2 {
		t.Errorf("body: got %v, want the generic 500 shape", body)
	}
	line := findLog(t, &logs, "panic serving request")
	if line == nil {
		t.Fatalf("no panic log line in %s", logs.String())
	}
	if !strings.Contains(line["stack"].(string), "TestRecoverPanics") {
		t.Errorf("stack: got %q, want the panicking frame", line["stack"])
	}
	if line["request_id"] != rec.Header().Get(RequestIDHeader) {
		t.Errorf("panic log request_id: got %v, want %q", line["request_id"], rec.Header().Get(RequestIDHeader))
	}
	if access := findLog(t, &logs, "request"); access == nil || access["status"] != float64(500) {
		t.Errorf("access line: got %v, want status 500", access)
	}
}

func TestRecoverPanicsLetsAbortHandlerThrough(t *testing.T) {
	h := recoverPanics(slog.New(slog.DiscardHandler), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", v)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
}

func TestHealthAndReadiness(t *testing.T) {
	var dbDown bool
	ready := func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("ready called without a deadline")
		}
		if dbDown {
			return errors.New("dial tcp: connection refused")
		}
		return nil
	}
	h := newHandler(slog.New(slog.DiscardHandler), http.NotFoundHandler(), ready, newMetrics(), nil)
	tests := []struct {
		name       string
		path       string
		down       bool
		wantStatus int
		wantBody   string
	}{
		{"healthz answers ok", "/healthz", false, 200, `{"status":"ok"}`},
		{"healthz answers ok while the database is down", "/healthz", true, 200, `{"status":"ok"}`},
		{"readyz answers ok when the database is reachable", "/readyz", false, 200, `{"status":"ok"}`},
		{"readyz answers 503 when the database is down", "/readyz", true, 503, `{"status":"unavailable"}`},
		{"other paths go to the provider", "/api/oauth/token", false, 404, "404 page not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbDown = tt.down
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := strings.TrimSpace(rec.Body.String()); got != tt.wantBody {
				t.Errorf("body: got %q, want %q", got, tt.wantBody)
			}
		})
	}
}

func TestMetricsCountRequests(t *testing.T) {
	m := newMetrics()
	h := newHandler(slog.New(slog.DiscardHandler), http.NotFoundHandler(), func(context.Context) error { return nil }, m, nil)
	for _, p := range []string{"/healthz", "/healthz", "/nope"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("BREW", "/nope", nil))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`gatehouse_http_requests_total{code="200",method="GET"} 2`,
		`gatehouse_http_requests_total{code="404",method="GET"} 1`,
		`gatehouse_http_requests_total{code="404",method="OTHER"} 1`,
		`gatehouse_http_request_duration_seconds_bucket{method="GET",le="+Inf"} 3`,
		`gatehouse_http_request_duration_seconds_count{method="GET"} 3`,
		"# TYPE gatehouse_http_request_duration_seconds histogram",
		// The Go runtime's and the process's collectors.
		"# TYPE go_goroutines gauge",
		"# TYPE go_memstats_heap_alloc_bytes gauge",
		"# TYPE process_resident_memory_bytes gauge",
		"# TYPE process_cpu_seconds_total counter",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics: missing %q in\n%s", want, body)
		}
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type: got %q, want the Prometheus text format", ct)
	}
}

func TestRecoverPanicsAfterHeadersAbortsResponse(t *testing.T) {
	var logs testlog.Buffer
	logger := newLogger(&logs, slog.LevelInfo)
	h := accessLog(logger, nil, recoverPanics(logger, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"partial":`))
		panic("kaboom")
	})))
	rec := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler so the connection is cut", v)
			}
		}()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	}()
	if got := rec.Body.String(); got != `{"partial":` {
		t.Errorf("body: got %q, want only what the handler wrote", got)
	}
	if findLog(t, &logs, "panic serving request") == nil {
		t.Errorf("no panic log line in %s", logs.String())
	}
	if findLog(t, &logs, "request") == nil {
		t.Errorf("no access log line in %s", logs.String())
	}
}
