package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v3"
	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/dpop"
	"github.com/gatehouse-id/gatehouse/internal/outbound"
	"github.com/gatehouse-id/gatehouse/storage"
)

// Limits of fetching a client's JSON Web Key Set from its jwks_uri.
const (
	// jwksFetchTimeout bounds one fetch, connection included; redirects are not followed.
	jwksFetchTimeout = 5 * time.Second
	// jwksMaxBytes caps a fetched document: a few dozen public keys fit comfortably.
	jwksMaxBytes = 64 << 10
	// jwksMinTTL is the shortest time a fetched set is kept, whatever its Cache-Control
	// says, and the least time between two fetches of one client's set: an attacker sending
	// assertions or request objects with unknown kids cannot make the provider hammer the
	// client's server.
	jwksMinTTL = time.Minute
	// jwksRetryAfterFailure is how long a failed fetch is answered from memory, so a client
	// whose server is down does not make every request wait for a timeout, and requests
	// nobody authenticated (request objects at /authorize) cannot make the server fetch more
	// often than this.
	jwksRetryAfterFailure = 10 * time.Second
	// jwksDefaultTTL is how long a set is kept when its answer has no max-age.
	jwksDefaultTTL = time.Hour
	// jwksMaxTTL caps a max-age, so a key the client removes stops verifying within a day.
	jwksMaxTTL = 24 * time.Hour
	// jwksCacheEntries bounds the cache: the key sets of at most this many clients are held
	// (each parsed from at most jwksMaxBytes). Past it, the entries whose set and failure
	// have both expired go first, then the least recently used.
	jwksCacheEntries = 512
)

// errJWKSUnavailable: the client's key set could not be fetched or read.
var errJWKSUnavailable = errors.New("the client's JSON Web Key Set could not be fetched")

// clientKeySets fetches and caches the key sets clients publish at their jwks_uri, one
// entry per client, holding the set of the jwks_uri it was fetched from: a client whose
// jwks_uri changed gets a new fetch, never the old URI's keys, and changing it again and
// again replaces one entry instead of adding entries. At most jwksCacheEntries clients are
// held; Forget drops a client's entry when it is updated or deleted. A set is kept as its
// answer's Cache-Control max-age says (within jwksMinTTL and jwksMaxTTL); a caller that met
// an unknown kid asks for a refetch, granted at most once per jwksMinTTL per client; the
// fetches of one client are serialised, so concurrent misses fetch once. Fetches go through
// the outbound client for the client (outboundClients.forClient). It implements
// fosite.JWKSFetcherStrategy, so request objects verify against the same cache. Safe for
// concurrent use.
type clientKeySets struct {
	clients outboundClients
	now     func() time.Time
	// failed is told of every failed fetch (the provider logs and counts it).
	failed func(ctx context.Context, clientID, reason string, err error)
	// max is the most entries held: jwksCacheEntries.
	max int

	mu      sync.Mutex
	entries map[string]*keySetEntry // by client id
}

type keySetEntry struct {
	// uri is the jwks_uri the entry is for; it never changes.
	uri string
	// used and keepUntil (guarded by clientKeySets.mu) are the last lookup and when
	// nothing in the entry is of use any more, for eviction.
	used, keepUntil time.Time

	// mu serialises the fetches of the entry's client and guards what follows.
	mu        sync.Mutex
	set       *jose.JSONWebKeySet
	expires   time.Time
	fetchedAt time.Time
	// failedAt and failure are the last failed fetch, answered again until
	// jwksRetryAfterFailure has passed.
	failedAt time.Time
	failure  error
}

func newClientKeySets(clients outboundClients, now func() time.Time, failed func(ctx context.Context, clientID, reason string, err error)) *clientKeySets {
	return &clientKeySets{clients: clients, now: now, failed: failed, max: jwksCacheEntries, entries: map[string]*keySetEntry{}}
}

// Resolve implements fosite.JWKSFetcherStrategy for request objects (RFC 9101): the client is
// the one of the authorization request fosite carries in ctx, and location must be its
// jwks_uri. Without such a client it fetches nothing and fails.
func (k *clientKeySets) Resolve(ctx context.Context, location string, refresh bool) (*jose.JSONWebKeySet, error) {
	ar, _ := ctx.Value(fosite.AuthorizeRequestContextKey).(fosite.AuthorizeRequester)
	if ar == nil {
		return nil, fmt.Errorf("%w: no client to fetch it for", errJWKSUnavailable)
	}
	c, ok := ar.GetClient().(*storage.Client)
	if !ok || c.JWKSURI == "" || c.JWKSURI != location {
		return nil, fmt.Errorf("%w: not the jwks_uri of the request's client", errJWKSUnavailable)
	}
	return k.ResolveClient(ctx, c, refresh)
}

// ResolveClient returns the key set at c's jwks_uri: the cached one while fresh, else a new
// fetch. With refresh (an unknown kid), it fetches again unless the last fetch is less than
// jwksMinTTL old. A failed fetch returns errJWKSUnavailable (wrapped), never a stale set past
// its lifetime, and is not tried again for jwksRetryAfterFailure.
func (k *clientKeySets) ResolveClient(ctx context.Context, c *storage.Client, refresh bool) (*jose.JSONWebKeySet, error) {
	e := k.entry(c.ID, c.JWKSURI)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := k.now()
	fresh := e.set != nil && now.Before(e.expires)
	if fresh && (!refresh || now.Sub(e.fetchedAt) < jwksMinTTL) {
		return e.set, nil
	}
	if e.failure != nil && now.Sub(e.failedAt) < jwksRetryAfterFailure {
		if fresh {
			return e.set, nil
		}
		return nil, e.failure
	}
	set, ttl, err := k.fetch(ctx, c)
	if err != nil {
		e.failure, e.failedAt = err, now
		until := now.Add(jwksRetryAfterFailure)
		if fresh && e.expires.After(until) {
			until = e.expires
		}
		k.keep(e, until)
		if fresh {
			// An unknown kid and a failed refetch: the set still held is still valid.
			return e.set, nil
		}
		return nil, err
	}
	e.set, e.fetchedAt, e.expires, e.failure = set, now, now.Add(ttl), nil
	k.keep(e, e.expires)
	return set, nil
}

