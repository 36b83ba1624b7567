package server

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugMux serves net/http/pprof: the index, cmdline, profile (CPU), symbol and trace
// handlers, and every runtime profile (heap, goroutine, allocs, block, mutex, …) by name
// under /debug/pprof/. It is served only on the --debug-addr listener, never on the public
// handler.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// checkDebugAddr accepts only a loopback address for --debug-addr: the profiles reveal
// memory contents (heap), command lines and timings, and have no authentication. To
// profile a remote server, tunnel to its loopback port (ssh -L 6060:127.0.0.1:6060 host).
// An empty host (":6060") listens on every interface and is refused too.
func checkDebugAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errors.New("want a loopback address such as 127.0.0.1:6060 (the profiles are unauthenticated)")
}

// startDebug listens on addr and serves debugMux there until the returned stop is called.
// Serving errors after a successful listen are logged, not fatal: profiling is an aid, never
// a reason to stop the provider.
func startDebug(addr string, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           debugMux(),
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: a CPU profile or trace streams for as long as it was asked to.
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Warn("pprof debug listener on; its profiles are unauthenticated", slog.String("debug_addr", ln.Addr().String()))
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("debug listener", slog.Any("error", err))
		}
	}()
	return func() { srv.Close() }, nil
}
