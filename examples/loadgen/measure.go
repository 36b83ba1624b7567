package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errPoolEmpty ends a worker of a phase that consumes what an earlier phase produced
// (codes, refresh tokens) once none is left; it is not counted as an error.
var errPoolEmpty = errors.New("pool empty")

// clockTicksPerSecond is the unit of utime and stime in /proc/<pid>/stat (USER_HZ), 100 on
// every Linux architecture Go supports.
const clockTicksPerSecond = 100

// phaseStats is what one measured phase of one operation recorded.
type phaseStats struct {
	latencies []time.Duration // of the successful requests, unsorted
	errors    int
	firstErr  error
	elapsed   time.Duration
	// exhausted is true when the phase ended early because its pool ran out.
	exhausted bool
}

// drive runs request from n workers (request gets the worker's index) until d has passed
// or every worker met errPoolEmpty. A request under way at the deadline finishes (its
// result, a rotated refresh token say, is kept by request) but is not measured. With
// measure false (a warm-up) the first error aborts the run, so a misconfigured target fails
// fast instead of being measured; with measure true every request is recorded.
func drive(n int, d time.Duration, measure bool, request func(ctx context.Context, worker int) error) (phaseStats, error) {
	start := time.Now()
	deadline := start.Add(d)
	var (
		mu      sync.Mutex
		st      phaseStats
		abort   error
		wg      sync.WaitGroup
		emptied int
		last    time.Time // when the last measured request ended
	)
	stopped := func() bool { mu.Lock(); defer mu.Unlock(); return abort != nil }
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && !stopped() {
				t := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				err := request(ctx, w)
				cancel()
				end := time.Now()
				mu.Lock()
				switch {
				case errors.Is(err, errPoolEmpty):
					emptied++
					mu.Unlock()
					return
				case end.After(deadline):
					// finished after the deadline: not a measurement
				case err != nil && !measure:
					if abort == nil {
						abort = err
					}
				case err != nil:
					st.errors++
					if st.firstErr == nil {
						st.firstErr = err
					}
					if end.After(last) {
						last = end
					}
				default:
					st.latencies = append(st.latencies, end.Sub(t))
					if end.After(last) {
						last = end
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st.exhausted = emptied == n
	st.elapsed = d
	if st.exhausted && !last.IsZero() {
		st.elapsed = last.Sub(start)
	}
	return st, abort
}

// requestTimeout bounds one request.
const requestTimeout = 30 * time.Second

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 1) of sorted latencies,
// 0 for none: the smallest value that at least p of the values do not exceed.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p*float64(len(sorted)) + 0.999999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// summarize turns a phase's record into the printed figures; cpuTicks is the server's CPU
// time over the phase in clock ticks, negative when unknown.
func summarize(op string, st phaseStats, cpuTicks int64) opResult {
	lat := slices.Clone(st.latencies)
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r := opResult{
		Op: op, Requests: len(lat) + st.errors, Errors: st.errors, Seconds: st.elapsed.Seconds(),
		P50MS: ms(percentile(lat, 0.50)), P99MS: ms(percentile(lat, 0.99)),
		CPUMSPerOp: -1, Exhausted: st.exhausted,
	}
	if st.elapsed > 0 {
		r.PerSecond = float64(len(lat)) / st.elapsed.Seconds()
	}
	if cpuTicks >= 0 && len(lat) > 0 {
		r.CPUMSPerOp = float64(cpuTicks) * 1000 / clockTicksPerSecond / float64(len(lat))
	}
	if st.firstErr != nil {
		r.FirstError = st.firstErr.Error()
	}
	return r
}

// procCPUTicks reads utime+stime (clock ticks) of process pid from /proc/<pid>/stat.
func procCPUTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU extracts utime+stime from the text of /proc/<pid>/stat. The command name
// (field 2) is in parentheses and may itself hold spaces and parentheses, so fields are
// counted from the last ')': utime and stime are fields 14 and 15.
func parseStatCPU(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("stat: %w", err)
	}
	return utime + stime, nil
}

// procPeakRSSKiB reads VmHWM (peak resident set size, KiB) of process pid.
func procPeakRSSKiB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseStatusHWM(f)
}

// parseStatusHWM finds "VmHWM:   1234 kB" in the text of /proc/<pid>/status.
func parseStatusHWM(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM: %w", err)
			}
			return v, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("status: no VmHWM line")
}