// entry returns the cache entry of the client for uri: the one held when it is for uri, else
// a new one in its place. A new client's entry may evict others (evict).
func (k *clientKeySets) entry(clientID, uri string) *keySetEntry {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	e := k.entries[clientID]
	if e == nil || e.uri != uri {
		if e == nil && len(k.entries) >= k.max {
			k.evict(now)
		}
		e = &keySetEntry{uri: uri}
		k.entries[clientID] = e
	}
	e.used = now
	return e
}

// keep records until when e is of use. The entry may have been replaced or evicted since:
// then nothing refers to it any more and the record is harmless.
func (k *clientKeySets) keep(e *keySetEntry, until time.Time) {
	k.mu.Lock()
	e.keepUntil = until
	k.mu.Unlock()
}

// evict makes room for one entry: it drops every entry whose set and failure have expired
// and, if that frees nothing, the least recently used one. k.mu is held.
func (k *clientKeySets) evict(now time.Time) {
	var lru string
	for id, e := range k.entries {
		if !now.Before(e.keepUntil) {
			delete(k.entries, id)
			continue
		}
		if lru == "" || e.used.Before(k.entries[lru].used) {
			lru = id
		}
	}
	if len(k.entries) >= k.max && lru != "" {
		delete(k.entries, lru)
	}
}

// Forget drops what is held of the client's key set: its jwks_uri or keys changed, or it
// was deleted.
func (k *clientKeySets) Forget(clientID string) {
	k.mu.Lock()
	delete(k.entries, clientID)
	k.mu.Unlock()
}

// len is how many clients' entries are held.
func (k *clientKeySets) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.entries)
}

// fetch GETs c's key set and returns it with how long it may be kept. A failure is told to
// k.failed, with its reason.
func (k *clientKeySets) fetch(ctx context.Context, c *storage.Client) (*jose.JSONWebKeySet, time.Duration, error) {
	res, err := k.clients.forClient(c).Get(ctx, c.JWKSURI, http.Header{"Accept": {"application/jwk-set+json, application/json"}})
	if err == nil {
		err = res.Want(http.StatusOK)
	}
	if err != nil {
		if ctx.Err() == nil {
			k.failed(ctx, c.ID, outbound.Reason(err), err)
		}
		return nil, 0, fmt.Errorf("%w: %w", errJWKSUnavailable, err)
	}
	set, err := parseClientJWKS(res.Body)
	if err != nil {
		k.failed(ctx, c.ID, "invalid_document", err)
		return nil, 0, fmt.Errorf("%w: %v", errJWKSUnavailable, err)
	}
	return set, cacheLifetime(res.Header.Get("Cache-Control")), nil
}

// cacheLifetime reads max-age from a Cache-Control header (RFC 9111 §5.2.2.1), clamped to
// [jwksMinTTL, jwksMaxTTL]; jwksDefaultTTL without one. no-store and no-cache mean the
// shortest lifetime.
func cacheLifetime(header string) time.Duration {
	ttl := jwksDefaultTTL
	for _, directive := range strings.Split(header, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(directive), "=")
		switch strings.ToLower(name) {
		case "no-store", "no-cache":
			return jwksMinTTL
		case "max-age":
			if secs, err := strconv.ParseInt(strings.Trim(value, `"`), 10, 64); err == nil && secs >= 0 {
				ttl = time.Duration(min(secs, int64(jwksMaxTTL/time.Second))) * time.Second
			}
		}
	}
	return min(max(ttl, jwksMinTTL), jwksMaxTTL)
}

// parseClientJWKS parses a client's JSON Web Key Set. It refuses a set with no key, a
// private or symmetric key (a client registers only public keys: the private ones must not
// leave it), a key of a type no assertion algorithm uses, or one outside the bounds DPoP
// keys have (dpop.CheckPublicKey: RSA of 2048 to 8192 bits, EC on P-256 or a larger curve). A key without "use" is marked
// "sig"; encryption keys are kept but never verify.
func parseClientJWKS(doc []byte) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %v", err)
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("the JSON Web Key Set has no key")
	}
	for i, k := range set.Keys {
		if !k.IsPublic() {
			return nil, fmt.Errorf("key %d (kid %q) is a private or symmetric key: register public keys only", i, k.KeyID)
		}
		if !k.Valid() {
			return nil, fmt.Errorf("key %d (kid %q) is not valid", i, k.KeyID)
		}
		if _, ok := assertionKeyAlgs(k); !ok {
			return nil, fmt.Errorf("key %d (kid %q) is of an unsupported type %T", i, k.KeyID, k.Key)
		}
		if err := dpop.CheckPublicKey(k.Key); err != nil {
			return nil, fmt.Errorf("key %d (kid %q) is refused: %v", i, k.KeyID, err)
		}
		if k.Use == "" {
			set.Keys[i].Use = "sig"
		}
	}
	return &set, nil
}

// checkJWKSURI accepts an absolute https URI without fragment or user info, or http on a
// loopback host (a relying party on the same machine, and tests).
func checkJWKSURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("JWKS URI %q must be an absolute https URI without fragment or user info", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("JWKS URI %q must use https (http only on a loopback host)", raw)
}
