package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"golang.org/x/net/html"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gatehouse-id/gatehouse/internal/cutproxy"
	"github.com/gatehouse-id/gatehouse/internal/testlog"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// The harness of the fault suite (faults_test.go): replicas of the built binary on fixed
// addresses that can be killed and restarted, a flow driver that crosses replicas and
// counts every answer, and the summary table. A dependency is cut through internal/cutproxy.

// envFaultsFull set to "1" runs every fault case at its full length (make faults); unset,
// the cases run shortened variants of seconds, as part of make test.
const envFaultsFull = "GATEHOUSE_FAULTS_FULL"

// faultLen is full under make faults and fast otherwise.
func faultLen(full, fast time.Duration) time.Duration {
	if os.Getenv(envFaultsFull) == "1" {
		return full
	}
	return fast
}

// faultPostgres is the DSN of a fresh Postgres schema dropped at the end of t, or skips t
// when no Postgres is configured (fails it when GATEHOUSE_REQUIRE_POSTGRES=1).
func faultPostgres(t *testing.T) string {
	t.Helper()
	for _, b := range storagetest.Backends(t) {
		if b.Name == "postgres" {
			return b.DSN(t)
		}
	}
	t.Skip("needs Postgres (" + storagetest.EnvPostgresDSN + ")")
	return ""
}

