package publicauth

import (
	"context"
	"crypto/rand"
	"errors"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/argon2id"
)

// blocker is work that runs until released, reporting when it started.
type blocker struct {
	started chan struct{}
	release chan struct{}
}

func newBlocker() blocker {
	return blocker{started: make(chan struct{}), release: make(chan struct{})}
}

func (b blocker) work() {
	close(b.started)
	<-b.release
}

// runAsync runs work in pool on its own goroutine and returns where its result arrives.
func runAsync(ctx context.Context, pool *hashPool, work func()) <-chan error {
	done := make(chan error, 1)
	go func() { done <- pool.run(ctx, work) }()
	return done
}

// waitFor fails t unless ch yields within a generous bound; the pool never sleeps, so only
// a broken pool takes that long.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// waitQueued waits until n callers sit in pool's queue.
func waitQueued(t *testing.T, pool *hashPool, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(pool.waiting) != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d callers, want %d", len(pool.waiting), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHashPool(t *testing.T) {
	ctx := context.Background()

	t.Run("runs up to slots at once, queues up to queue, refuses the rest", func(t *testing.T) {
		const slots, queue = 2, 3
		pool := newHashPool(slots, queue, 0)
		var running []blocker
		var runningDone []<-chan error
		for i := range slots {
			b := newBlocker()
			running = append(running, b)
			runningDone = append(runningDone, runAsync(ctx, pool, b.work))
			waitFor(t, b.started, "running work "+string(rune('0'+i)))
		}
		queued := make([]blocker, queue)
		var queuedDone []<-chan error
		for i := range queue {
			queued[i] = newBlocker()
			queuedDone = append(queuedDone, runAsync(ctx, pool, queued[i].work))
		}
		waitQueued(t, pool, queue)

		called := false
		if err := pool.run(ctx, func() { called = true }); !errors.Is(err, ErrBusy) || called {
			t.Fatalf("run with slots and queue full = %v (work called %v), want ErrBusy and no call", err, called)
		}

		// Each released slot lets exactly one queued caller in; none starts before.
		for i := range queue {
			select {
			case <-queued[i].started:
				t.Fatalf("queued work %d started while every slot was busy", i)
			default:
			}
		}
		close(running[0].release)
		if err := waitFor(t, runningDone[0], "first running work"); err != nil {
			t.Fatalf("run = %v", err)
		}
		waitQueued(t, pool, queue-1)
		close(running[1].release)
		waitFor(t, runningDone[1], "second running work")
		waitQueued(t, pool, queue-2)
		for i := range queue {
			close(queued[i].release)
		}
		for i := range queue {
			if err := waitFor(t, queuedDone[i], "queued work"); err != nil {
				t.Fatalf("queued run = %v", err)
			}
		}
		if len(pool.slots) != 0 || len(pool.waiting) != 0 {
			t.Fatalf("after all work: %d slots and %d queue places held, want none", len(pool.slots), len(pool.waiting))
		}
	})

	t.Run("no queue refuses as soon as the slots are busy", func(t *testing.T) {
		pool := newHashPool(1, 0, 0)
		b := newBlocker()
		done := runAsync(ctx, pool, b.work)
		waitFor(t, b.started, "running work")
		if err := pool.run(ctx, func() {}); !errors.Is(err, ErrBusy) {
			t.Fatalf("run = %v, want ErrBusy", err)
		}
		close(b.release)
		waitFor(t, done, "running work")
		if err := pool.run(ctx, func() {}); err != nil {
			t.Fatalf("run on a free pool = %v", err)
		}
	})

	t.Run("a cancelled wait leaves the queue without running", func(t *testing.T) {
		pool := newHashPool(1, 1, 0)
		b := newBlocker()
		done := runAsync(ctx, pool, b.work)
		waitFor(t, b.started, "running work")
		waitCtx, cancel := context.WithCancel(ctx)
		called := make(chan struct{})
		waiting := runAsync(waitCtx, pool, func() { close(called) })
		waitQueued(t, pool, 1)
		cancel()
		if err := waitFor(t, waiting, "cancelled wait"); !errors.Is(err, context.Canceled) {
			t.Fatalf("run = %v, want context.Canceled", err)
		}
		if len(pool.waiting) != 0 {
			t.Fatal("a cancelled caller still holds its queue place")
		}
		close(b.release)
		waitFor(t, done, "running work")
		select {
		case <-called:
			t.Fatal("work of a cancelled wait ran")
		default:
		}
	})
}

// forcedCollections counts the collections runtime.GC started in this process.
func forcedCollections() uint64 {
	sample := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func TestHashPoolCollectsHashGarbage(t *testing.T) {
	// A test binary's scannable heap is far below a hash's memory, as a server's is: the slot
	// collects the hash's garbage before it is free again.
	const hashBytes = argon2Memory * 1024
	if s := scannableHeap(); s >= hashBytes {
		t.Skipf("scannable heap %d bytes, not below a hash's %d", s, hashBytes)
	}
	pool := newHashPool(1, 0, hashBytes)
	before := forcedCollections()
	if err := pool.run(context.Background(), func() { _ = make([]byte, hashBytes) }); err != nil {
		t.Fatalf("run = %v", err)
	}
	if forcedCollections() == before {
		t.Fatal("no collection after a hash while the scannable heap is smaller than the hash")
	}
}

func TestCollectAfterHash(t *testing.T) {
	const hashBytes = 19 << 20
	for _, c := range []struct {
		scannable uint64
		want      bool
	}{
		{scannable: 4 << 20, want: true},
		{scannable: hashBytes - 1, want: true},
		{scannable: hashBytes, want: false},
		{scannable: 512 << 20, want: false}, // an application's large heap: collecting costs more
	} {
		if got := collectAfterHash(c.scannable, hashBytes); got != c.want {
			t.Errorf("collectAfterHash(%d, %d) = %v, want %v", c.scannable, hashBytes, got, c.want)
		}
	}
}

// TestHashPoolLeavesNativeHashesAlone: with the native fill a hash allocates nothing in the
// Go heap, so the service's pool never forces a collection after one.
func TestHashPoolLeavesNativeHashesAlone(t *testing.T) {
	kdf, err := argon2id.Open(argon2id.Options{Backend: argon2id.Native})
	if err != nil {
		t.Skipf("native fill: %v", err)
	}
	defer kdf.Close()
	hashBytes := kdf.GoHeapBytes(argon2Memory, argon2Threads, argon2KeyLen)
	if hashBytes != 0 {
		t.Fatalf("GoHeapBytes = %d with the native fill, want 0", hashBytes)
	}
	pool := newHashPool(1, 0, hashBytes)
	before := forcedCollections()
	p := defaultArgon2()
	if err := pool.run(context.Background(), func() { _, _ = hashPassword(kdf, "a password", p, rand.Reader) }); err != nil {
		t.Fatalf("run = %v", err)
	}
	if got := forcedCollections(); got != before {
		t.Fatalf("%d forced collections after a native hash, want none", got-before)
	}
}
