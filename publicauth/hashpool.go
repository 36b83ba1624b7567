package publicauth

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
)

// hashPool bounds the argon2id work of a Service. Each hash or verification holds about
// 7 MiB while it runs, so without a bound a burst of logins grows the heap by that much per
// request; with it, the memory is at most slots × 7 MiB whatever the burst. A caller that
// finds every slot busy may wait for one if the queue has room, else it is refused with
// ErrBusy at once. Waiting costs no memory and no CPU (a blocked channel send), and the
// hashing is CPU-bound, so slots near GOMAXPROCS keep the throughput.
//
// The native fill (internal/argon2id) reuses a hash's memory for the next hash, leaving no
// garbage: hashBytes is then 0 and the pool never collects. Where it cannot be used,
// golang.org/x/crypto/argon2 allocates a hash's memory afresh on every call and takes no
// buffer, so each hash leaves 7 MiB of garbage. Left to the collector's own pacing, that
// garbage piles up to the heap's next target, several hashes' worth: peak memory grows, and
// under a memory limit the runtime hands the pages back to the kernel and faults them in
// again on the next hash. So when the heap the collector must scan is smaller than the
// hash's memory (Gatehouse as a server), a slot collects before it takes the next hash: the
// next hash reuses the freed memory, and the pool's memory stays slots × 7 MiB. With a
// larger scannable heap (an application embedding Gatehouse) a collection would cost more
// than it saves, and the pool leaves the garbage to the collector.
type hashPool struct {
	// slots holds one token per hash running now.
	slots chan struct{}
	// waiting holds one token per caller waiting for a slot; an unbuffered channel means
	// nobody may wait.
	waiting chan struct{}
	// hashBytes is the memory one hash allocates; below that much scannable heap, a slot
	// collects after its hash (collectAfterHash).
	hashBytes uint64
}

func newHashPool(slots, queue int, hashBytes uint64) *hashPool {
	return &hashPool{slots: make(chan struct{}, slots), waiting: make(chan struct{}, queue), hashBytes: hashBytes}
}

// run calls work in a slot of the pool. It waits for a slot while the queue has room, until
// ctx ends (ctx's error, wrapped); with every slot busy and the queue full it returns
// ErrBusy without calling work.
func (p *hashPool) run(ctx context.Context, work func()) error {
	select {
	case p.slots <- struct{}{}:
	default:
		if err := p.wait(ctx); err != nil {
			return err
		}
	}
	defer func() { <-p.slots }()
	work()
	if collectAfterHash(scannableHeap(), p.hashBytes) {
		runtime.GC()
	}
	return nil
}

// collectAfterHash reports whether a slot should collect the garbage of the hash it ran
// before taking the next one: when marking the scannable heap costs less than carrying
// hashBytes of garbage to the collector's next cycle. The hash's own memory holds no
// pointers, so a collection's cost is the scannable rest.
func collectAfterHash(scannable, hashBytes uint64) bool {
	return scannable < hashBytes
}

// scannableHeap is the part of the allocated heap that holds pointers: what the next
// collection scans at most.
func scannableHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return ^uint64(0) // unknown to this runtime: never collect
	}
	return sample[0].Value.Uint64()
}

// wait takes a place in the queue, then a slot.
func (p *hashPool) wait(ctx context.Context) error {
	select {
	case p.waiting <- struct{}{}:
	default:
		return ErrBusy
	}
	defer func() { <-p.waiting }()
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("publicauth: waiting to hash a password: %w", ctx.Err())
	}
}

// newPasswordHash hashes pw for storage (hashPassword) in a slot of the pool.
func (s *Service) newPasswordHash(ctx context.Context, pw string) (string, error) {
	var hash string
	var err error
	if perr := s.hashing.run(ctx, func() { hash, err = hashPassword(s.kdf, pw, s.passwordParams, s.random) }); perr != nil {
		return "", perr
	}
	if err != nil {
		return "", fmt.Errorf("publicauth: %w", err)
	}
	return hash, nil
}

// passwordMatches checks pw against the PHC string encoded (verifyPassword) in a slot of
// the pool. An encoded hash it cannot use yields errMalformedHash; ErrBusy and a wait cut
// short by ctx are returned as they are.
func (s *Service) passwordMatches(ctx context.Context, pw, encoded string) (bool, error) {
	var ok bool
	var err error
	if perr := s.hashing.run(ctx, func() { ok, err = verifyPassword(s.kdf, pw, encoded) }); perr != nil {
		return false, perr
	}
	return ok, err
}

// spendDummyVerification costs one verification against dummyPasswordHash, so an answer
// that needs no real check takes as long as one that does. Only the pool's refusals come
// back: the dummy hash itself is well-formed.
func (s *Service) spendDummyVerification(ctx context.Context, pw string) error {
	_, err := s.passwordMatches(ctx, pw, dummyPasswordHash)
	if errors.Is(err, errMalformedHash) {
		return fmt.Errorf("publicauth: dummy password hash: %w", err)
	}
	return err
}
