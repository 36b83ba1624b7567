package server_test

import (
	"context"
	"fmt"
	"os"

	"github.com/gatehouse-id/gatehouse/server"
)

// Every subcommand explains itself with --help and exits 0.
func ExampleMain() {
	code := server.Main(context.Background(), []string{"client", "delete", "--help"}, os.Stdout, os.Stderr)
	fmt.Println("exit code", code)
	// Output:
	// Usage: gatehouse client delete --id ID [flags]
	//
	// Deletes a client; its tokens stop working.
	//
	// Flags:
	//   --id ID
	//       client id (required)
	//   --dsn DSN
	//       database: "sqlite:PATH" or "postgres://user:pass@host:5432/db?sslmode=disable" (env GATEHOUSE_DSN, default "sqlite:./gatehouse.db")
	//   --secret SECRET
	//       system secret, at least 32 bytes; required with Postgres; with SQLite and none given,
	//       one is generated once into the file PATH.secret beside the database (env GATEHOUSE_SECRET)
	//   --secret-file PATH
	//       file holding --secret, instead of giving it on the command line (env GATEHOUSE_SECRET_FILE)
	//   --log-level LEVEL
	//       debug, info, warn or error (env GATEHOUSE_LOG_LEVEL, default "info")
	// exit code 0
}
