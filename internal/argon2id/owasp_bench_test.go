//go:build linux

package argon2id

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// owaspSets are OWASP's equivalent argon2id parameter sets (Password Storage Cheat Sheet),
// memory in KiB: the same defence against GPU cracking, traded between memory and passes.
var owaspSets = []struct{ memory, time uint32 }{
	{19 * 1024, 2},
	{12 * 1024, 3},
	{9 * 1024, 4},
	{7 * 1024, 5},
}

// BenchmarkOWASPSets measures one hash of each OWASP set with each backend this build has,
// as getrusage sees it: CPU (user and system) and minor page faults per hash, beside Go's
// wall time and allocations. With -cpu 2 (or more) it runs as many hashes at once as a
// loaded server does (RunParallel), each in its own memory.
//
//	go test -run '^$' -bench OWASPSets -benchtime 40x -cpu 1,2 ./internal/argon2id
func BenchmarkOWASPSets(b *testing.B) {
	for _, backend := range []Backend{Go, Native} {
		eng, err := Open(Options{Backend: backend})
		if err != nil {
			b.Logf("%s: %v", backend, err)
			continue
		}
		for _, set := range owaspSets {
			b.Run(fmt.Sprintf("%s/m=%dMiB,t=%d", backend, set.memory/1024, set.time), func(b *testing.B) {
				pw, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
				runtime.GC()
				before := rusage(b)
				start := time.Now()
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						eng.Key(pw, salt, set.time, set.memory, 1, 32)
					}
				})
				wall := time.Since(start)
				after := rusage(b)
				cpu := cpuTime(after) - cpuTime(before)
				n := float64(b.N)
				b.ReportMetric(float64(cpu.Microseconds())/1000/n, "cpu-ms/op")
				b.ReportMetric(float64(after.Minflt-before.Minflt)/n, "minflt/op")
				b.ReportMetric(n/wall.Seconds(), "hashes/s")
			})
		}
		eng.Close()
	}
}

func rusage(b *testing.B) syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru
}

func cpuTime(ru syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
