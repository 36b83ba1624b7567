package storage

import (
	"sync"
	"time"
)

// DefaultClientCacheRefresh is how long a client read from the database is served from
// memory when WithClientCacheRefresh does not say otherwise.
const DefaultClientCacheRefresh = 30 * time.Second

// WithClientCacheRefresh bounds how long a client (with its hashed secret) read from the
// database is served from the store's in-process cache before it is read again: a change
// made through another store (another replica, the admin CLI) takes effect here within
// refresh at most, and at once on Postgres while ListenClientChanges runs. A change made
// through this store takes effect here at once. 0 keeps DefaultClientCacheRefresh; a
// negative refresh turns the cache off (every lookup reads the database).
//
// Only clients that exist are cached, so lookups of unknown ids (anyone can send one)
// never grow it: it holds at most one entry per registered client.
func WithClientCacheRefresh(refresh time.Duration) Option {
	return func(o *options) { o.clientRefresh = refresh }
}

// clientCache holds the clients read from the database, each until it is maxAge old or a
// write invalidates it.
type clientCache struct {
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]cachedClient
	// gen counts invalidations: a client read before the latest one may be stale and is
	// not kept (see put).
	gen uint64
}

type cachedClient struct {
	client *Client
	loaded time.Time
}

func newClientCache(refresh time.Duration, now func() time.Time) *clientCache {
	if refresh == 0 {
		refresh = DefaultClientCacheRefresh
	}
	return &clientCache{maxAge: refresh, now: now, entries: map[string]cachedClient{}}
}

// enabled reports whether clients are cached at all.
func (c *clientCache) enabled() bool { return c.maxAge > 0 }

// get returns a copy of the cached client with that id when it is fresh, and the current
// generation, which a caller that reads the database passes to put.
func (c *clientCache) get(id string) (*Client, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || c.now().Sub(e.loaded) >= c.maxAge {
		return nil, c.gen
	}
	return e.client.clone(), c.gen
}

// put caches client, read from the database while the cache was at generation gen; a
// write invalidated since may have made it stale, so it is then dropped.
func (c *clientCache) put(client *Client, gen uint64, loaded time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.entries[client.ID] = cachedClient{client: client.clone(), loaded: loaded}
}

// invalidate forgets the client with that id.
func (c *clientCache) invalidate(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
	c.gen++
}

// invalidateAll forgets every client.
func (c *clientCache) invalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	c.gen++
}

// clone returns a copy of c that shares nothing its holder could change in place.
func (c *Client) clone() *Client {
	d := *c
	d.SecretHash = append([]byte(nil), c.SecretHash...)
	for _, l := range []*[]string{&d.RedirectURIs, &d.PostLogoutRedirectURIs, &d.GrantTypes, &d.ResponseTypes, &d.Scopes, &d.Audience} {
		if *l != nil {
			*l = append([]string(nil), (*l)...)
		}
	}
	return &d
}
