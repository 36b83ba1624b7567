// Package server is what a process needs around the provider: configuration from flags and
// GATEHOUSE_* environment variables, a JSON slog logger, request ids and access logs, panic
// recovery, Prometheus metrics (prometheus/client_golang, with the Go runtime and process
// collectors; package provider links none of it), OpenTelemetry tracing over OTLP when the standard
// OTEL_* variables name an endpoint, health and readiness probes, graceful shutdown, the
// administration subcommands and the demo relying party.
//
// A main is a few lines (examples/server):
//
//	func main() {
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		go func() { <-ctx.Done(); stop() }() // a second signal ends the process at once
//		os.Exit(server.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
//	}
//
// Main understands these subcommands (serve when none is given); each explains its flags
// with --help:
//
//	serve                         run the provider over HTTP
//	migrate                       apply pending database migrations
//	client create|list|update|rotate-secret|delete|registration-token create
//	                              manage OAuth clients
//	user create|update|delete     manage users
//	keys rotate                   add a new signing key of each algorithm
//
// Settings are read from a flag, else from its GATEHOUSE_* variable, else from the default.
// Commands that print data print JSON to stdout; logs and errors go to stderr. The exit code
// is 0 on success, 1 on failure and 2 on a usage error.
package server
