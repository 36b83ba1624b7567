package ratelimit_test

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	redislimit "github.com/gatehouse-id/gatehouse/ratelimit/redis"
)

// Two limiters on the same server and prefix, as two replicas would have, share their counts.
func TestRedisReplicasShareCounts(t *testing.T) {
	rawURL := redisURL(t)
	prefix := testPrefix(t, redisClient(t))
	var replicas [2]*redislimit.Limiter
	for i := range replicas {
		r, err := redislimit.New(rawURL, redislimit.WithPrefix(prefix), redislimit.WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := r.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		replicas[i] = r
	}
	const limit, window = 4, time.Minute
	hitUpTo(t, replicas[0], "k", limit/2, window)
	for i := limit / 2; i < limit; i++ {
		if ok, _ := hit(t, replicas[1], "k", limit, window); !ok {
			t.Fatalf("hit %d of %d on the second replica refused", i+1, limit)
		}
	}
	if ok, _ := hit(t, replicas[0], "k", limit, window); ok {
		t.Errorf("the first replica admitted a hit past the shared limit")
	}
	if err := replicas[1].Reset(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	if over, _ := exceeded(t, replicas[0], "k", limit, window); over {
		t.Errorf("a Reset on one replica did not clear the other's view")
	}

	// A limiter on another prefix counts apart.
	other, err := redislimit.New(rawURL, redislimit.WithPrefix(testPrefix(t, redisClient(t))))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hitUpTo(t, replicas[0], "k", limit, window)
	hitUpTo(t, other, "k", limit, window)
}

// A counter that lost its TTL (written by hand, PERSIST) gets the window again, from Hit and
// from Exceeded, instead of counting for ever.
func TestRedisRepairsLostTTL(t *testing.T) {
	client := redisClient(t)
	prefix := testPrefix(t, client)
	limiter := redislimit.NewFromClient(client, redislimit.WithPrefix(prefix), redislimit.WithTimeout(5*time.Second))
	const limit, window = 3, time.Minute
	for _, c := range []struct {
		key   string
		check func(t *testing.T)
	}{
		{"hit", func(t *testing.T) {
			if ok, _ := hit(t, limiter, "hit", limit, window); !ok { // count 2 → 3
				t.Errorf("hit within the limit refused")
			}
		}},
		{"exceeded", func(t *testing.T) {
			if over, _ := exceeded(t, limiter, "exceeded", 2, window); !over {
				t.Errorf("Exceeded with the count at the limit = false")
			}
		}},
	} {
		t.Run(c.key, func(t *testing.T) {
			if err := client.Set(t.Context(), prefix+c.key, 2, 0).Err(); err != nil {
				t.Fatal(err)
			}
			c.check(t)
			ttl, err := client.PTTL(t.Context(), prefix+c.key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 0 || ttl > window {
				t.Errorf("PTTL after the repair = %v, want in (0, %v]", ttl, window)
			}
		})
	}
}

// The keys live under the prefix, so operators can find and clear them.
func TestRedisKeysUnderPrefix(t *testing.T) {
	client := redisClient(t)
	prefix := testPrefix(t, client)
	limiter := redislimit.NewFromClient(client, redislimit.WithPrefix(prefix), redislimit.WithTimeout(5*time.Second))
	hit(t, limiter, "login:ip:192.0.2.1", 1, time.Minute)
	n, err := client.Exists(t.Context(), prefix+"login:ip:192.0.2.1").Result()
	if err != nil || n != 1 {
		t.Errorf("EXISTS %slogin:ip:192.0.2.1 = %d, %v; want 1", prefix, n, err)
	}
}

// A server that is down or stalled makes every call fail with an error, promptly, and never
// admit: the caller chooses what to do then.
func TestRedisOutageIsAnError(t *testing.T) {
	stalled := stalledServer(t)
	down := closedPort(t)
	for _, c := range []struct{ name, addr string }{{"down", down}, {"stalled", stalled}} {
		t.Run(c.name, func(t *testing.T) {
			limiter, err := redislimit.New("redis://"+c.addr+"/0", redislimit.WithTimeout(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer limiter.Close()
			ctx := t.Context()
			if ok, _, err := limiter.Hit(ctx, "k", 5, time.Minute); err == nil || ok {
				t.Errorf("Hit = ok %v, err %v; want not ok and an error", ok, err)
			} else if !strings.HasPrefix(err.Error(), "ratelimit/redis: Redis hit: ") {
				t.Errorf("Hit error %q is not wrapped", err)
			}
			if over, _, err := limiter.Exceeded(ctx, "k", 5, time.Minute); err == nil || over {
				t.Errorf("Exceeded = %v, %v; want an error", over, err)
			}
			if err := limiter.Reset(ctx, "k"); err == nil {
				t.Errorf("Reset succeeded")
			}
			if err := limiter.Ping(ctx); err == nil {
				t.Errorf("Ping succeeded")
			}
		})
	}
}

// stalledServer accepts connections on 127.0.0.1 and never answers; it stops when t ends.
func stalledServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	return ln.Addr().String()
}

// closedPort returns an address on 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestNewRedisRefusesBadURLs(t *testing.T) {
	for _, rawURL := range []string{
		"http://user:s3cret@127.0.0.1:6379/0",
		"redis://user:s3cret@127.0.0.1:6379/not-a-number",
		"redis://user:s3cret@127.0.0.1:6379/0/1",
		"redis://user:s3cret@127.0.0.1:6379/0?no_such_option=1",
		"redis://user:s3cret@[::1/0",
		"",
	} {
		t.Run(rawURL, func(t *testing.T) {
			r, err := redislimit.New(rawURL)
			if err == nil {
				_ = r.Close()
				t.Fatalf("NewRedis(%q) succeeded", rawURL)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error %q shows the password", err)
			}
		})
	}
}
