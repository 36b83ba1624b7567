package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// readyTimeout bounds one readiness check.
const readyTimeout = 2 * time.Second

// healthz answers 200 {"status":"ok"} while the process can serve HTTP at all.
func healthz(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 {"status":"ok"} when ready succeeds within two seconds, else 503
// {"status":"unavailable"} (the cause goes to the log, never to the client).
func readyz(logger *slog.Logger, ready func(context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := ready(ctx); err != nil {
			logger.WarnContext(r.Context(), "not ready", slog.Any("error", err))
			w.Header().Set("Retry-After", "5")
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			return
		}
		httpjson.Write(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}
