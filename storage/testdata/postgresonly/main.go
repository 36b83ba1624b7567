// Command postgresonly is a Postgres-only embedder: it imports provider and storage but not
// storage/sqlite, so it must not link an SQLite driver. It prints what storage.Open says to
// an SQLite DSN.
package main

import (
	"context"
	"fmt"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
)

func main() {
	_ = provider.WithStore
	_, err := storage.Open(context.Background(), "sqlite::memory:")
	fmt.Println(err)
}
