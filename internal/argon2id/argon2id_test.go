package argon2id

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/crypto/argon2"
)

// nativeHere reports whether this build on this CPU can run the native fill: the tables'
// expectations follow from it, so the tests hold either way. CI runs these tests a second
// time built with BuildTag and GATEHOUSE_REQUIRE_NATIVE_ARGON2=1 on its AVX2 machines (make
// test-native), so there the fill's absence fails; a build without the tag has no fill to
// require, and the variable does not apply to it.
func nativeHere(t testing.TB) bool {
	t.Helper()
	err := nativeReason()
	if err != nil && nativeBuild && os.Getenv("GATEHOUSE_REQUIRE_NATIVE_ARGON2") == "1" {
		t.Fatalf("GATEHOUSE_REQUIRE_NATIVE_ARGON2=1 but the native fill cannot run: %v", err)
	}
	t.Logf("native fill here: %v", err == nil)
	return err == nil
}

// TestBackends: auto picks the native fill exactly when it can run, native fails where it
// cannot, go is go; and every engine derives x/crypto's keys.
func TestBackends(t *testing.T) {
	here := nativeHere(t)
	cases := []struct {
		backend Backend
		want    Backend // "" wants Open to fail with ErrUnavailable
	}{
		{"", map[bool]Backend{true: Native, false: Go}[here]},
		{Auto, map[bool]Backend{true: Native, false: Go}[here]},
		{Native, map[bool]Backend{true: Native, false: ""}[here]},
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
			defer eng.Close()
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
	if _, err := Open(Options{Backend: Native}); !nativeBuild && (err == nil || !strings.Contains(err.Error(), "not compiled in: build with -tags "+BuildTag)) {
		t.Fatalf("native in a build without %s: got %v, want an error saying it is not compiled in", BuildTag, err)
	}
	if _, err := Open(Options{Backend: "scrypt"}); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Fatalf("unknown backend: got %v", err)
	}
	var none *Engine
	if none.Backend() != Go {
		t.Fatal("a nil Engine must derive with Go")
	}
}

// TestSameKeys: for parameters the native path takes and ones it does not (which go to
// x/crypto), Key returns argon2.IDKey's bytes; and one engine's reused buffers, of every
// size in turn, never carry one hash into the next.
func TestSameKeys(t *testing.T) {
	eng, err := Open(Options{KeepBuffers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	salt16, salt8 := []byte("0123456789abcdef"), []byte("somesalt")
	long := bytes.Repeat([]byte("pässwörd "), 114) // 1,026 bytes, past the login form's cap
	cases := []struct {
		name     string
		pw, salt []byte
		time     uint32
		memory   uint32
		threads  uint8
		keyLen   uint32
		native   bool // whether the native path takes these parameters
	}{
		{"OWASP minimum", []byte("hunter2hunter2"), salt16, 2, 19456, 1, 32, true},
		{"reference vector's parameters", []byte("password"), salt8, 2, 65536, 1, 32, true},
		{"empty password", []byte{}, salt16, 1, 64, 1, 32, true},
		{"nil password and salt", nil, nil, 1, 64, 1, 32, true},
		{"long password", long, salt16, 1, 64, 1, 32, true},
		{"one pass", []byte("pw"), salt16, 1, 256, 1, 32, true},
		{"three passes", []byte("pw"), salt16, 3, 256, 1, 32, true},
		{"least memory", []byte("pw"), salt16, 1, 8, 1, 32, true},
		{"memory below the least", []byte("pw"), salt16, 1, 3, 1, 32, true},
		{"memory not a multiple of four", []byte("pw"), salt16, 2, 1027, 1, 32, true},
		{"more than 128 blocks a segment", []byte("pw"), salt16, 2, 4096 + 12, 1, 32, true},
		{"4-byte key", []byte("pw"), salt16, 1, 64, 1, 4, true},
		{"64-byte key", []byte("pw"), salt16, 1, 64, 1, 64, true},
		{"65-byte key", []byte("pw"), salt16, 1, 64, 1, 65, true},
		{"128-byte key", []byte("pw"), salt16, 1, 64, 1, 128, true},
		{"two lanes", []byte("pw"), salt16, 1, 64, 2, 32, false},
		{"3-byte key", []byte("pw"), salt16, 1, 64, 1, 3, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := nativeTakes(c.threads, c.keyLen); got != c.native {
				t.Errorf("nativeTakes = %v, want %v", got, c.native)
			}
			want := argon2.IDKey(c.pw, c.salt, c.time, c.memory, c.threads, c.keyLen)
			if got := eng.Key(c.pw, c.salt, c.time, c.memory, c.threads, c.keyLen); !bytes.Equal(got, want) {
				t.Fatalf("Key = %x, want %x", got, want)
			}
			wantHeap := uint64(c.memory) * 1024
			if c.native && eng.Backend() == Native {
				wantHeap = 0
			}
			if got := eng.GoHeapBytes(c.memory, c.threads, c.keyLen); got != wantHeap {
				t.Errorf("GoHeapBytes = %d, want %d", got, wantHeap)
			}
		})
	}
}

// TestReferenceVector: the argon2 reference implementation's argon2id vector (m = 64 MiB,
// t = 2, p = 1, password "password", salt "somesalt"), independent of x/crypto.
func TestReferenceVector(t *testing.T) {
	eng, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	want := "09316115d5cf24ed5a15a31a3ba326e5cf32edc24702987c02b6566f61913cf7"
	if got := fmt.Sprintf("%x", eng.Key([]byte("password"), []byte("somesalt"), 2, 65536, 1, 32)); got != want {
		t.Fatalf("%s key %s, want %s", eng.Backend(), got, want)
	}
}

// TestKeptBuffers: an engine keeps at most KeepBuffers buffers and reuses them, never keeps
// one over KeepBufferMaxBytes, lets them go KeepFor after the last hash, and at Close.
func TestKeptBuffers(t *testing.T) {
	if !nativeHere(t) {
		t.Skip("no native fill here")
	}
	eng, err := Open(Options{Backend: Native, KeepBuffers: 2, KeepFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(eng.buffers); n != 0 {
		t.Fatalf("%d buffers kept after Open, want 0", n)
	}
	pw, salt := []byte("pw"), []byte("0123456789abcdef")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); eng.Key(pw, salt, 1, 1024, 1, 32) }()
	}
	wg.Wait()
	if n := len(eng.buffers); n < 1 || n > 2 {
		t.Fatalf("%d buffers kept after four hashes, want 1 or 2 (KeepBuffers 2)", n)
	}
	reused := <-eng.buffers
	eng.buffers <- reused
	for range 3 { // one at a time: each takes a kept buffer and gives it back
		eng.Key(pw, salt, 1, 1024, 1, 32)
	}
	found := false
	for range len(eng.buffers) {
		mem := <-eng.buffers
		found = found || unsafe.SliceData(mem) == unsafe.SliceData(reused)
		defer func() { eng.buffers <- mem }()
	}
	if !found {
		t.Fatal("a kept buffer was not reused")
	}

	eng.Key(pw, salt, 1, 128*1024, 1, 32) // 128 MiB: over KeepBufferMaxBytes
	for range len(eng.buffers) {
		if mem := <-eng.buffers; cap(mem) > KeepBufferMaxBytes {
			t.Fatalf("kept a %d-byte buffer, over KeepBufferMaxBytes", cap(mem))
		} else {
			defer func() { eng.buffers <- mem }()
		}
	}
}