// faultRedis is GATEHOUSE_TEST_REDIS_URL, or skips t (fails it when GATEHOUSE_REQUIRE_REDIS=1).
func faultRedis(t *testing.T) *url.URL {
	t.Helper()
	raw := os.Getenv("GATEHOUSE_TEST_REDIS_URL")
	if raw == "" {
		if os.Getenv("GATEHOUSE_REQUIRE_REDIS") == "1" {
			t.Fatal("GATEHOUSE_REQUIRE_REDIS=1 but GATEHOUSE_TEST_REDIS_URL is unset")
		}
		t.Skip("needs Redis (GATEHOUSE_TEST_REDIS_URL)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// viaProxy is dsn with its host replaced by the proxy's address.
func viaProxy(t *testing.T, dsn string, p *cutproxy.Proxy) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	return u.String()
}

// replica is one "gatehouse serve" on a fixed address, so that it can be killed and
// started again where its clients expect it. Every replica of a case shares the issuer.
type replica struct {
	name, addr, debugAddr string
	args                  []string
	bin                   string
	proc                  *serverProcess
	starts                int
}

func (r *replica) base() string { return "http://" + r.addr }

// newReplica starts "gatehouse serve" on dsn with the shared issuer and the extra flags,
// with its pprof listener on a debug address of its own.
func newReplica(t *testing.T, bin, name, issuer, dsn string, extra ...string) *replica {
	t.Helper()
	r := &replica{name: name, addr: freeAddr(t), debugAddr: freeAddr(t), bin: bin}
	r.args = append([]string{"serve", "--addr", r.addr, "--issuer", issuer, "--dsn", dsn, "--secret", testSecret,
		"--debug-addr", r.debugAddr, "--demo=false", "--log-level", "warn"}, extra...)
	r.start(t)
	return r
}

// start runs the replica's process and waits until /readyz answers 200 (at most 15s). The
// process is stopped with SIGTERM at cleanup unless it exited already.
func (r *replica) start(t *testing.T) {
	t.Helper()
	s := &serverProcess{issuer: r.base(), stderr: &testlog.Buffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(r.bin, r.args...)
	s.cmd.Stdout, s.cmd.Stderr = s.stderr, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.proc = s
	r.starts++
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(25 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%.20000s", r.name, s.stderr)
		}
	})
	hc := &http.Client{Timeout: time.Second}
	for range 150 {
		select {
		case <-s.exited:
			t.Fatalf("%s exited before it was ready: %v\n%s", r.name, s.waitErr, s.stderr)
		default:
		}
		if resp, err := hc.Get(r.base() + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not ready at %s/readyz after 15s\n%s", r.name, r.base(), s.stderr)
}

// kill sends SIGKILL and waits for the process to be gone.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-r.proc.exited
}

// alive fails t when the process has exited (a crash).
func (r *replica) alive(t *testing.T) {
	t.Helper()
	select {
	case <-r.proc.exited:
		t.Errorf("%s exited: %v\n%.20000s", r.name, r.proc.waitErr, r.proc.stderr)
	default:
	}
}

// stop sends SIGTERM and fails t unless the process exits 0: a data race found by the
// race-built binary, or a crash, shows here.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.alive(t)
	r.proc.stop(t)
}

// goroutines reads the replica's goroutine count from its pprof listener.
func (r *replica) goroutines(t *testing.T) int {
	t.Helper()
	resp, err := http.Get("http://" + r.debugAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total")))
	if err != nil {
		t.Fatalf("goroutine profile of %s begins %q", r.name, line)
	}
	return n
}

// heapInuse reads HeapInuse from the replica's heap profile, taken after a garbage
// collection (gc=1) so that it measures the live heap, not the garbage of the moment (the
// 7 MiB of each password hash).
func (r *replica) heapInuse(t *testing.T) int64 {
	t.Helper()
	resp, err := http.Get("http://" + r.debugAddr + "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapInuse = "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("heap profile of %s has no HeapInuse", r.name)
	return 0
}

// faultSetup is the database of a case administered by the CLI: the code client, a
// client_credentials client and the user the flows sign in as.
type faultSetup struct {
	gh       *gatehouse
	rp       clientInfo
	svc      clientInfo
	email    string
	userID   string
	redirect string
}

// newFaultSetup migrates dsn and registers the clients and the user.
func newFaultSetup(t *testing.T, dsn string) *faultSetup {
	t.Helper()
	gh := &gatehouse{bin: buildServer(t), dsn: dsn}
	gh.run(t, "migrate", "--dsn", dsn)
	fs := &faultSetup{gh: gh, redirect: "http://127.0.0.1:1/callback",
		email: strings.ToLower("u-"+rand.Text()[:10]) + "@example.com"}
	out := gh.admin(t, "client", "create", "--id", "rp", "--name", "Fault RP", "--first-party",
		"--redirect-uri", fs.redirect, "--scope", testScopes)
	if err := json.Unmarshal(out, &fs.rp); err != nil || fs.rp.ClientSecret == "" {
		t.Fatalf("client create printed %q: %v", out, err)
	}
	out = gh.admin(t, "client", "create", "--id", "svc", "--name", "Fault service", "--grant-type", "client_credentials", "--scope", "api")
	if err := json.Unmarshal(out, &fs.svc); err != nil || fs.svc.ClientSecret == "" {
		t.Fatalf("client create printed %q: %v", out, err)
	}
	out = gh.admin(t, "user", "create", "--email", fs.email, "--password", testPassword, "--verified")
	var u struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &u); err != nil || u.ID == "" {
		t.Fatalf("user create printed %q: %v", out, err)
	}
	fs.userID = u.ID
	return fs
}

// statusCounts counts answers by "operation status".
type statusCounts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *statusCounts) add(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[fmt.Sprintf("%s %d", op, status)]++
}

// String lists the counts sorted, "op status=n".
func (c *statusCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.m))
	for k := range c.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", k, c.m[k])
	}
	return b.String()
}

// statuses sums the counts by status alone.
func (c *statusCounts) statuses() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]int{}
	for k, n := range c.m {
		_, s, _ := strings.Cut(k, " ")
		code, _ := strconv.Atoi(s)
		out[code] += n
	}
	return out
}

// errAnswerLost is a request whose answer never came: the server may or may not have acted.
var errAnswerLost = errors.New("answer lost")

