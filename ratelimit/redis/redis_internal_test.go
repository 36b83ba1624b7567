package redis

import (
	"testing"
	"time"
)

func TestNewOptions(t *testing.T) {
	for _, c := range []struct {
		name    string
		rawURL  string
		opts    []Option
		addr    string
		db      int
		tls     bool
		prefix  string
		timeout time.Duration
	}{
		{"defaults", "redis://127.0.0.1:6379/0", nil, "127.0.0.1:6379", 0, false, DefaultPrefix, DefaultTimeout},
		{"tls and db", "rediss://user:pw@cache.example.com:6380/2", nil, "cache.example.com:6380", 2, true, DefaultPrefix, DefaultTimeout},
		{"no port", "redis://cache", nil, "cache:6379", 0, false, DefaultPrefix, DefaultTimeout},
		{"options", "redis://127.0.0.1:6379/0", []Option{WithPrefix("app:"), WithTimeout(time.Second)}, "127.0.0.1:6379", 0, false, "app:", time.Second},
		{"empty options take defaults", "redis://127.0.0.1:6379/0", []Option{WithPrefix(""), WithTimeout(0)}, "127.0.0.1:6379", 0, false, DefaultPrefix, DefaultTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := New(c.rawURL, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			o := r.client.Options()
			if o.Addr != c.addr || o.DB != c.db || (o.TLSConfig != nil) != c.tls {
				t.Errorf("addr %q db %d tls %v; want %q %d %v", o.Addr, o.DB, o.TLSConfig != nil, c.addr, c.db, c.tls)
			}
			if !o.ContextTimeoutEnabled {
				t.Errorf("ContextTimeoutEnabled is off")
			}
			if r.prefix != c.prefix || r.timeout != c.timeout || !r.owned {
				t.Errorf("prefix %q timeout %v owned %v; want %q %v true", r.prefix, r.timeout, r.owned, c.prefix, c.timeout)
			}
		})
	}
}
