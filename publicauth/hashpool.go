package publicauth

import (
	"context"
	"errors"
	"fmt"
)

// hashPool bounds the argon2id work of a Service. Each hash or verification holds about
// 19 MiB while it runs, so without a bound a burst of logins grows the heap by that much per
// request; with it, the memory is at most slots × 19 MiB whatever the burst. A caller that
// finds every slot busy may wait for one if the queue has room, else it is refused with
// ErrBusy at once. Waiting costs no memory and no CPU (a blocked channel send), and the
// hashing is CPU-bound, so slots near GOMAXPROCS keep the throughput.
type hashPool struct {
	// slots holds one token per hash running now.
	slots chan struct{}
	// waiting holds one token per caller waiting for a slot; an unbuffered channel means
	// nobody may wait.
	waiting chan struct{}
}

func newHashPool(slots, queue int) *hashPool {
	return &hashPool{slots: make(chan struct{}, slots), waiting: make(chan struct{}, queue)}
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
	return nil
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
	if perr := s.hashing.run(ctx, func() { hash, err = hashPassword(pw, s.passwordParams, s.random) }); perr != nil {
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
	if perr := s.hashing.run(ctx, func() { ok, err = verifyPassword(pw, encoded) }); perr != nil {
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