// flowDriver runs OAuth flows across replicas and counts every answer. Every request
// carries an X-Forwarded-For address of its flow (the replicas trust 127.0.0.1), so the
// per-IP login limit counts flows, not the test machine.
type flowDriver struct {
	fs       *faultSetup
	bases    func() []string // the replicas' base URLs, in the order the flow crosses them
	counts   *statusCounts
	retry    bool // retry idempotent calls (and refreshes, under the reuse grace) on another replica
	retries  atomic.Int64
	lostRefs atomic.Int64 // refresh answers lost and retried in the grace window
	hc       *http.Client
	// hcFresh sends the calls that are not idempotent, each on a connection of its own.
	// Go's transport sends any request, req.Close or not, on an idle pooled connection
	// and, when that connection breaks before the first byte of the answer, replays a GET
	// on a new one by itself (net/http's shouldRetryRequest). A resume that a replica
	// processed and was killed before answering would then come back to call as the
	// replay's "connection refused" and be sent to the next replica, which finds the
	// request already completed: "Sign-in request expired", a failure of the harness, not
	// of the server. A connection never reused is never replayed.
	hcFresh *http.Client
}

func newFlowDriver(fs *faultSetup, bases func() []string) *flowDriver {
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &flowDriver{fs: fs, bases: bases, counts: &statusCounts{},
		hc: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32},
			CheckRedirect: noRedirect},
		hcFresh: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
			CheckRedirect: noRedirect}}
}

// flowIP is a fresh documentation-range-like address for one flow.
func flowIP() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("10.%d.%d.%d", b[0], b[1], b[2])
}

