package storagetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
)

// testConcurrentSigningKeyRotation: replicas that find the same algorithm's key due at the
// same moment all try to rotate it; the database lets exactly one of them add a key, and a
// key that is not yet due is never replaced.
func testConcurrentSigningKeyRotation(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustNoErr(t, "AddSigningKey", s.AddSigningKey(ctx, &storage.SigningKey{
		KID: "ec-1", Algorithm: "ES256", Sealed: []byte("sealed-ec-1"), CreatedAt: t0}))
	mustNoErr(t, "AddSigningKey", s.AddSigningKey(ctx, &storage.SigningKey{
		KID: "rsa-1", Algorithm: "RS256", Sealed: []byte("sealed-rsa-1"), CreatedAt: t0}))
	rotate := func(kid, alg string, created, due time.Time) (bool, error) {
		return s.RotateSigningKey(ctx, &storage.SigningKey{KID: kid, Algorithm: alg, Sealed: []byte("sealed-" + kid), CreatedAt: created}, due)
	}

	// Not due: the active key is newer than due.
	if rotated, err := rotate("ec-early", "ES256", t0.Add(time.Hour), t0.Add(-time.Second)); err != nil || rotated {
		t.Errorf("RotateSigningKey before the key is due: got %v, %v; want false, nil", rotated, err)
	}
	// No active key of that algorithm: nothing to rotate.
	if rotated, err := rotate("ed-1", "EdDSA", t0.Add(time.Hour), t0.Add(time.Hour)); err != nil || rotated {
		t.Errorf("RotateSigningKey of an algorithm without keys: got %v, %v; want false, nil", rotated, err)
	}

	// Due (rotation every hour, the key is a day old): ten replicas race at the same time,
	// each with its own new key.
	const n = 10
	rotatedAt := t0.Add(24 * time.Hour)
	due := rotatedAt.Add(-time.Hour)
	results := make([]bool, n)
	errs := runConcurrently(n, func(i int) error {
		var err error
		results[i], err = rotate(fmt.Sprintf("ec-2-%d", i), "ES256", rotatedAt, due)
		return err
	})
	won := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("RotateSigningKey #%d: got error %v, want nil", i, errs[i])
		}
		if results[i] {
			won++
		}
	}
	if won != 1 {
		t.Errorf("RotateSigningKey raced by %d replicas: %d rotated, want exactly 1", n, won)
	}
	// Just rotated, the new key is not due.
	if rotated, err := rotate("ec-3", "ES256", rotatedAt.Add(time.Second), due.Add(time.Second)); err != nil || rotated {
		t.Errorf("RotateSigningKey right after a rotation: got %v, %v; want false, nil", rotated, err)
	}
	// A kid that exists rolls back: the active key stays active.
	_, err := rotate("ec-1", "ES256", rotatedAt.Add(48*time.Hour), rotatedAt.Add(48*time.Hour))
	checkErr(t, "RotateSigningKey with an existing kid", err, storage.ErrConflict)

	keys, err := s.SigningKeys(ctx)
	mustNoErr(t, "SigningKeys", err)
	active := map[string][]string{}
	var es256 []string
	for _, k := range keys {
		if k.RetiredAt == nil {
			active[k.Algorithm] = append(active[k.Algorithm], k.KID)
		}
		if k.Algorithm == "ES256" {
			es256 = append(es256, k.KID)
			if k.KID == "ec-1" && (k.RetiredAt == nil || !k.RetiredAt.Equal(rotatedAt)) {
				t.Errorf("the rotated key ec-1: retired at %v, want %v", k.RetiredAt, rotatedAt)
			}
		}
	}
	if len(es256) != 2 || len(active["ES256"]) != 1 || active["ES256"][0] == "ec-1" {
		t.Errorf("ES256 keys after the race: got %v (active %v), want ec-1 and exactly one new active key", es256, active["ES256"])
	}
	if len(active["RS256"]) != 1 || active["RS256"][0] != "rsa-1" {
		t.Errorf("RS256 keys after rotating ES256: active %v, want [rsa-1] untouched", active["RS256"])
	}
}
