package testlog_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/testlog"
)

// TestBufferConcurrentWrites: writes from several goroutines all land, whole, while the
// buffer is read (run with -race to check the locking).
func TestBufferConcurrentWrites(t *testing.T) {
	var b testlog.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Errorf("got %d lines, want 800", got)
	}
}
