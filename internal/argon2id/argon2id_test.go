package argon2id

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/argon2"
)

// sodiumHere reports whether this build on this host can use libsodium: the tables'
// expectations follow from it, so the tests hold with and without it. CI installs
// libsodium and sets GATEHOUSE_REQUIRE_LIBSODIUM=1, so there its absence fails instead.
func sodiumHere(t testing.TB) bool {
	t.Helper()
	_, _, err := loadSodium(DefaultLibraries())
	if err != nil && os.Getenv("GATEHOUSE_REQUIRE_LIBSODIUM") == "1" {
		t.Fatalf("GATEHOUSE_REQUIRE_LIBSODIUM=1 but libsodium cannot be used: %v", err)
	}
	t.Logf("libsodium here: %v", err == nil)
	return err == nil
}

// TestBackends: auto picks libsodium exactly when it loads, libsodium fails without it, go
// is go; and every engine derives x/crypto's keys.
func TestBackends(t *testing.T) {
	here := sodiumHere(t)
	cases := []struct {
		backend Backend
		want    Backend // "" wants Open to fail with ErrUnavailable
	}{
		{"", map[bool]Backend{true: Sodium, false: Go}[here]},
		{Auto, map[bool]Backend{true: Sodium, false: Go}[here]},
		{Sodium, map[bool]Backend{true: Sodium, false: ""}[here]},
		{Go, Go},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.backend), func(t *testing.T) {
			eng, err := Open(Options{Backend: c.backend})
			if c.want == "" {
				if !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Open: got %v, want ErrUnavailable", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if eng.Backend() != c.want {
				t.Fatalf("backend %q (%s), want %q", eng.Backend(), eng.Reason(), c.want)
			}
			if eng.Reason() == "" {
				t.Error("no reason given")
			}
			pw, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
			if got, want := eng.Key(pw, salt, 2, 19456, 1, 32), argon2.IDKey(pw, salt, 2, 19456, 1, 32); !bytes.Equal(got, want) {
				t.Fatalf("key %x, want %x", got, want)
			}
		})
	}
}

// TestSameKeys: for parameters libsodium takes and ones it does not (which go to x/crypto),
// Key returns argon2.IDKey's bytes.
func TestSameKeys(t *testing.T) {
	eng, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	salt16, salt8, salt32 := []byte("0123456789abcdef"), []byte("01234567"), bytes.Repeat([]byte("s"), 32)
	long := bytes.Repeat([]byte("pässwörd "), 114) // 1,026 bytes, past the login form's cap
	cases := []struct {
		name     string
		pw, salt []byte
		time     uint32
		memory   uint32
		threads  uint8
		keyLen   uint32
		sodium   bool // whether libsodium takes these parameters
	}{
		{"OWASP minimum", []byte("hunter2hunter2"), salt16, 2, 19456, 1, 32, true},
		{"empty password", []byte{}, salt16, 1, 64, 1, 32, true},
		{"nil password", nil, salt16, 1, 64, 1, 32, true},
		{"long password", long, salt16, 1, 64, 1, 32, true},
		{"three passes", []byte("pw"), salt16, 3, 256, 1, 32, true},
		{"least memory", []byte("pw"), salt16, 1, 8, 1, 32, true},
		{"memory not a multiple of four", []byte("pw"), salt16, 1, 1027, 1, 32, true},
		{"16-byte key", []byte("pw"), salt16, 1, 64, 1, 16, true},
		{"128-byte key", []byte("pw"), salt16, 1, 64, 1, 128, true},
		{"8-byte salt", []byte("pw"), salt8, 1, 64, 1, 32, false},
		{"32-byte salt", []byte("pw"), salt32, 1, 64, 1, 32, false},
		{"two lanes", []byte("pw"), salt16, 1, 64, 2, 32, false},
		{"memory below libsodium's least", []byte("pw"), salt16, 1, 4, 1, 32, false},
		{"key below libsodium's least", []byte("pw"), salt16, 1, 64, 1, 8, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sodiumTakes(len(c.salt), c.memory, c.threads, c.keyLen); got != c.sodium {
				t.Errorf("sodiumTakes = %v, want %v", got, c.sodium)
			}
			want := argon2.IDKey(c.pw, c.salt, c.time, c.memory, c.threads, c.keyLen)
			if got := eng.Key(c.pw, c.salt, c.time, c.memory, c.threads, c.keyLen); !bytes.Equal(got, want) {
				t.Fatalf("Key = %x, want %x", got, want)
			}
			wantHeap := uint64(c.memory) * 1024
			if c.sodium && eng.Backend() == Sodium {
				wantHeap = 0
			}
			if got := eng.GoHeapBytes(len(c.salt), c.memory, c.threads, c.keyLen); got != wantHeap {
				t.Errorf("GoHeapBytes = %d, want %d", got, wantHeap)
			}
		})
	}
}

// TestNoUsableLibrary: a file that does not exist, or a library without argon2id, leaves
// auto on Go with the reason, and makes libsodium fail.
func TestNoUsableLibrary(t *testing.T) {
	for _, c := range []struct{ lib, reason string }{
		{"libgatehouse-none.so.0", "libgatehouse-none.so.0"},
		{"libc.so.6", "no sodium_init or crypto_pwhash_argon2id"},
	} {
		t.Run(c.lib, func(t *testing.T) {
			eng, err := Open(Options{Backend: Auto, Libraries: []string{c.lib}})
			if err != nil {
				t.Fatal(err)
			}
			reason := c.reason
			if strings.Contains(eng.Reason(), "built without cgo") {
				reason = "built without cgo" // nothing is loaded in such a build
			}
			if eng.Backend() != Go || !strings.Contains(eng.Reason(), reason) {
				t.Fatalf("auto: backend %q, reason %q; want go, a reason naming %q", eng.Backend(), eng.Reason(), reason)
			}
			if _, err := Open(Options{Backend: Sodium, Libraries: []string{c.lib}}); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("libsodium: got %v, want ErrUnavailable", err)
			}
		})
	}
	if _, err := Open(Options{Backend: "scrypt"}); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Fatalf("unknown backend: got %v", err)
	}
	var none *Engine
	if none.Backend() != Go {
		t.Fatal("a nil Engine must derive with Go")
	}
}

// TestConcurrentKeys: one engine derives from many goroutines at once (run under -race),
// each getting its own key.
func TestConcurrentKeys(t *testing.T) {
	eng, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	salt := []byte("0123456789abcdef")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := []byte(fmt.Sprintf("password %d", i))
			if got, want := eng.Key(pw, salt, 1, 512, 1, 32), argon2.IDKey(pw, salt, 1, 512, 1, 32); !bytes.Equal(got, want) {
				errs <- fmt.Errorf("goroutine %d: key %x, want %x", i, got, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkKey derives one key at the OWASP minimum with each backend here.
func BenchmarkKey(b *testing.B) {
	for _, backend := range []Backend{Sodium, Go} {
		eng, err := Open(Options{Backend: backend})
		if err != nil {
			b.Logf("%s: %v", backend, err)
			continue
		}
		b.Run(string(backend), func(b *testing.B) {
			pw, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
			for b.Loop() {
				eng.Key(pw, salt, 2, 19456, 1, 32)
			}
		})
	}
}
