package server

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// quietPath reports whether path is logged at debug level only: probes and scrapers poll
// these every few seconds.
func quietPath(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/metrics"
}

// accessLog gives every request an id — the incoming X-Request-Id when it is valid, else a
// random one — puts it in the request's context (RequestID) and on the response header, and
// logs one line per request: method, path (never the query, which may hold codes or
// tokens), status, bytes, duration in milliseconds and request id. It also feeds m when m is not nil.
func accessLog(logger *slog.Logger, m *metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		r = r.WithContext(withRequestID(r.Context(), id))
		rec := &responseRecorder{ResponseWriter: w}
		defer func() {
			d := time.Since(start)
			level := slog.LevelInfo
			if quietPath(r.URL.Path) {
				level = slog.LevelDebug
			}
			logger.LogAttrs(r.Context(), level, "request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", rec.statusCode()),
				slog.Int64("bytes", rec.bytes),
				slog.Float64("duration_ms", float64(d.Microseconds())/1000))
			if m != nil {
				m.observe(r.Method, rec.statusCode(), d)
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// recoverPanics turns a panic in next into a logged stack and, when nothing was written
// yet, a 500 {"error":"Internal Server Error","message":"internal error"}; when the response
// had begun, it aborts it with http.ErrAbortHandler. It lets http.ErrAbortHandler through,
// as net/http means it to.
func recoverPanics(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, ok := w.(*responseRecorder)
		if !ok {
			rec = &responseRecorder{ResponseWriter: w}
		}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			logger.ErrorContext(r.Context(), "panic serving request",
				slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			if rec.wroteHeader {
				// The response has begun: cut the connection so the client cannot take a
				// truncated answer for a whole one.
				panic(http.ErrAbortHandler)
			}
			httpjson.Write(rec, http.StatusInternalServerError,
				map[string]string{"error": "Internal Server Error", "message": "internal error"})
		}()
		next.ServeHTTP(rec, r)
	})
}

// responseRecorder remembers the status and size of a response. Unwrap lets
// http.ResponseController reach the Flusher, Hijacker and deadlines underneath.
type responseRecorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
}

func (rw *responseRecorder) WriteHeader(code int) {
	if !rw.wroteHeader && code >= 200 {
		rw.status, rw.wroteHeader = code, true
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *responseRecorder) Write(b []byte) (int, error) {
	if !rw.wroteHeader {
		rw.status, rw.wroteHeader = http.StatusOK, true
	}
	n, err := rw.ResponseWriter.Write(b)
	rw.bytes += int64(n)
	return n, err
}

func (rw *responseRecorder) Flush() {
	if !rw.wroteHeader {
		rw.status, rw.wroteHeader = http.StatusOK, true
	}
	http.NewResponseController(rw.ResponseWriter).Flush()
}

func (rw *responseRecorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// statusCode is the status sent, 200 when the handler wrote nothing.
func (rw *responseRecorder) statusCode() int {
	if rw.status == 0 {
		return http.StatusOK
	}
	return rw.status
}
