package provider

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestUnknownKIDReloadsAtMostEvery5s: a replica that meets a kid it does not know reloads the
// key set (the key may have been rotated elsewhere since its last reload), but no more than
// once every unknownKIDReloadEvery, so forged kids cannot hammer the database.
func TestUnknownKIDReloadsAtMostEvery5s(t *testing.T) {
	ctx := context.Background()
	store := storagetest.Backends(t)[0].Open(t)
	seal, err := newSealer([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	newKeySet := func(now func() time.Time) *keySet {
		return &keySet{store: store, sealer: seal, random: rand.Reader, now: now,
			log: slog.New(slog.NewTextHandler(io.Discard, nil)), retention: time.Hour, reloadEvery: time.Hour}
	}
	elsewhere := newKeySet(time.Now)
	if err := elsewhere.ensure(ctx); err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	here := newKeySet(func() time.Time { return clock })
	if err := here.ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := elsewhere.rotate(ctx); err != nil {
		t.Fatal(err)
	}
	rotated, err := elsewhere.activeKey(AlgRS256)
	if err != nil {
		t.Fatal(err)
	}

	if _, ok := here.lookup(rotated.kid); ok {
		t.Fatal("found a key rotated elsewhere within 5 s of the last reload; want no reload yet")
	}
	clock = clock.Add(unknownKIDReloadEvery)
	if _, ok := here.lookup(rotated.kid); !ok {
		t.Fatalf("kid %s rotated elsewhere: not found after the reload it should cause", rotated.kid)
	}
	if err := elsewhere.rotate(ctx); err != nil {
		t.Fatal(err)
	}
	again, _ := elsewhere.activeKey(AlgRS256)
	clock = clock.Add(unknownKIDReloadEvery - time.Second)
	if _, ok := here.lookup(again.kid); ok {
		t.Error("a second unknown kid within 5 s caused another reload")
	}
}
