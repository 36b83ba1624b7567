package factors_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/factors"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// t0 is the fake clock's start: a whole TOTP step, so step arithmetic reads plainly.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// issuer is the issuer of the env: a mounted path, a port, a domain name.
const issuer = "https://id.example.test:8443/auth"

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// env is the factors service as the provider wires it: over a real store, with
// publicauth's service as its lockout and notifier (mail to a real SMTP server), events
// recorded in the audit trail and heard by a sink, on a settable clock.
type env struct {
	store *storage.Store
	auth  *publicauth.Service
	svc   *factors.Service
	clock *clock
	smtp  *smtptest.Server
	user  *publicauth.User

	mu    sync.Mutex
	heard []events.Event
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testSealer is the provider's sealer: AES-256-GCM under a key of its own.
func testSealer(t *testing.T) factors.Sealer {
	t.Helper()
	block, err := aes.NewCipher([]byte("0123456789abcdef0123456789abcdef"))
	mustNoErr(t, "aes.NewCipher", err)
	aead, err := cipher.NewGCM(block)
	mustNoErr(t, "cipher.NewGCM", err)
	return factors.AEADSealer(aead, rand.Reader)
}

// recoveryKey is the env's RecoveryCodeKey.
var recoveryKey = []byte("recovery-codes-key-of-32-bytes!!")

// newEnv builds an env on a fresh store of b, with an account ada@example.com.
func newEnv(t *testing.T, b storagetest.Backend) *env {
	t.Helper()
	return newEnvOn(t, b.Open(t), issuer)
}

// newEnvOn builds an env over store for the issuer, with an account ada@example.com when
// the store has none.
func newEnvOn(t *testing.T, store *storage.Store, iss string) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{store: store, clock: &clock{now: t0}, smtp: smtptest.Start(t)}
	mailer, err := publicauth.NewSMTPMailer(e.smtp.URL(), "Gatehouse <noreply@gatehouse.test>")
	mustNoErr(t, "NewSMTPMailer", err)
	emitter := events.NewEmitter(func(_ context.Context, ev events.Event) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.heard = append(e.heard, ev)
	}, discardLogger(), e.clock.Now, events.WithRecorder(store.RecordSecurityEvent))
	e.auth, err = publicauth.New(publicauth.Config{Secret: []byte("0123456789abcdef0123456789abcdef"), ServiceName: "Acme"}, store,
		publicauth.WithClock(e.clock.Now), publicauth.WithLogger(discardLogger()), publicauth.WithMailer(mailer),
		publicauth.WithLimiter(ratelimit.NewMemory(ratelimit.WithClock(e.clock.Now))), publicauth.WithEvents(emitter))
	mustNoErr(t, "publicauth.New", err)
	t.Cleanup(e.auth.Close)
	e.svc, err = factors.New(factors.Config{Issuer: iss, ServiceName: "Acme", RecoveryCodeKey: recoveryKey}, store,
		factors.WithSealer(testSealer(t)), factors.WithLockout(e.auth), factors.WithNotifier(e.auth),
		factors.WithEvents(emitter), factors.WithClock(e.clock.Now), factors.WithLogger(discardLogger()))
	mustNoErr(t, "factors.New", err)
	e.user, err = e.auth.CreateUser(ctx, publicauth.UserInput{Email: "ada@example.com", Password: "correct horse", Name: "Ada"})
	if errors.Is(err, publicauth.ErrEmailTaken) {
		e.user, err = store.UserByEmail(ctx, "ada@example.com")
	}
	mustNoErr(t, "the account", err)
	return e
}

// account is the env's account as factors sees it.
func (e *env) account() factors.Account {
	return factors.Account{ID: e.user.ID, Name: e.user.Email, DisplayName: e.user.Name}
}

// names returns the names of the events heard since the last call, and forgets them.
func (e *env) names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	for _, ev := range e.heard {
		names = append(names, ev.Name())
	}
	e.heard = nil
	return names
}

// lastEvent returns the last event heard of type T.
func lastEvent[T events.Event](t *testing.T, e *env) T {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range slices.Backward(e.heard) {
		if got, ok := ev.(T); ok {
			return got
		}
	}
	var zero T
	t.Fatalf("no %T heard", zero)
	return zero
}

// audit returns the audit trail's rows of type typ (a family with ".*") of the account.
func (e *env) audit(t *testing.T, typ string) []*storage.SecurityEvent {
	t.Helper()
	rows, err := e.store.ListSecurityEvents(context.Background(), storage.SecurityEventFilter{Type: typ, UserID: e.user.ID}, storage.SecurityEventCursor{}, 200)
	mustNoErr(t, "ListSecurityEvents", err)
	return rows
}

// mail waits for the next mail to the account and returns it.
func (e *env) mail(t *testing.T) smtptest.Message {
	t.Helper()
	e.auth.Wait()
	return e.smtp.WaitFor(t, e.user.Email)
}

func forEachBackend(t *testing.T, test func(t *testing.T, b storagetest.Backend)) {
	t.Helper()
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { test(t, b) })
	}
}

func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func checkErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", what, err, want)
	}
}