// call sends one request built by mk to base, counting the answer under op. With retry on,
// a request that never reached a server (connection refused) or, when idempotent, whose
// answer was lost or was a 503 is sent again to the next replica, at most 40 times.
func (d *flowDriver) call(op string, idempotent bool, start int, mk func(base string) *http.Request) (*http.Response, []byte, error) {
	var lastErr error
	for attempt := range 40 {
		bases := d.bases()
		base := bases[(start+attempt)%len(bases)]
		req := mk(base)
		hc := d.hc
		if !idempotent {
			// A fresh connection is never replayed by the transport (see hcFresh), so a
			// refusal here means the request reached no server.
			hc = d.hcFresh
		}
		resp, err := hc.Do(req)
		if req.Context().Err() != nil {
			return nil, nil, req.Context().Err() // the run ended: not an answer of the server
		}
		if err != nil {
			refused := errors.Is(err, syscall.ECONNREFUSED)
			d.counts.add(op, 0)
			lastErr = fmt.Errorf("%s at %s: %w", op, base, err)
			if !refused {
				lastErr = fmt.Errorf("%w: %w", errAnswerLost, lastErr)
			}
			if d.retry && (refused || idempotent) {
				d.retries.Add(1)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			return nil, nil, lastErr
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		d.counts.add(op, resp.StatusCode)
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			d.counts.add(op+"-without-Retry-After", resp.StatusCode)
		}
		if err != nil {
			lastErr = fmt.Errorf("%w: %s at %s: %w", errAnswerLost, op, base, err)
			if d.retry && idempotent {
				d.retries.Add(1)
				continue
			}
			return nil, nil, lastErr
		}
		if d.retry && idempotent && resp.StatusCode == http.StatusServiceUnavailable {
			d.retries.Add(1)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return resp, body, nil
	}
	return nil, nil, lastErr
}

// grant is what a finished code exchange leaves a client.
type grant struct{ access, refresh, idToken string }

// flowOptions shape one flow.
type flowOptions struct {
	refreshes  int  // refreshes after the exchange
	revoke     bool // revoke the grant at the end and check introspection calls it inactive
	introspect bool // introspect the newest refresh token (active)
}

// flow runs one sign-in across the replicas: authorize on A (no session: paused for the
// login page), log in on B through the JSON API, resume on B, exchange the code on A,
// refresh on B, introspect on A, revoke on A, introspect on B. k picks which replica is A.
func (d *flowDriver) flow(ctx context.Context, k int, o flowOptions) (grant, error) {
	jar, _ := cookiejar.New(nil)
	ip := flowIP()
	a, b := k, k+1
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	state := rand.Text()
	q := url.Values{"response_type": {"code"}, "client_id": {d.fs.rp.ClientID}, "redirect_uri": {d.fs.redirect},
		"scope": {testScopes}, "state": {state}, "nonce": {rand.Text()},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	withJar := func(req *http.Request) *http.Request {
		req.Header.Set("X-Forwarded-For", ip)
		for _, c := range jar.Cookies(req.URL) {
			req.AddCookie(c)
		}
		return req
	}
	get := func(base, path string) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		return withJar(req)
	}
	// authorize on A
	resp, body, err := d.call("authorize", true, a, func(base string) *http.Request { return get(base, "/api/oauth/authorize?"+q.Encode()) })
	if err != nil {
		return grant{}, err
	}
	loc, _ := resp.Location()
	d.countRedirectError("authorize", resp.StatusCode, loc)
	if loc == nil || loc.Query().Get("request") == "" {
		return grant{}, fmt.Errorf("authorize: %d to %v, want a redirect to the login page: %.200s", resp.StatusCode, loc, body)
	}
	token := loc.Query().Get("request")
	// log in on B
	login, _ := json.Marshal(map[string]string{"email": d.fs.email, "password": testPassword})
	resp, body, err = d.call("login", true, b, func(base string) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/public/login", bytes.NewReader(login))
		req.Header.Set("Content-Type", "application/json")
		return withJar(req)
	})
	if err != nil {
		return grant{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return grant{}, fmt.Errorf("login: %d: %.200s", resp.StatusCode, body)
	}
	u, _ := url.Parse("http://127.0.0.1/")
	jar.SetCookies(u, resp.Cookies())
	// resume on B: the code. Not idempotent: it completes the paused request, so a lost
	// answer ends the flow.
	resp, body, err = d.call("resume", false, b, func(base string) *http.Request {
		return get(base, "/api/oauth/authorize/resume?"+url.Values{"request": {token}}.Encode())
	})
	if err != nil {
		return grant{}, err
	}
	loc, _ = resp.Location()
	d.countRedirectError("resume", resp.StatusCode, loc)
	if loc == nil || !strings.HasPrefix(loc.String(), d.fs.redirect) || loc.Query().Get("code") == "" || loc.Query().Get("state") != state {
		return grant{}, fmt.Errorf("resume: %d to %v, want a code for the client: %.200s", resp.StatusCode, loc, pageText(body))
	}
	code := loc.Query().Get("code")
	// exchange on A: not idempotent; a lost answer ends the flow (the caller starts another)
	var g grant
	if err := d.token("exchange", false, a, ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {d.fs.redirect}, "code_verifier": {verifier}}, &g); err != nil {
		return g, err
	}
	for i := range o.refreshes {
		if err := d.refresh(ctx, b+i, &g); err != nil {
			return g, err
		}
	}
	if o.introspect {
		if err := d.introspect(ctx, a, g.refresh, true); err != nil {
			return g, err
		}
	}
	if o.revoke {
		if err := d.revoke(ctx, a, g.refresh); err != nil {
			return g, err
		}
		if err := d.introspect(ctx, b, g.refresh, false); err != nil {
			return g, err
		}
	}
	return g, nil
}

// countRedirectError counts an authorization error sent to the client's redirect URI (RFC
// 6749 §4.1.2.1) under "op-error=CODE": the authorization endpoint's form of a 503 is a
// redirect with error=temporarily_unavailable.
func (d *flowDriver) countRedirectError(op string, status int, loc *url.URL) {
	if loc != nil && strings.HasPrefix(loc.String(), d.fs.redirect) && loc.Query().Get("error") != "" {
		d.counts.add(op+"-error="+loc.Query().Get("error"), status)
	}
}

// token posts a token request as the code client (client_secret_basic) and decodes a 200 answer into g.
func (d *flowDriver) token(op string, idempotent bool, k int, ctx context.Context, form url.Values, g *grant) error {
	resp, body, err := d.call(op, idempotent, k, func(base string) *http.Request { return d.clientPost(ctx, base, "/api/oauth/token", form) })
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d: %.300s", op, resp.StatusCode, body)
	}
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		IDToken      string `json:"id_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		return fmt.Errorf("%s: answer %.300s, want an access and a refresh token", op, body)
	}
	*g = grant{access: tok.AccessToken, refresh: tok.RefreshToken, idToken: tok.IDToken}
	return nil
}

// refresh rotates g's refresh token on replica k. With retry on, a refresh whose answer was
// lost is sent once more with the same token: the server's reuse grace lets it through.
func (d *flowDriver) refresh(ctx context.Context, k int, g *grant) error {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.refresh}}
	err := d.token("refresh", false, k, ctx, form, g)
	if err != nil && d.retry && errors.Is(err, errAnswerLost) {
		d.lostRefs.Add(1)
		time.Sleep(200 * time.Millisecond)
		err = d.token("refresh", false, k+1, ctx, form, g)
	}
	return err
}

func (d *flowDriver) clientPost(ctx context.Context, base, path string, form url.Values) *http.Request {
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(f.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// client_secret_basic, the client's registered method (RFC 6749 §2.3.1 form-encodes both).
	req.SetBasicAuth(url.QueryEscape(d.fs.rp.ClientID), url.QueryEscape(d.fs.rp.ClientSecret))
	return req
}

// introspect checks that token's introspection on replica k says active == want.
func (d *flowDriver) introspect(ctx context.Context, k int, token string, want bool) error {
	resp, body, err := d.call("introspect", true, k, func(base string) *http.Request {
		return d.clientPost(ctx, base, "/api/oauth/introspect", url.Values{"token": {token}})
	})
	if err != nil {
		return err
	}
	var r struct {
		Active bool `json:"active"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &r) != nil || r.Active != want {
		return fmt.Errorf("introspect: %d %.200s, want 200 with active %v", resp.StatusCode, body, want)
	}
	return nil
}

