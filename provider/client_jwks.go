package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v3"
)

// Limits of fetching a client's JSON Web Key Set from its jwks_uri.
const (
	// jwksFetchTimeout bounds one fetch, connection included; redirects are not followed.
	jwksFetchTimeout = 5 * time.Second
	// jwksMaxBytes caps a fetched document: a few dozen public keys fit comfortably.
	jwksMaxBytes = 64 << 10
	// jwksMinTTL is the shortest time a fetched set is kept, whatever its Cache-Control
	// says, and the least time between two fetches of one URI: an attacker sending
	// assertions with unknown kids cannot make the provider hammer the client's server.
	jwksMinTTL = time.Minute
	// jwksRetryAfterFailure is how long a failed fetch is answered from memory, so a client
	// whose server is down does not make every request wait for a timeout.
	jwksRetryAfterFailure = 10 * time.Second
	// jwksDefaultTTL is how long a set is kept when its answer has no max-age.
	jwksDefaultTTL = time.Hour
	// jwksMaxTTL caps a max-age, so a key the client removes stops verifying within a day.
	jwksMaxTTL = 24 * time.Hour
)

// errJWKSUnavailable: the client's key set could not be fetched or read.
var errJWKSUnavailable = errors.New("the client's JSON Web Key Set could not be fetched")

// clientKeySets fetches and caches the key sets clients publish at their jwks_uri. A set is
// kept as its answer's Cache-Control max-age says (within jwksMinTTL and jwksMaxTTL); a
// caller that met an unknown kid asks for a refetch, granted at most once per jwksMinTTL per
// URI. It implements fosite.JWKSFetcherStrategy, so request objects verify against the same
// cache. Safe for concurrent use.
type clientKeySets struct {
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*keySetEntry
}

type keySetEntry struct {
	// mu serialises the fetches of one URI, so concurrent misses fetch once.
	mu        sync.Mutex
	set       *jose.JSONWebKeySet
	expires   time.Time
	fetchedAt time.Time
	// failedAt and failure are the last failed fetch, answered again until
	// jwksRetryAfterFailure has passed.
	failedAt time.Time
	failure  error
}

func newClientKeySets(now func() time.Time) *clientKeySets {
	return &clientKeySets{
		client: &http.Client{Timeout: jwksFetchTimeout,
			// A redirect is answered as the failure it is: the registered URI, and no
			// other, is where the client's keys live.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		now:     now,
		entries: map[string]*keySetEntry{},
	}
}

// Resolve returns the key set at location: the cached one while fresh, else a new fetch.
// With refresh (an unknown kid), it fetches again unless the last fetch is less than
// jwksMinTTL old. A failed fetch returns errJWKSUnavailable (wrapped), never a stale set
// past its lifetime, and is not tried again for jwksRetryAfterFailure.
func (c *clientKeySets) Resolve(ctx context.Context, location string, refresh bool) (*jose.JSONWebKeySet, error) {
	c.mu.Lock()
	e := c.entries[location]
	if e == nil {
		e = &keySetEntry{}
		c.entries[location] = e
	}
	c.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.now()
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
	set, ttl, err := c.fetch(ctx, location)
	if err != nil {
		e.failure, e.failedAt = err, now
		if fresh {
			// An unknown kid and a failed refetch: the set still held is still valid.
			return e.set, nil
		}
		return nil, err
	}
	e.set, e.fetchedAt, e.expires, e.failure = set, now, now.Add(ttl), nil
	return set, nil
}

// fetch GETs the key set at location and returns it with how long it may be kept.
func (c *clientKeySets) fetch(ctx context.Context, location string) (*jose.JSONWebKeySet, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, location, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errJWKSUnavailable, err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	res, err := c.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errJWKSUnavailable, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%w: status %d", errJWKSUnavailable, res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, jwksMaxBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errJWKSUnavailable, err)
	}
	if len(body) > jwksMaxBytes {
		return nil, 0, fmt.Errorf("%w: the document exceeds %d bytes", errJWKSUnavailable, jwksMaxBytes)
	}
	set, err := parseClientJWKS(body)
	if err != nil {
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
// leave it), or a key of a type no assertion algorithm uses. A key without "use" is marked
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
