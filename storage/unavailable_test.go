package storage_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
)

// A database that refuses connections is reported as ErrUnavailable, which the HTTP surfaces
// answer with 503 rather than 500.
func TestOpenUnreachablePostgresIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there any more: connections are refused

	_, err = storage.Open(context.Background(), "postgres://gatehouse@"+addr+"/gatehouse?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open succeeded against a closed port")
	}
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("got %v, want an error wrapping storage.ErrUnavailable", err)
	}
	var u interface{ Unavailable() bool }
	if !errors.As(err, &u) || !u.Unavailable() {
		t.Errorf("got %v, want an error with Unavailable() true", err)
	}
}
