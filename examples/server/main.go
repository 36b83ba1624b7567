// Command server is the bundled Gatehouse server and its administration CLI.
//
//	go run ./examples/server                      # serve on :8080 with ./gatehouse.db
//	go run ./examples/server client create --help # and the other subcommands
//
// Everything it does lives in package server; see its documentation for the flags and
// GATEHOUSE_* environment variables.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gatehouse-id/gatehouse/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once instead of waiting for shutdown
	}()
	os.Exit(server.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