func TestKeptBuffersReleased(t *testing.T) {
	if !nativeHere(t) {
		t.Skip("no native fill here")
	}
	pw, salt := []byte("pw"), []byte("0123456789abcdef")
	t.Run("after KeepFor", func(t *testing.T) {
		eng, err := Open(Options{Backend: Native, KeepFor: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		eng.Key(pw, salt, 1, 64, 1, 32)
		deadline := time.Now().Add(10 * time.Second)
		for len(eng.buffers) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d buffers still kept 10 s after the last hash, KeepFor 20ms", len(eng.buffers))
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("at Close", func(t *testing.T) {
		eng, err := Open(Options{Backend: Native, KeepFor: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		eng.Key(pw, salt, 1, 64, 1, 32)
		eng.Close()
		if n := len(eng.buffers); n != 0 {
			t.Fatalf("%d buffers kept after Close, want 0", n)
		}
		if got, want := eng.Key(pw, salt, 1, 64, 1, 32), argon2.IDKey(pw, salt, 1, 64, 1, 32); !bytes.Equal(got, want) {
			t.Fatal("a closed engine derives a wrong key")
		}
		eng.Close()
	})
}

// TestConcurrentKeys: one engine derives from many goroutines at once (run under -race),
// each getting its own key, with fewer kept buffers than goroutines.
func TestConcurrentKeys(t *testing.T) {
	eng, err := Open(Options{KeepBuffers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	salt := []byte("0123456789abcdef")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := []byte(fmt.Sprintf("password %d", i))
			mem := uint32(256 + 64*i) // buffers of different sizes change hands
			if got, want := eng.Key(pw, salt, 2, mem, 1, 32), argon2.IDKey(pw, salt, 2, mem, 1, 32); !bytes.Equal(got, want) {
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

// FuzzKey: the native path and x/crypto agree on any password, salt and small parameters.
// Without the native fill (a build without BuildTag) there is nothing to compare: make
// fuzz-native runs it with the tag.
func FuzzKey(f *testing.F) {
	if !nativeHere(f) {
		f.Skip("no native fill in this build or on this CPU")
	}
	eng, err := Open(Options{KeepBuffers: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("password"), []byte("somesalt"), uint8(2), uint16(64), uint8(32))
	f.Add([]byte{}, []byte{}, uint8(1), uint16(0), uint8(4))
	f.Add([]byte("pw"), []byte("0123456789abcdef"), uint8(3), uint16(1027), uint8(100))
	f.Fuzz(func(t *testing.T, pw, salt []byte, time uint8, memory uint16, keyLen uint8) {
		// Bounded so that an input costs milliseconds: up to 4 passes over 2 MiB.
		tm, m, k := uint32(time%4)+1, uint32(memory%2048), uint32(keyLen)
		if k == 0 {
			k = 1
		}
		want := argon2.IDKey(pw, salt, tm, m, 1, k)
		if got := eng.Key(pw, salt, tm, m, 1, k); !bytes.Equal(got, want) {
			t.Fatalf("t=%d m=%d len=%d: key %x, want %x", tm, m, k, got, want)
		}
	})
}
