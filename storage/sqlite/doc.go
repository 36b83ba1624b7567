// Package sqlite links the pure-Go SQLite driver (github.com/glebarez/sqlite, on
// modernc.org/sqlite) into a program and registers it with package storage, as
// database/sql drivers register themselves:
//
//	import _ "github.com/gatehouse-id/gatehouse/storage/sqlite"
//
// Then storage.Open accepts "sqlite:PATH" DSNs, and storage.FromDB and storage.FromGorm
// accept SQLite pools of this driver. A program that does not import it (a Postgres-only
// embedder) does not link the driver; storage.Open("sqlite:…") then fails with an error
// naming this import.
package sqlite
