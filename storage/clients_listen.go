package storage

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Backoff of ListenClientChanges between attempts to (re)connect.
const (
	listenBackoffMin = 500 * time.Millisecond
	listenBackoffMax = 30 * time.Second
)

// clientsChannel is the Postgres notification channel on which stores announce client
// changes: the clients table's name (with the store's prefix) and "_changed".
func (s *Store) clientsChannel() string {
	return s.names.table("clients") + "_changed"
}

// ListenClientChanges keeps this store's client cache in step with the writes of every
// other store on the same Postgres database (other replicas, the admin CLI): each client
// write notifies, in its transaction, and this store drops the client as the write commits,
// instead of serving it up to its refresh bound (WithClientCacheRefresh). It runs until ctx
// is done, then returns nil.
//
// It holds one connection of the pool for as long as it runs (the pool of FromDB and
// FromGorm included). When that connection breaks it reconnects, waiting from half a second
// up to 30 seconds between attempts, and drops every cached client once it listens again
// (it may have missed notifications). Meanwhile the refresh bound holds, and the cached
// clients keep serving: a database outage does not stop client_credentials grants of the
// clients in memory, whose tokens need no database (nobody can change a client while the
// database is unreachable, and a replica cut off from a database others still write to
// serves a changed client no longer than the bound). On SQLite, which has no notifications,
// it returns nil at once. Behind PgBouncer in transaction pooling mode LISTEN does not work:
// the refresh bound alone applies.
func (s *Store) ListenClientChanges(ctx context.Context) error {
	if s.dialect != dialectPostgres || !s.clients.enabled() {
		return nil
	}
	backoff := listenBackoffMin
	for {
		listening := false
		err := s.listenOnce(ctx, func() { listening = true })
		if ctx.Err() != nil {
			return nil
		}
		if listening {
			backoff = listenBackoffMin
		}
		s.log.WarnContext(ctx, "storage: listening for client changes failed; retrying", "error", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// listenOnce takes a connection from the pool, listens on the clients channel and drops
// each client named in a notification until the connection fails or ctx is done; listening
// is called once LISTEN took effect. The connection is discarded, not returned to the pool,
// since it is still listening.
func (s *Store) listenOnce(ctx context.Context, listening func()) error {
	pool, err := s.db.DB()
	if err != nil {
		return err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return unavailable(err)
	}
	defer conn.Close()
	var listenErr error
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			listenErr = fmt.Errorf("storage: listen: connection is a %T, not pgx's", dc)
			return driver.ErrBadConn
		}
		listenErr = s.listenOn(ctx, c.Conn(), listening)
		return driver.ErrBadConn
	})
	if listenErr != nil {
		return listenErr
	}
	if errors.Is(err, driver.ErrBadConn) {
		return nil
	}
	return err
}

// listenOn is listenOnce on a pgx connection.
func (s *Store) listenOn(ctx context.Context, c *pgx.Conn, listening func()) error {
	if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{s.clientsChannel()}.Sanitize()); err != nil {
		return fmt.Errorf("storage: listen: %w", err)
	}
	// Changes made before LISTEN took effect were not announced on this connection.
	s.clients.invalidateAll()
	listening()
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("storage: wait for notification: %w", err)
		}
		s.clients.invalidate(n.Payload)
	}
}
