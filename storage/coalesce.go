package storage

import (
	"context"
	"encoding/json"
	"sync"
)

// maxCoalesced bounds the lookups one coalesced query answers: a batch that holds this many
// starts at once, beside the query in flight, and later lookups gather in a new one. With
// five keys a revocation check, that is at most 320 keys in one statement.
const maxCoalesced = 64

// coalescer answers point lookups by key, coalescing concurrent ones into one query, as a
// database's group commit coalesces commits: a lookup that arrives while no query is in
// flight runs at once, alone; lookups that arrive while one is in flight gather into one
// batch, which runs as one query (WHERE key IN the batch's keys) when that query ends.
// Under load that is one round trip, one statement for the database to execute and one
// pair of syscalls for many requests, instead of one each; unloaded, a lookup costs what a
// single query costs.
//
// Coalescing keeps every answer as fresh as a query of its own, which is what lets the
// revocation check use it (DESIGN.md §3: a revocation takes effect at once on every
// replica). A lookup only ever joins a batch that has not started: its answer comes from a
// statement sent to the database after the lookup began. Every database this package runs
// on gives a statement a snapshot taken when it starts (Postgres READ COMMITTED, SQLite),
// so that statement sees every transaction committed before the lookup began, on whichever
// replica it committed: nothing is cached between statements, and no lookup is answered
// from a query that was already running when it arrived.
//
// A failing query fails every lookup of its batch with the query's error (a lost
// connection is ErrUnavailable as ever). A lookup whose context ends stops waiting and
// returns the context's error; the batch runs on for the others, on a context of its own
// that is cancelled only when every lookup of the batch has stopped waiting.
type coalescer[V any] struct {
	// query looks up keys (distinct) and returns the values of those found.
	query func(ctx context.Context, keys []string) (map[string]V, error)

	mu       sync.Mutex
	inFlight int          // batches running
	pending  *keyBatch[V] // the batch gathering lookups, nil when none is
}

// keyBatch is one coalesced query: its keys, and once done its answer.
type keyBatch[V any] struct {
	keys    []string
	seen    map[string]struct{}
	lookups int // lookups gathered: the batch starts once it has maxCoalesced
	waiting int // lookups still waiting for the answer; guarded by the coalescer's mu
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{} // closed when found and err are set
	found   map[string]V
	err     error
}

func newCoalescer[V any](query func(ctx context.Context, keys []string) (map[string]V, error)) *coalescer[V] {
	return &coalescer[V]{query: query}
}

// lookup returns the values of the keys found, from a query that started after lookup was
// called. The map may hold other lookups' keys as well; it must not be modified.
func (c *coalescer[V]) lookup(ctx context.Context, keys ...string) (map[string]V, error) {
	c.mu.Lock()
	if c.inFlight == 0 && c.pending == nil {
		// Nothing in flight: run alone, now, on the caller's context and goroutine.
		c.inFlight++
		c.mu.Unlock()
		found, err := c.query(ctx, distinct(keys))
		c.finished()
		return found, err
	}
	b := c.pending
	if b == nil {
		// The batch's context keeps the first lookup's values (a trace span) but not its
		// cancellation: the others must not fail because one request went away.
		bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		b = &keyBatch[V]{seen: map[string]struct{}{}, ctx: bctx, cancel: cancel, done: make(chan struct{})}
		c.pending = b
	}
	for _, k := range keys {
		if _, ok := b.seen[k]; !ok {
			b.seen[k] = struct{}{}
			b.keys = append(b.keys, k)
		}
	}
	b.lookups++
	b.waiting++
	if b.lookups >= maxCoalesced {
		// Full: it runs now, beside the query in flight, and the next lookup starts a batch.
		c.pending = nil
		c.inFlight++
		go c.run(b)
	}
	c.mu.Unlock()

	select {
	case <-b.done:
		return b.found, b.err
	case <-ctx.Done():
		c.mu.Lock()
		b.waiting--
		if b.waiting == 0 {
			b.cancel() // nobody wants the answer any more: the query stops, or never starts
		}
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// run runs batch b, hands every lookup of it the answer, and starts the next batch.
func (c *coalescer[V]) run(b *keyBatch[V]) {
	b.found, b.err = c.query(b.ctx, b.keys)
	b.cancel()
	close(b.done)
	c.finished()
}

// finished records the end of a query and starts the batch gathered meanwhile, if any.
func (c *coalescer[V]) finished() {
	c.mu.Lock()
	c.inFlight--
	next := c.pending
	c.pending = nil
	if next != nil {
		c.inFlight++
	}
	c.mu.Unlock()
	if next != nil {
		go c.run(next)
	}
}

// distinct is keys without repetitions, in their order.
func distinct(keys []string) []string {
	out := keys[:0:0]
	for i, k := range keys {
		dup := false
		for _, prev := range keys[:i] {
			if prev == k {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, k)
		}
	}
	return out
}

// keyList is how a coalesced query receives its keys: one JSON array parameter, so that the
// statement's text is the same whatever the batch's size (one prepared statement, not one per
// size) and no key needs escaping beyond JSON's.
func keyList(keys []string) string {
	b, _ := json.Marshal(keys) // strings always marshal
	return string(b)
}

// inKeyList is the SQL condition "column is one of the keys of the keyList parameter" for the
// store's dialect. On Postgres the list becomes an array the primary-key index is probed
// with (= ANY); SQLite reads it with json_each.
func (s *Store) inKeyList(column string) string {
	if s.dialect == dialectPostgres {
		return column + " = ANY (ARRAY(SELECT json_array_elements_text(CAST(? AS JSON))))"
	}
	return column + " IN (SELECT value FROM json_each(?))"
}
