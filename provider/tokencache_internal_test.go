package provider

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage"
)

func digestOf(i int) tokenDigest { return sha256.Sum256([]byte(strconv.Itoa(i))) }

func tokenExpiring(at time.Time) *verifiedToken {
	return &verifiedToken{at: AccessToken{ExpiresAt: at}}
}

// TestVerifiedTokensBound: however many tokens go in, the cache holds at most its size; a
// token in use (got again before its generation is dropped) stays; an expired one is never
// returned.
func TestVerifiedTokensBound(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	live := now.Add(time.Hour)
	for _, size := range []int{1, 2, 3, 4, 10, 4096} {
		t.Run(fmt.Sprint("size ", size), func(t *testing.T) {
			c := newVerifiedTokens(size)
			hot := digestOf(-1)
			c.put(hot, tokenExpiring(live))
			for i := range 5 * size {
				c.put(digestOf(i), tokenExpiring(live))
				if n := c.len(); n > size {
					t.Fatalf("after %d puts: %d tokens, want at most %d", i+2, n, size)
				}
				if _, ok := c.get(hot, now); !ok && size > 1 {
					t.Fatalf("after %d puts: the token in use was dropped", i+2)
				}
				if n := c.len(); n > size {
					t.Fatalf("after a get: %d tokens, want at most %d", n, size)
				}
			}
		})
	}
	c := newVerifiedTokens(8)
	d := digestOf(1)
	c.put(d, tokenExpiring(live))
	if _, ok := c.get(d, live); ok {
		t.Error("got a token at its expiry, want none")
	}
	if n := c.len(); n != 0 {
		t.Errorf("an expired token stays cached: %d tokens", n)
	}
	if newVerifiedTokens(0) != nil || newVerifiedTokens(-1) != nil {
		t.Error("a cache of no size exists, want nil (off)")
	}
}

// TestVerifiedTokensConcurrent exercises get, put and drop from many goroutines, for the
// race detector, across many generation changes.
func TestVerifiedTokensConcurrent(t *testing.T) {
	now := time.Now()
	c := newVerifiedTokens(16)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				d := digestOf((g*7 + i) % 64)
				switch i % 3 {
				case 0:
					c.put(d, tokenExpiring(now.Add(time.Hour)))
				case 1:
					if tok, ok := c.get(d, now); ok {
						_ = tok.accessToken()
					}
				default:
					if i%30 == 2 {
						c.drop(d)
					}
				}
			}
		}()
	}
	wg.Wait()
	if n := c.len(); n > 16 {
		t.Errorf("%d tokens cached, want at most 16", n)
	}
}

// TestVerifiedTokenCopy: every copy's slices and claims, nested maps and arrays included,
// are its own.
func TestVerifiedTokenCopy(t *testing.T) {
	cached := &verifiedToken{at: AccessToken{
		Scopes: []string{"openid", "email"}, Audience: []string{"api"},
		Claims: map[string]any{"sub": "alice", "aud": []any{"api", "other"}, "exp": int64(5),
			"cnf": map[string]any{"jkt": "thumb"}, "roles": []any{map[string]any{"name": "user"}}},
	}}
	pristine := cached.accessToken()
	got := cached.accessToken()
	got.Scopes[0] = "admin"
	got.Audience[0] = "evil"
	got.Claims["sub"] = "mallory"
	got.Claims["aud"].([]any)[0] = "evil"
	got.Claims["cnf"].(map[string]any)["jkt"] = "attacker"
	got.Claims["roles"].([]any)[0].(map[string]any)["name"] = "admin"
	delete(got.Claims, "exp")
	if again := cached.accessToken(); !reflect.DeepEqual(again, pristine) {
		t.Errorf("after changing a copy: got %+v, want %+v", again, pristine)
	}
}

// BenchmarkVerifiedTokenCopy measures what a cache hit adds: the copy of a typical access
// token (a user token's twelve claims, three scopes, one audience).
func BenchmarkVerifiedTokenCopy(b *testing.B) {
	cached := typicalVerifiedToken(0)
	b.ReportAllocs()
	for b.Loop() {
		_ = cached.accessToken()
	}
}

// BenchmarkVerifiedTokenCacheMemory fills a cache of the default size with typical tokens
// and reports the heap it holds per token.
func BenchmarkVerifiedTokenCacheMemory(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := newVerifiedTokens(4096)
		for i := range 4096 {
			c.put(digestOf(i), typicalVerifiedToken(i))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(c.len()), "B/token")
		runtime.KeepAlive(c)
	}
}

// typicalVerifiedToken is what check caches for a user's access token, its strings as
// long as real ones and made afresh (as JSON decoding makes them) for each i.
func typicalVerifiedToken(i int) *verifiedToken {
	s := func(v string) string { return fmt.Sprintf("%s%06d", v, i) }
	sub, client, jti, gid := s("5b1f0c7e-8f7a-4c1e-9d43-"), s("my-application-"), s("0f8fad5b-d9cb-469f-a165-"), s("7c9e6679-7425-40de-944b-")
	claims := map[string]any{"iss": "https://login.example.com", "sub": sub, "aud": []any{client},
		"client_id": client, "scope": "openid profile email", "exp": int64(1_700_003_600), "iat": int64(1_700_000_000),
		"nbf": int64(1_700_000_000), "jti": jti, "auth_time": int64(1_699_999_000), claimGrantID: gid,
		claimIssuedMicros: int64(1_700_000_000_123_456)}
	return &verifiedToken{kid: "kDlUdV4Sw3KQkE8uW5H9a8Q2Y5gkH7b3pPq2vH0c1xI",
		ref: storage.AccessTokenRef{JTI: jti, GrantID: gid, Subject: sub, ClientID: client, IssuedAt: time.UnixMicro(1_700_000_000_123_456)},
		at: AccessToken{Subject: sub, ClientID: client, Scopes: []string{"openid", "profile", "email"}, Audience: []string{client},
			IssuedAt: time.Unix(1_700_000_000, 0), ExpiresAt: time.Unix(1_700_003_600, 0), UserBound: true, Claims: claims}}
}
