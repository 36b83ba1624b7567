package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/testlog"
	"github.com/gatehouse-id/gatehouse/server"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"none", nil, 0.5, 0},
		{"one value is every percentile", ms(7), 0.99, 7 * time.Millisecond},
		{"median of an odd count", ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{"median of an even count is the lower middle", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p50 of 1..100", ms(hundred...), 0.50, 50 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p100 is the maximum", ms(hundred...), 1, 100 * time.Millisecond},
		{"a tiny percentile is the minimum", ms(5, 6), 0.0001, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name, stat string
		want       int64
		wantErr    bool
	}{
		{"plain", "42 (gatehouse) S 1 42 42 0 -1 4194560 100 0 0 0 250 37 0 0 20 0 9 0 1000 0 0", 287, false},
		{"command name with spaces and parentheses", "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0", 7, false},
		{"truncated", "7 (x) R 1 2 3", 0, true},
		{"no command name", "7 x R", 0, true},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 a 4 0 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU(tt.stat)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseStatCPU = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// The test's own process: its CPU time grows with work, and it has a peak RSS.
func TestProcOfOwnProcess(t *testing.T) {
	before, err := procCPUTicks(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
		after, err := procCPUTicks(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU ticks stayed at %d over 5 s of work", before)
		}
	}
	kib, err := procPeakRSSKiB(os.Getpid())
	if err != nil || kib < 1024 {
		t.Errorf("peak RSS %d KiB, %v; want at least a MiB", kib, err)
	}
	if _, err := parseStatusHWM(strings.NewReader("Name:\tx\nVmRSS:\t1 kB\n")); err == nil {
		t.Error("a status without VmHWM parsed")
	}
}

func TestRatioAndVerdicts(t *testing.T) {
	for _, tt := range []struct {
		a, b float64
		want string
	}{{150, 100, "1.50×"}, {80, 100, "0.80×"}, {0, 100, "—"}, {100, 0, "—"}} {
		if got := ratio(tt.a, tt.b); got != tt.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
	run := func(name string, rss int64, rates map[string]float64) *runResult {
		r := &runResult{Name: name, PeakRSSKiB: rss}
		for op, v := range rates {
			r.Ops = append(r.Ops, opResult{Op: op, PerSecond: v})
		}
		return r
	}
	node := run("node", 327*1024, map[string]float64{
		opClientCredentials: 4000, opIntrospection: 4000, opCodeExchange: 1500, opRefresh: 1600,
	})
	es := run("pg-ES256", 100*1024, map[string]float64{
		opClientCredentials: 4400, opIntrospection: 3000, opUserinfo: 4000, opCodeExchange: 1200,
		opCodeExchangeES256: 1500, opRefresh: 1000, opRefreshES256: 1700, opAuthorize: 2400, opLogin: 79.5,
	})
	rs := run("pg-RS256", 120*1024, nil)
	want := []string{
		"PASS client_credentials (ES256 access tokens) ≥ 1.0×: 4400/s vs 4000/s node's client_credentials = 1.10× (target ≥ 1.0×)",
		"FAIL introspection ≥ 1.0×: 3000/s vs 4000/s node's introspection = 0.75× (target ≥ 1.0×)",
		"PASS userinfo ≥ 1.0× node's introspection: 4000/s vs 4000/s node's introspection = 1.00× (target ≥ 1.0×)",
		"PASS code exchange, RS256 ID tokens ≥ 0.8×: 1200/s vs 1500/s node's code exchange (RS256) = 0.80× (target ≥ 0.8×)",
		"PASS code exchange, ES256 ID tokens ≥ 1.0×: 1500/s vs 1500/s node's code exchange (RS256) = 1.00× (target ≥ 1.0×)",
		"FAIL refresh, RS256 ID tokens ≥ 0.8×: 1000/s vs 1600/s node's refresh (RS256) = 0.62× (target ≥ 0.8×)",
		"PASS refresh, ES256 ID tokens ≥ 1.0×: 1700/s vs 1600/s node's refresh (RS256) = 1.06× (target ≥ 1.0×)",
		"PASS authorize with a session ≥ 2× our code exchange: 2400/s vs 1200/s our code exchange = 2.00× (target ≥ 2.0×)",
		"FAIL password login ≥ 80/s: 79.5/s",
		"FAIL peak RSS ≤ 110 MiB: 120 MiB (node-oidc-provider 327 MiB)", // the RS256 run counts too
	}
	got := verdicts(es, rs, node)
	if len(got) != len(want) {
		t.Fatalf("%d verdicts, want %d", len(got), len(want))
	}
	for i, v := range got {
		if v.Text != want[i] {
			t.Errorf("verdict %d:\n got %s\nwant %s", i, v.Text, want[i])
		}
		if v.Pass != strings.HasPrefix(want[i], "PASS") || !v.Known {
			t.Errorf("verdict %d: pass %v known %v, want it to match %q", i, v.Pass, v.Known, want[i])
		}
	}
	for _, v := range verdicts(es, nil, nil)[:7] {
		if v.Known || v.Pass || !strings.HasPrefix(v.Text, "UNKNOWN") {
			t.Errorf("without a baseline: %+v, want UNKNOWN", v)
		}
	}
	s := scaleFigures(run("big", 0, map[string]float64{opRefresh: 90, opLogin: 50}), run("empty", 0, map[string]float64{opRefresh: 100}))
	if len(s.Percent) != 1 || s.Percent[opRefresh] != 90 {
		t.Errorf("scaled figures %v, want refresh at 90%% only", s.Percent)
	}
}

// A phase whose pool runs dry ends early and says so; errPoolEmpty is no error.
func TestDriveEndsWhenThePoolRunsDry(t *testing.T) {
	var left atomic.Int64
	left.Store(50)
	st, err := drive(4, 10*time.Second, true, func(context.Context, int) error {
		if left.Add(-1) < 0 {
			return errPoolEmpty
		}
		return nil
	})
	if err != nil || !st.exhausted || len(st.latencies) != 50 || st.errors != 0 || st.elapsed >= 10*time.Second {
		t.Errorf("got %d measured, %d errors, exhausted %v after %v (%v); want 50, 0, true, early",
			len(st.latencies), st.errors, st.exhausted, st.elapsed, err)
	}
	_, err = drive(2, time.Second, false, func(context.Context, int) error { return errors.New("401") })
	if err == nil || err.Error() != "401" {
		t.Errorf("warm-up error %v, want the request's", err)
	}
}

// The driver measures every operation against a real Gatehouse on SQLite, in process, on
// 127.0.0.1, without one error.
func TestSmokeEveryOperationAgainstGatehouse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "bench.db")
	secret := strings.Repeat("b", 32)
	const redirectURI = "http://127.0.0.1:9/callback"
	gh := func(args ...string) {
		t.Helper()
		var stderr bytes.Buffer
		if code := server.Main(context.Background(), append(args, "--dsn", dsn, "--secret", secret), &bytes.Buffer{}, &stderr); code != 0 {
			t.Fatalf("gatehouse %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
	}
	gh("client", "create", "--id", "rp", "--client-secret", "rp-secret", "--auth-method", "client_secret_post", "--first-party", "--redirect-uri", redirectURI)
	gh("client", "create", "--id", "rp-es256", "--client-secret", "rp-secret", "--auth-method", "client_secret_post", "--first-party", "--redirect-uri", redirectURI, "--id-token-alg", "ES256")
	gh("client", "create", "--id", "svc", "--client-secret", "svc-secret", "--auth-method", "client_secret_post", "--grant-type", "client_credentials", "--scope", "api")
	gh("user", "create", "--email", "bench@example.com", "--password", "correct horse battery staple", "--verified")

	ctx, cancel := context.WithCancel(context.Background())
	logs := &testlog.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- server.Main(ctx, []string{"serve", "--dsn", dsn, "--secret", secret, "--demo=false", "--addr", addr,
			"--issuer", base, "--access-token-alg", "ES256", "--login-rate-limit", "off", "--lockout", "off", "--log-level", "warn"},
			&bytes.Buffer{}, logs)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, logs.String())
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready in 10 s: %s", logs.String())
		}
	}

	const concurrency = 2
	tg, err := newTarget(context.Background(), target{
		issuer: base, code: client{"rp", "rp-secret"}, codeES256: client{"rp-es256", "rp-secret"},
		cc: client{"svc", "svc-secret"}, ccScope: "api", redirectURI: redirectURI, scope: "openid profile email offline_access",
		loginURL: base + "/api/public/login", sessionURL: base + "/api/public/session",
		email: "bench@example.com", password: "correct horse battery staple", introspect: "access",
	}, concurrency)
	if err != nil {
		t.Fatal(err)
	}
	res, err := measureAll(context.Background(), tg, runConfig{
		name: "smoke", concurrency: concurrency, duration: 500 * time.Millisecond, warmup: 50 * time.Millisecond,
		pid: os.Getpid(), ops: allOps,
	}, &testlog.Buffer{})
	if err != nil {
		t.Fatalf("%v\nserver logs:\n%s", err, logs.String())
	}
	if len(res.Ops) != len(allOps) {
		t.Fatalf("%d operations measured, want %d", len(res.Ops), len(allOps))
	}
	for _, o := range res.Ops {
		if o.Skipped || o.Requests == 0 || o.Errors != 0 || o.PerSecond <= 0 || o.P50MS <= 0 || o.CPUMSPerOp < 0 {
			t.Errorf("%s: %+v; want requests without errors, latency and CPU measured", o.Op, o)
		}
	}
	if res.PeakRSSKiB <= 0 {
		t.Errorf("peak RSS %d, want it read", res.PeakRSSKiB)
	}
	var out bytes.Buffer
	writeTables(&out, report{Runs: []runResult{res}}, nil)
	for _, op := range allOps {
		if !strings.Contains(out.String(), opTitles[op]) {
			t.Errorf("the table lacks %q:\n%s", opTitles[op], out.String())
		}
	}
}
