package events_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/internal/aftercommit"
)

var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestEmitStampsAndDelivers(t *testing.T) {
	var got []events.Event
	em := events.NewEmitter(func(_ context.Context, e events.Event) { got = append(got, e) }, nil,
		func() time.Time { return at.In(time.FixedZone("X", 3600)) })
	ip := netip.MustParseAddr("192.0.2.7")
	ctx := events.WithRequest(context.Background(), ip, strings.Repeat("a", events.MaxUserAgent+10))
	em.Emit(ctx, &events.LoginSucceeded{UserID: "u1", Method: "password", SessionKind: "public"})
	if len(got) != 1 {
		t.Fatalf("got %d events, want 1", len(got))
	}
	e := got[0].(*events.LoginSucceeded)
	if !e.When().Equal(at) || e.When().Location() != time.UTC {
		t.Errorf("When() = %v, want %v in UTC", e.When(), at)
	}
	if e.ClientIP != ip || len(e.UserAgent) != events.MaxUserAgent {
		t.Errorf("ClientIP, len(UserAgent) = %v, %d, want %v, %d", e.ClientIP, len(e.UserAgent), ip, events.MaxUserAgent)
	}
	if e.Name() != "login.succeeded" {
		t.Errorf("Name() = %q, want login.succeeded", e.Name())
	}
}

func TestNilEmitterDrops(t *testing.T) {
	if em := events.NewEmitter(nil, nil, nil); em != nil {
		t.Fatalf("NewEmitter(nil sink) = %v, want nil", em)
	}
	var em *events.Emitter
	em.Emit(context.Background(), &events.PasswordReset{UserID: "u1"}) // must not panic
}

func TestPanickingSinkIsRecoveredAndLogged(t *testing.T) {
	var logs bytes.Buffer
	em := events.NewEmitter(func(context.Context, events.Event) { panic("sink broke") },
		slog.New(slog.NewTextHandler(&logs, nil)), nil)
	em.Emit(context.Background(), &events.TokenRevoked{Kind: events.KindAccessToken})
	if out := logs.String(); !strings.Contains(out, "sink broke") || !strings.Contains(out, "token.revoked") {
		t.Errorf("log = %q, want the panic and the event's name", out)
	}
}

func TestDeliveryWaitsForTheCommit(t *testing.T) {
	tests := []struct {
		name string
		// run emits inside marked transactions and settles them.
		run  func(ctx context.Context, emit func(ctx context.Context, id string))
		want string
	}{
		{"no transaction: at once", func(ctx context.Context, emit func(context.Context, string)) {
			emit(ctx, "a")
		}, "a"},
		{"commit delivers in order", func(ctx context.Context, emit func(context.Context, string)) {
			tx := aftercommit.Begin(ctx)
			emit(tx, "a")
			emit(tx, "b")
			aftercommit.Commit(tx)
		}, "ab"},
		{"rollback drops", func(ctx context.Context, emit func(context.Context, string)) {
			tx := aftercommit.Begin(ctx)
			emit(tx, "a")
			aftercommit.Discard(tx)
		}, ""},
		{"nested commit waits for the outer commit", func(ctx context.Context, emit func(context.Context, string)) {
			outer := aftercommit.Begin(ctx)
			inner := aftercommit.Begin(outer)
			emit(inner, "i")
			aftercommit.Commit(inner)
			emit(outer, "o")
			aftercommit.Commit(outer)
		}, "io"},
		{"nested rollback drops only its own", func(ctx context.Context, emit func(context.Context, string)) {
			outer := aftercommit.Begin(ctx)
			emit(outer, "a")
			inner := aftercommit.Begin(outer)
			emit(inner, "x")
			aftercommit.Discard(inner)
			aftercommit.Commit(outer)
		}, "a"},
		{"outer rollback drops a committed nested one", func(ctx context.Context, emit func(context.Context, string)) {
			outer := aftercommit.Begin(ctx)
			inner := aftercommit.Begin(outer)
			emit(inner, "x")
			aftercommit.Commit(inner)
			aftercommit.Discard(outer)
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got strings.Builder
			em := events.NewEmitter(func(_ context.Context, e events.Event) {
				got.WriteString(e.(*events.PasswordReset).UserID)
			}, nil, nil)
			tt.run(context.Background(), func(ctx context.Context, id string) {
				em.Emit(ctx, &events.PasswordReset{UserID: id})
			})
			if got.String() != tt.want {
				t.Errorf("delivered %q, want %q", got.String(), tt.want)
			}
		})
	}
}
