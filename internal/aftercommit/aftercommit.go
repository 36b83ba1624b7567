// Package aftercommit defers work until the transaction a context carries commits. Package
// storage marks a context when it begins a transaction (Begin) and settles the mark when it
// commits or rolls back (Commit, Discard); anyone holding a context derived from it defers
// work with Do, without knowing whether a transaction is open. Package events delivers
// every event through Do, so a sink hears of a change only once it is durable, and never
// while the transaction is still open.
package aftercommit

import (
	"context"
	"sync"
)

// queueKey is the context key of the queue Begin opens.
type queueKey struct{}

// queue holds the work deferred inside one transaction, or one savepoint of it.
type queue struct {
	// base is the context Begin was given: the work runs with it, free of the transaction.
	base   context.Context
	parent *queue // the enclosing transaction's queue; nil for the outermost one

	mu    sync.Mutex
	funcs []func(context.Context)
}

func (q *queue) add(fns ...func(context.Context)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.funcs = append(q.funcs, fns...)
}

func (q *queue) take() []func(context.Context) {
	q.mu.Lock()
	defer q.mu.Unlock()
	fns := q.funcs
	q.funcs = nil
	return fns
}

func from(ctx context.Context) *queue {
	q, _ := ctx.Value(queueKey{}).(*queue)
	return q
}

// Begin returns a context marking a new transaction begun on ctx; a transaction (or
// savepoint) begun inside it nests in it. Settle the mark with Commit or Discard.
func Begin(ctx context.Context) context.Context {
	return context.WithValue(ctx, queueKey{}, &queue{base: ctx, parent: from(ctx)})
}

// Do runs fn once the transaction ctx carries has committed, with the context that
// transaction began on (so fn sees none of it); without a transaction it runs fn at once,
// with ctx. Work deferred in a transaction that rolls back is dropped.
func Do(ctx context.Context, fn func(ctx context.Context)) {
	if q := from(ctx); q != nil {
		q.add(fn)
		return
	}
	fn(ctx)
}

// Commit settles the transaction ctx's Begin marked as committed: an outermost one runs its
// deferred work now, in order; a nested one hands it to the enclosing transaction, which
// may still roll back. Without a mark it does nothing.
func Commit(ctx context.Context) {
	q := from(ctx)
	if q == nil {
		return
	}
	fns := q.take()
	if q.parent != nil {
		q.parent.add(fns...)
		return
	}
	for _, fn := range fns {
		fn(q.base)
	}
}

// Discard settles the transaction ctx's Begin marked as rolled back: its deferred work is
// dropped. Without a mark it does nothing.
func Discard(ctx context.Context) {
	if q := from(ctx); q != nil {
		q.take()
	}
}
