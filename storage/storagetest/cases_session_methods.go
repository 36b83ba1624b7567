package storagetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

func sessionMethodCases() []storageCase {
	return []storageCase{
		{"SessionMethods", together(storageCase{"RoundTrip", testSessionMethodsRoundTrip}, storageCase{"ConcurrentAdd", testConcurrentAddSessionMethod})},
	}
}

// testSessionMethodsRoundTrip: a session's methods come back as stored, in UTC; a session
// stored without them reads without them, and a method added to it starts from its first
// factor; adding to a missing or expired session is ErrSessionNotFound.
func testSessionMethodsRoundTrip(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	stepUp := acr.Method{Name: acr.Passkey, At: t0.Add(time.Minute).In(otherZone), UserVerified: true, DeviceBound: true}
	with := &publicauth.Session{
		IDHash: "with-methods", UserID: "acct-1", Kind: publicauth.SessionPublic, Method: publicauth.MethodPassword,
		AuthTime: t0, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
		Methods: []acr.Method{{Name: acr.Password, At: t0}, {Name: acr.PIN, At: t0.Add(time.Second)}},
	}
	mustNoErr(t, "CreateSession", s.CreateSession(ctx, with))
	got, _, err := s.SessionByIDHash(ctx, with.IDHash, t0)
	mustNoErr(t, "SessionByIDHash", err)
	if !reflect.DeepEqual(got.Methods, with.Methods) {
		t.Errorf("Methods read back = %+v, want %+v", got.Methods, with.Methods)
	}
	added, err := s.AddSessionMethod(ctx, with.IDHash, stepUp, t0)
	mustNoErr(t, "AddSessionMethod", err)
	want := append(append([]acr.Method{}, with.Methods...), acr.Method{Name: acr.Passkey, At: t0.Add(time.Minute), UserVerified: true, DeviceBound: true})
	if !reflect.DeepEqual(added.Methods, want) {
		t.Errorf("Methods after AddSessionMethod = %+v, want %+v", added.Methods, want)
	}
	if got, _, err := s.SessionByIDHash(ctx, with.IDHash, t0); err != nil || !reflect.DeepEqual(got.Methods, want) {
		t.Errorf("Methods read after AddSessionMethod = %+v, %v; want %+v", got.Methods, err, want)
	}

	without := &publicauth.Session{
		IDHash: "without-methods", UserID: "acct-1", Kind: publicauth.SessionPublic, Method: publicauth.MethodMagicLink,
		AuthTime: t0.Add(-time.Minute), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
	}
	mustNoErr(t, "CreateSession without methods", s.CreateSession(ctx, without))
	if got, _, err := s.SessionByIDHash(ctx, without.IDHash, t0); err != nil || got.Methods != nil {
		t.Errorf("Methods of a session stored without = %+v, %v; want none", got.Methods, err)
	}
	added, err = s.AddSessionMethod(ctx, without.IDHash, acr.Method{Name: acr.TOTP, At: t0}, t0)
	mustNoErr(t, "AddSessionMethod to a session without methods", err)
	want = []acr.Method{{Name: publicauth.MethodMagicLink, At: t0.Add(-time.Minute)}, {Name: acr.TOTP, At: t0}}
	if !reflect.DeepEqual(added.Methods, want) {
		t.Errorf("Methods after adding to a session without = %+v, want %+v", added.Methods, want)
	}

	_, err = s.AddSessionMethod(ctx, "no-such-session", stepUp, t0)
	checkErr(t, "AddSessionMethod to a missing session", err, publicauth.ErrSessionNotFound)
	_, err = s.AddSessionMethod(ctx, with.IDHash, stepUp, t0.Add(time.Hour))
	checkErr(t, "AddSessionMethod to an expired session", err, publicauth.ErrSessionNotFound)
}

// testConcurrentAddSessionMethod: methods added to one session at once all land.
func testConcurrentAddSessionMethod(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	sess := &publicauth.Session{
		IDHash: "busy", UserID: "acct-2", Kind: publicauth.SessionPublic, Method: publicauth.MethodPassword,
		AuthTime: t0, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
		Methods: []acr.Method{{Name: acr.Password, At: t0}},
	}
	mustNoErr(t, "CreateSession", s.CreateSession(ctx, sess))
	const n = 8
	errs := runConcurrently(n, func(i int) error {
		_, err := s.AddSessionMethod(ctx, sess.IDHash, acr.Method{Name: fmt.Sprintf("oidc:p%d", i), At: t0.Add(time.Second)}, t0)
		return err
	})
	for _, err := range errs {
		mustNoErr(t, "AddSessionMethod", err)
	}
	got, _, err := s.SessionByIDHash(ctx, sess.IDHash, t0)
	mustNoErr(t, "SessionByIDHash", err)
	if len(got.Methods) != n+1 {
		t.Errorf("after %d concurrent additions the session has %d methods (%+v), want %d", n, len(got.Methods), got.Methods, n+1)
	}
}