// revoke revokes the grant of a refresh token on replica k (RFC 7009: idempotent).
func (d *flowDriver) revoke(ctx context.Context, k int, token string) error {
	resp, body, err := d.call("revoke", true, k, func(base string) *http.Request {
		return d.clientPost(ctx, base, "/api/oauth/revoke", url.Values{"token": {token}, "token_type_hint": {"refresh_token"}})
	})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke: %d %.200s", resp.StatusCode, body)
	}
	return nil
}

// loadResult is what runLoad saw.
type loadResult struct {
	flows, ok int
	firstErr  error
	errs      []error
}

// runLoad runs workers concurrent loops of fn until ctx ends, each loop one flow. The end
// of ctx stops new flows; a flow under way finishes (under a context without its
// deadline), so every flow started is counted, and each worker runs at least one.
func runLoad(ctx context.Context, workers int, fn func(ctx context.Context, w, i int) error) *loadResult {
	stop := ctx
	ctx = context.WithoutCancel(ctx)
	var mu sync.Mutex
	res := &loadResult{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i == 0 || stop.Err() == nil; i++ {
				err := fn(ctx, w, i)
				mu.Lock()
				res.flows++
				if err == nil {
					res.ok++
				} else {
					if res.firstErr == nil {
						res.firstErr = err
					}
					if len(res.errs) < 5 {
						res.errs = append(res.errs, err)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// faultRow is one line of a case's summary table.
type faultRow struct{ injected, measured, lost string }

// faultSummary logs a case's summary table (case, injected, measured, lost).
func faultSummary(t *testing.T, rows ...faultRow) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\n| case | injected | measured | lost |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name(), r.injected, r.measured, r.lost)
	}
	t.Log(b.String())
}

// openSQL opens the case's own connection to its Postgres schema, for the checks the
// storage API has no query for: the suite inspects rows the server wrote, it writes none.
func openSQL(t *testing.T, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	return db
}

// count runs a counting query.
func count(t *testing.T, db *gorm.DB, query string) int64 {
	t.Helper()
	var n int64
	if err := db.Raw(query).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// pageText is the visible text of an HTML page, for error messages.
func pageText(body []byte) string {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return string(body)
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "style" || n.Data == "script" || n.Data == "head") {
			return
		}
		if n.Type == html.TextNode && strings.TrimSpace(n.Data) != "" {
			b.WriteString(strings.TrimSpace(n.Data) + " ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return b.String()
}

// refusedWrite is one kind of write a case expects the database to refuse.
type refusedWrite struct {
	name string
	// send makes one attempt and says whether the write succeeded.
	send func(t *testing.T) (resp *http.Response, body []byte, succeeded bool)
	// refusedOK says whether a failed attempt was refused in the spec's shape.
	refusedOK func(resp *http.Response, body []byte) bool
}

// refusedWrites sends each kind of write to base and checks that the database's refusal
// reaches the client in the shape of its surface, as a retryable 503 with Retry-After:
// {error, message} for a password login at /api/public and an admin login at /api/admin;
// temporarily_unavailable for a refresh at /api/oauth/token and, as a redirect to the client
// (RFC 6749 §4.1.2.1), for a new authorization; an error page for a login through the
// hosted page. With fill, each write is repeated while it succeeds (at most 300 times), so
// that a database with a little room left fills up; without, its first attempt must be
// refused. It keeps g's refresh token current and returns one line per write for the
// summary.
func refusedWrites(t *testing.T, base string, fs *faultSetup, g *grant, adminEmail string, fill bool) []string {
	t.Helper()
	hc := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(t *testing.T, req *http.Request) (*http.Response, []byte) {
		t.Helper()
		req.Header.Set("X-Forwarded-For", flowIP())
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return resp, body
	}
	jsonLogin := func(path, email string) func(t *testing.T) (*http.Response, []byte, bool) {
		return func(t *testing.T) (*http.Response, []byte, bool) {
			body, _ := json.Marshal(map[string]string{"email": email, "password": testPassword})
			req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, out := do(t, req)
			return resp, out, resp.StatusCode == http.StatusOK
		}
	}
	retryable := func(resp *http.Response) bool {
		return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
	}
	apiShape := func(resp *http.Response, body []byte) bool {
		var e struct{ Error, Message string }
		return retryable(resp) && json.Unmarshal(body, &e) == nil && e.Error != "" && e.Message != ""
	}
	writes := []refusedWrite{
		{"password login (POST /api/public/login)", jsonLogin("/api/public/login", fs.email), apiShape},
		{"admin login (POST /api/admin/login)", jsonLogin("/api/admin/login", adminEmail), apiShape},
		{"refresh (POST /api/oauth/token)", func(t *testing.T) (*http.Response, []byte, bool) {
			d := &flowDriver{fs: fs}
			resp, body := do(t, d.clientPost(context.Background(), base, "/api/oauth/token",
				url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.refresh}}))
			var tok struct {
				AccessToken  string `json:"access_token"`
				RefreshToken string `json:"refresh_token"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.RefreshToken == "" {
				return resp, body, false
			}
			g.access, g.refresh = tok.AccessToken, tok.RefreshToken
			return resp, body, true
		}, func(resp *http.Response, body []byte) bool {
			var e struct{ Error string }
			return retryable(resp) && json.Unmarshal(body, &e) == nil && e.Error == "temporarily_unavailable"
		}},
		{"new authorization (GET /api/oauth/authorize)", func(t *testing.T) (*http.Response, []byte, bool) {
			q := url.Values{"response_type": {"code"}, "client_id": {fs.rp.ClientID}, "redirect_uri": {fs.redirect},
				"scope": {testScopes}, "state": {rand.Text()}, "nonce": {rand.Text()},
				"code_challenge": {base64.RawURLEncoding.EncodeToString(make([]byte, 32))}, "code_challenge_method": {"S256"}}
			req, _ := http.NewRequest(http.MethodGet, base+"/api/oauth/authorize?"+q.Encode(), nil)
			resp, body := do(t, req)
			loc, _ := resp.Location()
			return resp, body, loc != nil && loc.Query().Get("request") != ""
		}, func(resp *http.Response, body []byte) bool {
			loc, _ := resp.Location()
			return retryable(resp) || loc != nil && strings.HasPrefix(loc.String(), fs.redirect) &&
				loc.Query().Get("error") == "temporarily_unavailable"
		}},
		{"login on the hosted page (POST /login)", func(t *testing.T) (*http.Response, []byte, bool) {
			jar, _ := cookiejar.New(nil)
			page := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: hc.CheckRedirect}
			req, _ := http.NewRequest(http.MethodGet, base+"/login", nil)
			resp, err := page.Do(req)
			if err != nil {
				t.Fatalf("GET /login: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /login: %d %.300s", resp.StatusCode, pageText(body))
			}
			resp, body = parseForm(t, resp.Request.URL, body, "/login").submit(t, page, url.Values{"email": {fs.email}, "password": {testPassword}})
			return resp, body, resp.StatusCode == http.StatusSeeOther
		}, func(resp *http.Response, body []byte) bool {
			return retryable(resp) && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") &&
				strings.Contains(pageText(body), "Temporarily unavailable")
		}},
	}
	var lines []string
	for _, w := range writes {
		var resp *http.Response
		var body []byte
		succeeded, ok := 0, true
		for range 300 {
			resp, body, ok = w.send(t)
			if !ok {
				break
			}
			succeeded++
			if !fill {
				break
			}
		}
		switch {
		case ok:
			t.Errorf("%s: %d attempts succeeded, want the database to refuse it", w.name, succeeded)
		case !w.refusedOK(resp, body):
			t.Errorf("%s: %d Retry-After %q %.300s; want a 503 with Retry-After in the spec's shape",
				w.name, resp.StatusCode, resp.Header.Get("Retry-After"), pageText(body))
		}
		loc, _ := resp.Location()
		what := fmt.Sprintf("%d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), shapeOf(body))
		switch {
		case loc != nil:
			what = fmt.Sprintf("%d to error=%s", resp.StatusCode, loc.Query().Get("error"))
		case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"):
			what = fmt.Sprintf("%d Retry-After=%q page %q", resp.StatusCode, resp.Header.Get("Retry-After"), strings.TrimSpace(pageText(body)))
		}
		if fill {
			what = fmt.Sprintf("%d succeeded, then %s", succeeded, what)
		}
		lines = append(lines, w.name+": "+what)
	}
	return lines
}

// openSQLite opens the case's own read-only connection to its SQLite file, for the checks
// the storage API has no query for.
func openSQLite(t *testing.T, path string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(sqlite.Open("file:"+path+"?mode=ro"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	return db
}

// TestFlowDriverNeverReplaysACallThatIsNotIdempotent: a replica that processes a call which
// is not idempotent and dies before answering must leave the flow with a lost answer, never
// a second send to the next replica. The call goes out on a connection an earlier call left
// idle, the replica handles it, stops listening and drops the connection: Go's transport
// replays a GET sent on a reused connection, the replay is refused, and a driver that took
// the refusal for "never reached a server" sent the call again elsewhere.
func TestFlowDriverNeverReplaysACallThatIsNotIdempotent(t *testing.T) {
	var dying, next atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/resume" {
			return // the idempotent call that leaves a connection idle
		}
		dying.Add(1)
		srv.Listener.Close() // the replica is gone: a new connection is refused
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // processed, never answered
		}
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { next.Add(1) }))
	defer other.Close()

	d := newFlowDriver(nil, func() []string { return []string{srv.URL, other.URL} })
	d.retry = true
	get := func(path string) func(string) *http.Request {
		return func(base string) *http.Request {
			req, _ := http.NewRequest(http.MethodGet, base+path, nil)
			return req
		}
	}
	if _, _, err := d.call("warm", true, 0, get("/warm")); err != nil {
		t.Fatalf("idempotent call: %v", err)
	}
	_, _, err := d.call("resume", false, 0, get("/resume"))
	if !errors.Is(err, errAnswerLost) {
		t.Errorf("the call the dying replica processed ended with %v; want errAnswerLost", err)
	}
	if n := dying.Load(); n != 1 {
		t.Errorf("the dying replica got the call %d times; want 1", n)
	}
	if n := next.Load(); n != 0 {
		t.Errorf("the call was sent again to the next replica (%d times); want never", n)
	}
}
