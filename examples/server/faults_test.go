package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/cutproxy"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
)

// The fault suite: every case runs real processes of the built server on a real Postgres
// (a fresh schema per case) or SQLite file, sends traffic on 127.0.0.1 only, ends by itself
// within the bound its doc comment states, and logs a summary table (case, injected,
// measured, lost). `make faults` runs every case at full length (GATEHOUSE_FAULTS_FULL=1);
// `make test` runs the shortened variants. The harness is faults_harness_test.go.

// TestFaultReplicas: two replicas, one Postgres, one Redis.
//
// Injects: nothing but the second replica: every flow crosses them (authorize on A, log in
// on B, resume on B, exchange on A, refresh on B, introspect and revoke on A, introspect
// on B); a signing-key rotation by the CLI; a login rate limit of 5/min per IP kept in
// Redis; an admin's permission revocation on A.
// Measures: flows run and failed under 16 concurrent flows (60s full, 5s fast); the
// replica on which the 6th login from one IP is refused; the seconds until both replicas
// serve the rotated key set; whether B sees A's permission revocation at once. The lockout
// is raised (1000/min): the 16 flows sign one user in, and each login in flight counts
// against the lockout until it succeeds; the limit on one client's waiting authorization
// requests is off, every flow using one client. The load cases below turn off the per-IP
// limits on logins and waiting authorization requests too: their flows come from one
// machine.
// Must lose: nothing: 100% of the flows succeed, the limit is shared, both serve one key
// set, the revoked grant is inactive on B. Bound: the load plus about 30s.
func TestFaultReplicas(t *testing.T) {
	dsn := faultPostgres(t)
	redisURL := faultRedis(t)
	fs := newFaultSetup(t, dsn)
	issuer := "http://" + freeAddr(t) // the load balancer's address: no replica's own
	flags := []string{"--redis-url", redisURL.String(), "--login-rate-limit", "5/1m", "--trusted-proxies", "127.0.0.1",
		"--key-reload-interval", "1s", "--lockout", "1000/1m", "--authorize-client-limit", "off"}
	a := newReplica(t, fs.gh.bin, "replica A", issuer, dsn, flags...)
	b := newReplica(t, fs.gh.bin, "replica B", issuer, dsn, flags...)
	bases := []string{a.base(), b.base()}
	d := newFlowDriver(fs, func() []string { return bases })
	ctx := context.Background()

	// One flow crossing the replicas, step by step.
	if _, err := d.flow(ctx, 0, flowOptions{refreshes: 1, introspect: true, revoke: true}); err != nil {
		t.Fatalf("a flow across the replicas: %v", err)
	}

	// The login limit is counted in Redis: 5 logins from one IP, alternating replicas, pass;
	// the 6th is refused by whichever replica gets it.
	ip := flowIP()
	var limitSeen []int
	for i := range 6 {
		limitSeen = append(limitSeen, loginStatus(t, bases[i%2], fs.email, ip))
	}
	if want := []int{200, 200, 200, 200, 200, 429}; !slices.Equal(limitSeen, want) {
		t.Errorf("six logins from one IP alternating replicas answered %v, want %v (a limit shared through Redis)", limitSeen, want)
	}

	// Key rotation by the CLI: both replicas serve the new key set after their reload.
	before := jwksKids(t, a.base())
	fs.gh.admin(t, "keys", "rotate")
	rotated := time.Now()
	var keysAfter time.Duration
	for range 150 {
		ka, kb := jwksKids(t, a.base()), jwksKids(t, b.base())
		if slices.Equal(ka, kb) && len(ka) > len(before) {
			keysAfter = time.Since(rotated)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if keysAfter == 0 {
		t.Errorf("15s after keys rotate: replica A serves kids %v, B %v; want one key set larger than %v", jwksKids(t, a.base()), jwksKids(t, b.base()), before)
	}

	// A permission revoked by an admin on A: B treats the user's grant as revoked at once.
	permOK := checkPermissionRevocation(t, d, a.base(), b.base())

	// Load: 16 concurrent flows, each crossing the replicas; every flow must succeed.
	load := faultLen(60*time.Second, 5*time.Second)
	lctx, cancel := context.WithTimeout(ctx, load)
	res := runLoad(lctx, 16, func(ctx context.Context, w, i int) error {
		_, err := d.flow(ctx, w+i, flowOptions{refreshes: 1, introspect: true, revoke: true})
		return err
	})
	cancel()
	if res.ok != res.flows || res.flows == 0 {
		t.Errorf("load: %d of %d flows succeeded, want all (and some); first errors: %v", res.ok, res.flows, res.errs)
	}
	a.stop(t)
	b.stop(t)
	faultSummary(t,
		faultRow{"second replica; flows crossing A and B", fmt.Sprintf("%d/%d flows succeeded in %s at 16 concurrent; answers: %s", res.ok, res.flows, load, d.counts), fmt.Sprintf("%d flows", res.flows-res.ok)},
		faultRow{"login limit 5/min per IP in Redis", fmt.Sprintf("statuses %v alternating A,B", limitSeen), "nothing (limit shared)"},
		faultRow{"gatehouse keys rotate", fmt.Sprintf("both serve the new key set after %.1fs", keysAfter.Seconds()), "nothing"},
		faultRow{"admin revokes permission on A", fmt.Sprintf("grant inactive on B at once: %v", permOK), "nothing"},
	)
}

// loginStatus posts one password login from ip to base and returns the status.
func loginStatus(t *testing.T, base, email, ip string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": email, "password": testPassword})
	req, _ := http.NewRequest(http.MethodPost, base+"/api/public/login", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// jwksKids is the sorted key ids of base's JWKS.
func jwksKids(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("JWKS of %s: %d %v", base, resp.StatusCode, err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	slices.Sort(kids)
	return kids
}

// checkPermissionRevocation has an admin revoke the user's permission for the client on
// replica a, and checks that replica b then calls the user's refresh token inactive.
func checkPermissionRevocation(t *testing.T, d *flowDriver, a, b string) bool {
	t.Helper()
	fs := d.fs
	adminEmail := "admin-" + fs.email
	fs.gh.admin(t, "user", "create", "--email", adminEmail, "--password", testPassword, "--role", "admin", "--verified")
	g, err := d.flow(context.Background(), 0, flowOptions{})
	if err != nil {
		t.Fatalf("a flow before the permission change: %v", err)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	body, _ := json.Marshal(map[string]string{"email": adminEmail, "password": testPassword})
	req, _ := http.NewRequest(http.MethodPost, a+"/api/admin/login", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", flowIP())
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin login on A: %d", resp.StatusCode)
	}
	path := "/api/admin/users/" + url.PathEscape(fs.userID) + "/apps/" + url.PathEscape(fs.rp.ClientID) + "/permissions"
	put := func(method, body string) {
		req, _ := http.NewRequest(method, a+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s %s on A: %d %s", method, path, resp.StatusCode, out)
		}
	}
	put(http.MethodPut, `{"status":"approved","role":"user"}`)
	put(http.MethodDelete, "")
	if err := d.introspect(context.Background(), 1, g.refresh, false); err != nil {
		t.Errorf("after the permission was revoked on A, on B: %v", err)
		return false
	}
	_ = b
	return true
}

// TestFaultSIGKILL: SIGKILL under load.
//
// Injects: SIGKILL of one replica (alternating A and B) every 10s for 60s (fast: every 3s
// for 10s), each restarted at once, while 8 concurrent clients sign in and refresh through
// client-side failover: a call refused by a dead replica goes to the other; an idempotent
// call whose answer was lost is sent again; a refresh whose answer was lost is retried once
// with the same token, which the replicas' --refresh-reuse-grace 30s lets through; a code
// exchange whose answer was lost ends its flow and the client signs in again.
// Measures: kills, flows, lost answers and retries; then, in the database: rows missing
// their required columns, refresh-token families with two live tokens, and codes spent for
// offline_access without their refresh token; and a final refresh of every client's grant.
// Must lose: nothing: no half-written row, no family with two live tokens, no code spent
// without its tokens, every client's grant refreshes. Bound: the run plus about 30s.
func TestFaultSIGKILL(t *testing.T) {
	dsn := faultPostgres(t)
	fs := newFaultSetup(t, dsn)
	issuer := "http://" + freeAddr(t)
	flags := []string{"--refresh-reuse-grace", "30s", "--login-rate-limit", "off", "--lockout", "off",
		"--authorize-ip-limit", "off", "--authorize-client-limit", "off"}
	reps := []*replica{
		newReplica(t, fs.gh.bin, "replica A", issuer, dsn, flags...),
		newReplica(t, fs.gh.bin, "replica B", issuer, dsn, flags...),
	}
	bases := []string{reps[0].base(), reps[1].base()}
	d := newFlowDriver(fs, func() []string { return bases })
	d.retry = true

	const workers = 8
	grants := make([]*grant, workers)
	var restarted atomicCounter
	run := faultLen(60*time.Second, 10*time.Second)
	every := faultLen(10*time.Second, 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	done := make(chan *loadResult, 1)
	go func() {
		done <- runLoad(ctx, workers, func(ctx context.Context, w, i int) error {
			if grants[w] == nil || i%4 == 0 {
				g, err := d.flow(ctx, w+i, flowOptions{})
				if err != nil {
					if isLost(err) {
						restarted.add() // the exchange's answer was lost: sign in again
						return nil
					}
					return err
				}
				grants[w] = &g
				return nil
			}
			if err := d.refresh(ctx, w+i, grants[w]); err != nil {
				return fmt.Errorf("worker %d lost its grant: %w", w, err)
			}
			return d.introspect(ctx, w+i+1, grants[w].refresh, true)
		})
	}()
	kills := 0
	for next := time.Now().Add(every); ; next = next.Add(every) {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
			r := reps[kills%2]
			r.kill(t)
			kills++
			r.start(t)
			continue
		}
		break
	}
	res := <-done
	if res.ok != res.flows {
		t.Errorf("load: %d of %d iterations failed: %v", res.flows-res.ok, res.flows, res.errs)
	}

	// Every client finishes its flow: its grant refreshes.
	d.retry = false
	lostGrants := 0
	for w, g := range grants {
		if g == nil {
			continue
		}
		if err := d.refresh(context.Background(), w, g); err != nil {
			lostGrants++
			t.Errorf("worker %d: its grant does not refresh after the run: %v", w, err)
		}
	}

	db := openSQL(t, dsn)
	halfWritten := count(t, db, `SELECT count(*) FROM refresh_tokens WHERE request_id = '' OR client_id = '' OR session_data = '' OR access_signature = ''`) +
		count(t, db, `SELECT count(*) FROM authorization_codes WHERE request_id = '' OR client_id = '' OR session_data = ''`)
	twoLive := count(t, db, `SELECT count(*) FROM (SELECT request_id FROM refresh_tokens WHERE active GROUP BY request_id HAVING count(*) > 1) f`)
	spentWithout := count(t, db, `SELECT count(*) FROM authorization_codes c WHERE NOT c.active AND c.granted_scopes LIKE '%"offline_access"%'
		AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.request_id = c.request_id)`)
	families := count(t, db, `SELECT count(DISTINCT request_id) FROM refresh_tokens`)
	spent := count(t, db, `SELECT count(*) FROM authorization_codes WHERE NOT active`)
	if halfWritten != 0 || twoLive != 0 || spentWithout != 0 {
		t.Errorf("after the kills: %d half-written rows, %d families with two live refresh tokens, %d codes spent without tokens; want none",
			halfWritten, twoLive, spentWithout)
	}
	if spent == 0 || families == 0 {
		t.Errorf("the run spent %d codes and wrote %d refresh-token families, want some", spent, families)
	}
	for _, r := range reps {
		r.stop(t)
	}
	faultSummary(t, faultRow{
		fmt.Sprintf("SIGKILL of a replica every %s for %s (%d kills)", every, run, kills),
		fmt.Sprintf("%d/%d iterations ok; %d retried calls, %d lost refresh answers retried in grace, %d sign-ins restarted after a lost exchange; db: %d spent codes, %d families, %d half-written, %d with two live tokens, %d codes without tokens; final refresh failed for %d grants",
			res.ok, res.flows, d.retries.Load(), d.lostRefs.Load(), restarted.load(), spent, families, halfWritten, twoLive, spentWithout, lostGrants),
		fmt.Sprintf("%d grants, %d rows", lostGrants, halfWritten+twoLive+spentWithout),
	})
}

// isLost reports whether err is a request whose answer never came.
func isLost(err error) bool { return errors.Is(err, errAnswerLost) }

// atomicCounter counts concurrently.
type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) add()        { c.n.Add(1) }
func (c *atomicCounter) load() int64 { return c.n.Load() }

// TestFaultPostgresOutage: Postgres unreachable for 10s under load.
//
// Injects: a cut of every connection between the server process and Postgres (a TCP proxy
// the test owns refuses and closes them) for 10s (fast: 3s), while 8 concurrent flows run.
// Measures: every answer's status before, during and after the outage; 503s without
// Retry-After; the time from the return of Postgres to the first complete flow; the
// server's goroutines (pprof through --debug-addr) before and after.
// Must lose: nothing: during the outage only 503 with Retry-After (or answers that need no
// database: 2xx, 3xx), no crash, no goroutine pile-up (at most 25 more after than before),
// every flow succeeds again within 5s of the return, every held grant refreshes after it.
// The server runs with --refresh-reuse-grace 30s: a refresh whose COMMIT reached Postgres
// as the connection was cut is answered 503 (the server cannot know it committed), and
// without the grace the client's retry of its old token revokes its grant (seen without
// the flag: 2 of 8 grants lost in a 3s outage). Bound: about 40s (fast: 20s).
func TestFaultPostgresOutage(t *testing.T) {
	dsn := faultPostgres(t)
	fs := newFaultSetup(t, dsn)
	u, _ := url.Parse(dsn)
	proxy := cutproxy.Start(t, u.Host)
	r := newReplica(t, fs.gh.bin, "server", "http://"+freeAddr(t), viaProxy(t, dsn, proxy),
		"--login-rate-limit", "off", "--lockout", "off", "--refresh-reuse-grace", "30s",
		"--authorize-ip-limit", "off", "--authorize-client-limit", "off")
	d := newFlowDriver(fs, func() []string { return []string{r.base()} })
	ctx := context.Background()
	held := make([]*grant, 8) // one grant per worker, refreshed through every phase
	phase := func(name string, length time.Duration) (*statusCounts, *loadResult) {
		d.counts = &statusCounts{}
		lctx, cancel := context.WithTimeout(ctx, length)
		defer cancel()
		res := runLoad(lctx, 8, func(ctx context.Context, w, i int) error {
			_, err := d.flow(ctx, 0, flowOptions{refreshes: 1, introspect: true, revoke: true})
			// Besides new sign-ins, each worker refreshes and introspects a grant it holds.
			g := *held[w]
			rerr := d.refresh(ctx, 1, &g)
			if rerr == nil {
				held[w] = &g
				rerr = d.introspect(ctx, 0, g.refresh, true)
			}
			err = errors.Join(err, rerr)
			if err != nil {
				time.Sleep(50 * time.Millisecond) // a failing flow is quick: keep the load modest
			}
			return err
		})
		return d.counts, res
	}
	for w := range held {
		g, err := d.flow(ctx, w, flowOptions{})
		if err != nil {
			t.Fatalf("a flow before the outage: %v", err)
		}
		held[w] = &g
	}
	side := faultLen(5*time.Second, 2*time.Second)
	beforeCounts, before := phase("before", side)
	if before.ok != before.flows {
		t.Fatalf("before the outage: %d of %d flows failed: %v", before.flows-before.ok, before.flows, before.errs)
	}
	time.Sleep(time.Second) // let the load's requests and idle connections settle
	g0 := r.goroutines(t)

	proxy.SetDown(true)
	outage := faultLen(10*time.Second, 3*time.Second)
	downCounts, down := phase("down", outage)
	proxy.SetDown(false)
	back := time.Now()
	var recovered time.Duration
	for range 100 {
		if _, err := d.flow(ctx, 0, flowOptions{refreshes: 1}); err == nil {
			recovered = time.Since(back)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if recovered == 0 || recovered > 5*time.Second {
		t.Errorf("after Postgres came back: first complete flow after %v, want within 5s", recovered)
	}
	afterCounts, after := phase("after", side)
	if after.ok != after.flows {
		t.Errorf("after the outage: %d of %d flows failed: %v", after.flows-after.ok, after.flows, after.errs)
	}
	time.Sleep(time.Second)
	g1 := r.goroutines(t)
	if g1 > g0+25 {
		t.Errorf("goroutines: %d before the outage, %d after; want at most 25 more", g0, g1)
	}
	var bad []string
	for status, n := range downCounts.statuses() {
		if status == 0 || (status >= 400 && status != http.StatusServiceUnavailable) {
			bad = append(bad, fmt.Sprintf("%d×%d", n, status))
		}
	}
	// Redirects: to the login page, or to the client with the authorization endpoint's 503.
	for _, part := range strings.Split(downCounts.String(), ", ") {
		if strings.Contains(part, " 303=") && strings.Contains(part, "-error=") && !strings.Contains(part, "-error=temporarily_unavailable") {
			bad = append(bad, part)
		}
	}
	if strings.Contains(downCounts.String(), "without-Retry-After") {
		bad = append(bad, "503 without Retry-After")
	}
	if len(bad) > 0 || !strings.Contains(downCounts.String(), "temporarily_unavailable") && downCounts.statuses()[http.StatusServiceUnavailable] == 0 {
		t.Errorf("during the outage: %v beside 503s, want only 503 with Retry-After (and answers needing no database); all: %s", bad, downCounts)
	}
	r.stop(t)
	faultSummary(t, faultRow{
		fmt.Sprintf("Postgres cut for %s under 8 concurrent flows", outage),
		fmt.Sprintf("before: %d/%d flows ok (%s); during: %s; first complete flow %.2fs after the return; after: %d/%d flows ok (%s); goroutines %d before, %d after",
			before.ok, before.flows, beforeCounts, downCounts, recovered.Seconds(), after.ok, after.flows, afterCounts, g0, g1),
		fmt.Sprintf("%d flows after the return; %d non-503 errors during", after.flows-after.ok, len(bad)),
	})
	_ = down
}

// TestFaultRedisOutage: Redis unreachable under load.
//
// Injects: a cut of every connection between the server process and Redis, which keeps
// its rate limits (--redis-url, login limit 5/min per IP, --redis-cool-down 1s), for 10s
// (fast: 3s) while 4 concurrent flows sign in.
// Measures: flows before, during and after; the statuses of 8 logins from one IP during
// the cut, and the seconds each took (reported, not asserted: speed lives in make bench),
// and of logins from one IP before and after it; the lines the server logged.
// Must lose: nothing: as publicauth/limits.go documents, the limits fail open so an outage
// of Redis locks nobody out: every flow succeeds, the 8 logins pass, the limit refuses the
// 6th login again once Redis is back, and the process stays up. The limiter's circuit
// breaker logs its opening (ERROR) and its closing once Redis is back, as many times each,
// instead of a line per request; between, requests fail open without waiting for Redis.
// Bound: the outage plus about 25s.
func TestFaultRedisOutage(t *testing.T) {
	dsn := faultPostgres(t)
	redisURL := faultRedis(t)
	fs := newFaultSetup(t, dsn)
	proxy := cutproxy.Start(t, redisURL.Host)
	viaRedis := *redisURL
	viaRedis.Host = proxy.Addr()
	r := newReplica(t, fs.gh.bin, "server", "http://"+freeAddr(t), dsn, "--redis-url", viaRedis.String(),
		"--login-rate-limit", "5/1m", "--trusted-proxies", "127.0.0.1", "--lockout", "1000/1m", "--redis-cool-down", "1s",
		"--authorize-client-limit", "off")
	d := newFlowDriver(fs, func() []string { return []string{r.base()} })
	phase := func(length time.Duration) *loadResult {
		ctx, cancel := context.WithTimeout(context.Background(), length)
		defer cancel()
		return runLoad(ctx, 4, func(ctx context.Context, w, i int) error {
			_, err := d.flow(ctx, 0, flowOptions{refreshes: 1})
			return err
		})
	}
	logins := func(n int) []int {
		ip := flowIP()
		var got []int
		for range n {
			got = append(got, loginStatus(t, r.base(), fs.email, ip))
		}
		return got
	}
	side := faultLen(5*time.Second, 2*time.Second)
	before := phase(side)
	start := time.Now()
	limitBefore := logins(6)
	perLoginBefore := time.Since(start) / 6

	proxy.SetDown(true)
	outage := faultLen(10*time.Second, 3*time.Second)
	during := phase(outage)
	start = time.Now()
	limitDuring := logins(8)
	perLogin := time.Since(start) / 8
	proxy.SetDown(false)

	after := phase(side)
	limitAfter := logins(10)
	for name, res := range map[string]*loadResult{"before": before, "during": during, "after": after} {
		if res.ok != res.flows || res.flows == 0 {
			t.Errorf("%s the Redis outage: %d of %d flows succeeded, want all: %v", name, res.ok, res.flows, res.errs)
		}
	}
	if want := []int{200, 200, 200, 200, 200, 429}; !slices.Equal(limitBefore, want) {
		t.Errorf("six logins from one IP before the outage: %v, want %v", limitBefore, want)
	}
	if slices.ContainsFunc(limitDuring, func(s int) bool { return s != http.StatusOK }) {
		t.Errorf("eight logins from one IP during the outage: %v, want all 200 (the limit fails open)", limitDuring)
	}
	if !slices.Contains(limitAfter, http.StatusTooManyRequests) {
		t.Errorf("ten logins from one IP after the outage: %v, want the limit to refuse some again", limitAfter)
	}
	r.alive(t)
	logs := r.proc.stderr.String()
	logged := strings.Count(logs, "rate limiter failed")
	if logged == 0 {
		t.Errorf("the server logged no \"rate limiter failed\" during the outage; want the failure logged:\n%.3000s", logs)
	}
	opened, closed := strings.Count(logs, "circuit breaker open"), strings.Count(logs, "circuit breaker closed")
	if opened == 0 || closed != opened {
		t.Errorf("the breaker logged %d openings and %d closings; want at least one, each closed once Redis is back:\n%.3000s", opened, closed, logs)
	}
	metrics := metricsText(t, r.base())
	if !strings.Contains(metrics, "\ngatehouse_rate_limit_breaker_open 0\n") ||
		!strings.Contains(metrics, fmt.Sprintf("\ngatehouse_rate_limit_breaker_opened_total %d\n", opened)) {
		t.Errorf("/metrics after the outage: want the breaker closed and opened %d times:\n%s", opened, metrics)
	}
	r.stop(t)
	faultSummary(t, faultRow{
		fmt.Sprintf("Redis cut for %s under 4 concurrent flows (limit 5/min per IP)", outage),
		fmt.Sprintf("flows ok before %d/%d, during %d/%d, after %d/%d; logins from one IP: before %v (%.3fs each), during %v (%.3fs each), after %v; %d limiter failures logged at ERROR; breaker opened %d, closed %d times",
			before.ok, before.flows, during.ok, during.flows, after.ok, after.flows, limitBefore, perLoginBefore.Seconds(), limitDuring, perLogin.Seconds(), limitAfter, logged, opened, closed),
		fmt.Sprintf("%d flows (limits failed open, as documented)", before.flows-before.ok+during.flows-during.ok+after.flows-after.ok),
	})
}

// TestFaultReadOnlySQLite: the SQLite database becomes read-only.
//
// Injects: a restart of the server on its SQLite file opened read-only
// ("sqlite:file:PATH?mode=ro", with --skip-migrate and the janitor and key rotation off).
// chmod cannot make the file read-only for this suite: tests may run as root, whom file
// modes do not stop, and making a file immutable or mounting a read-only file system needs
// privileges a test does not have. SQLite's read-only open refuses every write to every
// user, root included, with the error a read-only file gives (SQLITE_READONLY).
// Measures: the statuses and bodies of reads (discovery, JWKS, introspection of a token
// issued before) and of writes (password login, admin login, refresh, a new authorization,
// a login on the hosted page).
// Must lose: nothing: every write gets a retryable 503 with Retry-After in its surface's
// shape (see refusedWrites); the log names the read-only database; the process stays up;
// reads keep working before and after the writes. Bound: about 20s.
func TestFaultReadOnlySQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gh.db")
	fs, adminEmail, issuer, g := writableThenStopped(t, "sqlite:"+path)

	ro := newReplica(t, fs.gh.bin, "read-only server", issuer, "sqlite:file:"+path+"?mode=ro", readOnlyFlags...)
	if failed := faultReads(ro, fs, g); len(failed) > 0 {
		t.Errorf("reads on the read-only database: %v", failed)
	}
	writes := refusedWrites(t, ro.base(), fs, &g, adminEmail, false)
	loggedCause := strings.Contains(ro.proc.stderr.String(), "read-only")
	if !loggedCause {
		t.Errorf("the server's log does not name the read-only database:\n%.3000s", ro.proc.stderr)
	}
	if failed := faultReads(ro, fs, g); len(failed) > 0 {
		t.Errorf("reads after the refused writes: %v", failed)
	}
	ro.stop(t)
	faultSummary(t, faultRow{
		"SQLite opened read-only (mode=ro) under a restarted server",
		fmt.Sprintf("reads (discovery, JWKS, introspection of refresh and access token) 200 before and after; writes: %s; log names \"read-only\": %v; process exited 0 on SIGTERM", strings.Join(writes, "; "), loggedCause),
		"nothing (writes refused with a retryable 503; the token from before still introspects active)",
	})
}

// readOnlyFlags start a replica on a database that takes no writes: no migration, no
// janitor, no key rotation, no login limits (so every write reaches the database).
var readOnlyFlags = []string{"--skip-migrate", "--janitor-interval", "-1s", "--key-rotation-interval", "-1s", "--login-rate-limit", "off"}

// faultReads checks the reads a database that refuses writes must keep serving: discovery,
// JWKS, and introspection of g's refresh and access tokens (active). It returns the failures.
func faultReads(r *replica, fs *faultSetup, g grant) []string {
	d := newFlowDriver(fs, func() []string { return []string{r.base()} })
	var failed []string
	for _, p := range []string{"/.well-known/openid-configuration", "/.well-known/jwks.json"} {
		resp, body, err := d.call("read", true, 0, func(base string) *http.Request {
			req, _ := http.NewRequest(http.MethodGet, base+p, nil)
			return req
		})
		if err != nil || resp.StatusCode != http.StatusOK {
			failed = append(failed, fmt.Sprintf("GET %s: %v %v %.200s", p, statusOf(resp), err, body))
		}
	}
	for _, tok := range []string{g.refresh, g.access} {
		if err := d.introspect(context.Background(), 0, tok, true); err != nil {
			failed = append(failed, err.Error())
		}
	}
	return failed
}

// TestFaultDiskFull: the SQLite database's disk fills up.
//
// Injects: a restart of the server on its SQLite file with max_page_count(1)
// ("sqlite:PATH?_pragma=max_page_count(1)"; a database cannot shrink below its size, so
// the file may not grow by a page): SQLite then answers every write that needs a new page
// with SQLITE_FULL, "database or disk is full", as on a full disk, without the privileges a
// real full file system would need. Each kind of write is repeated until the database
// refuses it (at most 300 times), then once more. Then a restart without the limit.
// Measures: how many of each write succeeded before the refusal, and the refusal's answer;
// reads while full; the sessions rows around a refused login (read from the file); a login
// and a refresh of the token held at the refusal after the restart.
// Must lose: nothing: every refused write is a retryable 503 with Retry-After in its
// surface's shape and leaves no row (a refused login no session); the log names the full
// disk; reads keep working; after the restart with room, logins work and the refresh token
// held when its refresh was refused still refreshes. Bound: about 40s.
func TestFaultDiskFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gh.db")
	fs, adminEmail, issuer, g := writableThenStopped(t, "sqlite:"+path)

	full := newReplica(t, fs.gh.bin, "server on a full disk", issuer, "sqlite:"+path+"?_pragma=max_page_count(1)", readOnlyFlags...)
	writes := refusedWrites(t, full.base(), fs, &g, adminEmail, true)
	db := openSQLite(t, path)
	sessions := count(t, db, "SELECT count(*) FROM sessions")
	again := refusedWrites(t, full.base(), fs, &g, adminEmail, false)
	if after := count(t, db, "SELECT count(*) FROM sessions"); after != sessions {
		t.Errorf("refused logins: sessions %d before, %d after; want no row from a refused login", sessions, after)
	}
	if failed := faultReads(full, fs, g); len(failed) > 0 {
		t.Errorf("reads on the full database: %v", failed)
	}
	loggedCause := strings.Contains(full.proc.stderr.String(), "disk full")
	if !loggedCause {
		t.Errorf("the server's log does not name the full disk:\n%.3000s", full.proc.stderr)
	}
	full.stop(t)

	refreshErr, flowErr := writableAgain(t, fs, issuer, "sqlite:"+path, &g, "after the restart with room")
	faultSummary(t, faultRow{
		"SQLite full (max_page_count(1)) under a restarted server, then a restart with room",
		fmt.Sprintf("filling: %s; once full: %s; sessions rows unchanged by refused logins (%d); reads 200; log names \"disk full\": %v; after the restart: held refresh token %v, new flow %v",
			strings.Join(writes, "; "), strings.Join(again, "; "), sessions, loggedCause, errOK(refreshErr), errOK(flowErr)),
		"nothing (refused writes left no row; the refresh token held at the refusal refreshes afterwards)",
	})
}

// TestFaultPostgresReadOnly: Postgres refuses writes, as a standby or a database set
// read-only does.
//
// Injects: a restart of the server with "options=-c default_transaction_read_only=on" in
// its DSN, so every transaction of its sessions is read-only and every write fails with
// 25006 read_only_sql_transaction, what a hot standby answers (promoting or failing over to
// a standby by mistake) or ALTER DATABASE … SET default_transaction_read_only does.
// Measures: the reads of faultReads and the writes of refusedWrites; the server's log.
// Must lose: nothing: every write is a retryable 503 with Retry-After in its surface's shape;
// the log names the read-only database; reads keep working; a restart without the option
// serves a full flow and refreshes the grant from before. Bound: about 30s.
func TestFaultPostgresReadOnly(t *testing.T) {
	dsn := faultPostgres(t)
	fs, adminEmail, issuer, g := writableThenStopped(t, dsn)

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("options", "-c default_transaction_read_only=on")
	u.RawQuery = q.Encode()
	ro := newReplica(t, fs.gh.bin, "read-only server", issuer, u.String(), readOnlyFlags...)
	if failed := faultReads(ro, fs, g); len(failed) > 0 {
		t.Errorf("reads on the read-only database: %v", failed)
	}
	writes := refusedWrites(t, ro.base(), fs, &g, adminEmail, false)
	loggedCause := strings.Contains(ro.proc.stderr.String(), "read-only")
	if !loggedCause {
		t.Errorf("the server's log does not name the read-only database:\n%.3000s", ro.proc.stderr)
	}
	if failed := faultReads(ro, fs, g); len(failed) > 0 {
		t.Errorf("reads after the refused writes: %v", failed)
	}
	ro.stop(t)

	refreshErr, flowErr := writableAgain(t, fs, issuer, dsn, &g, "once writes are allowed again")
	faultSummary(t, faultRow{
		"Postgres sessions read-only (default_transaction_read_only=on) under a restarted server",
		fmt.Sprintf("reads 200 before and after; writes: %s; log names \"read-only\": %v; after a restart without it: refresh of the grant from before %v, new flow %v",
			strings.Join(writes, "; "), loggedCause, errOK(refreshErr), errOK(flowErr)),
		"nothing (writes refused with a retryable 503; the grant from before refreshes afterwards)",
	})
}

// errOK is "ok" for a nil error, else the error.
func errOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// metricsText is base's /metrics.
func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(body)
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// shapeOf is the "error" of a JSON error body, for the summary.
func shapeOf(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return fmt.Sprintf("error=%q", e.Error)
}

// envSoak is the length of TestFaultSoak ("30m" under make soak); unset, it is skipped.
const envSoak = "GATEHOUSE_SOAK_DURATION"

// TestFaultSoak: mixed load for a long time (make soak: 30 minutes; not in CI).
//
// Injects: GATEHOUSE_SOAK_DURATION of mixed load from 4 concurrent clients (sign-in flows
// crossing two replicas with refreshes, introspection and revocation), with lifetimes
// shortened to a tenth of the run (10s to 5m), the audit trail's retention too
// (--security-event-retention: every flow appends security events, kept a year by
// default, which no soak shorter than that would see level off), and the janitor at half
// that, so rows expire and are deleted many times over.
// Measures: every 30s (a sixth of the run when shorter) each replica's live heap (after a GC; the least of three readings) and
// goroutines, the database connections open through a proxy the test owns, the rows of
// every table, and the rows the janitor left more than two sweeps past their expiry.
// Must lose: nothing: every flow succeeds; after a warm-up of three lifetimes (at least a
// quarter of the run), the peaks stay within bounds of the warm-up's: heap at most 1.5×
// + 16 MiB, goroutines + 25, connections + 5, rows 1.5× + 500; and no row overdue for the
// janitor at the end. The rows of revocation_rules are left out of the growth bound: a rule
// must outlive the access tokens it revokes and the store keeps each for at least one hour
// (storage.DefaultAccessTokenLifespan) whatever --access-token-ttl says, so that table
// grows through the first hour of any soak and is flat only after it; the overdue check
// covers it (the janitor deletes each rule at its expiry). Bound: the duration plus 30s.
func TestFaultSoak(t *testing.T) {
	raw := os.Getenv(envSoak)
	if raw == "" {
		t.Skip("a soak test: set " + envSoak + " (make soak)")
	}
	run, err := time.ParseDuration(raw)
	if err != nil || run < time.Minute {
		t.Fatalf("%s=%q: want a duration of at least 1m", envSoak, raw)
	}
	ttl := min(max(run/10, 10*time.Second), 5*time.Minute)
	janitor := ttl / 2
	every := min(30*time.Second, run/6)
	warmup := max(3*ttl, run/4)

	dsn := faultPostgres(t)
	fs := newFaultSetup(t, dsn)
	u, _ := url.Parse(dsn)
	proxy := cutproxy.Start(t, u.Host)
	issuer := "http://" + freeAddr(t)
	flags := []string{"--login-rate-limit", "off", "--lockout", "off", "--janitor-interval", janitor.String(),
		"--authorize-ip-limit", "off", "--authorize-client-limit", "off",
		"--auth-code-ttl", ttl.String(), "--access-token-ttl", ttl.String(), "--id-token-ttl", ttl.String(),
		"--refresh-token-ttl", ttl.String(), "--public-session-ttl", ttl.String(), "--login-request-ttl", ttl.String(),
		"--security-event-retention", ttl.String()}
	reps := []*replica{
		newReplica(t, fs.gh.bin, "replica A", issuer, viaProxy(t, dsn, proxy), flags...),
		newReplica(t, fs.gh.bin, "replica B", issuer, viaProxy(t, dsn, proxy), flags...),
	}
	bases := []string{reps[0].base(), reps[1].base()}
	d := newFlowDriver(fs, func() []string { return bases })
	db := openSQL(t, dsn)
	var tables []string
	if err := db.Raw(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`).Scan(&tables).Error; err != nil || len(tables) == 0 {
		t.Fatalf("list tables: %v (%d)", err, len(tables))
	}
	var expiring []string
	if err := db.Raw(`SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'expires_at' ORDER BY table_name`).Scan(&expiring).Error; err != nil {
		t.Fatal(err)
	}

	type sample struct {
		at                time.Duration
		heap              int64
		goroutines, conns int
		rows, overdue     int64
		rules             int64 // revocation_rules, apart from rows: see the doc comment
	}
	take := func(at time.Duration) sample {
		s := sample{at: at, conns: proxy.Open()}
		for _, r := range reps {
			// The least of three readings 300ms apart: a password hash in flight holds
			// 7 MiB for a moment, which is load, not growth.
			h := r.heapInuse(t)
			for range 2 {
				time.Sleep(300 * time.Millisecond)
				h = min(h, r.heapInuse(t))
			}
			s.heap += h
			s.goroutines += r.goroutines(t)
		}
		for _, tb := range tables {
			n := count(t, db, `SELECT count(*) FROM "`+tb+`"`)
			if tb == "revocation_rules" {
				s.rules = n
				continue
			}
			s.rows += n
		}
		cutoff := time.Now().UTC().Add(-2 * janitor)
		for _, tb := range expiring {
			var n int64
			if err := db.Raw(`SELECT count(*) FROM "`+tb+`" WHERE expires_at < ?`, cutoff).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			s.overdue += n
		}
		// Security events have no expiry of their own: the retention is theirs.
		var n int64
		if err := db.Raw(`SELECT count(*) FROM security_events WHERE at < ?`, cutoff.Add(-ttl)).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		s.overdue += n
		return s
	}

	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	done := make(chan *loadResult, 1)
	go func() {
		done <- runLoad(ctx, 4, func(ctx context.Context, w, i int) error {
			_, err := d.flow(ctx, w+i, flowOptions{refreshes: 2, introspect: true, revoke: i%2 == 0})
			return err
		})
	}()
	start := time.Now()
	var samples []sample
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(every):
			s := take(time.Since(start))
			samples = append(samples, s)
			t.Logf("soak %5.0fs: heap %6.1f MiB, goroutines %4d, db connections %3d, rows %6d, revocation rules %6d, overdue %d",
				s.at.Seconds(), float64(s.heap)/(1<<20), s.goroutines, s.conns, s.rows, s.rules, s.overdue)
		}
	}
	res := <-done
	if res.ok != res.flows || res.flows == 0 {
		t.Errorf("soak: %d of %d flows succeeded, want all: %v", res.ok, res.flows, res.errs)
	}
	var warm, late sample
	for _, s := range samples {
		m := &late
		if s.at < warmup+every/2 { // the sample due at the warm-up's end is still warm-up
			m = &warm
		}
		m.heap, m.goroutines, m.conns, m.rows = max(m.heap, s.heap), max(m.goroutines, s.goroutines), max(m.conns, s.conns), max(m.rows, s.rows)
	}
	final := take(time.Since(start))
	if late.rows == 0 && late.heap == 0 {
		t.Fatalf("no sample after the warm-up of %s: run longer", warmup)
	}
	if late.heap > warm.heap*3/2+16<<20 || late.goroutines > warm.goroutines+25 || late.conns > warm.conns+5 || late.rows > warm.rows*3/2+500 {
		t.Errorf("soak grew: warm-up peaks heap %d, goroutines %d, connections %d, rows %d; later peaks %d, %d, %d, %d",
			warm.heap, warm.goroutines, warm.conns, warm.rows, late.heap, late.goroutines, late.conns, late.rows)
	}
	if final.overdue > 0 {
		t.Errorf("soak: %d rows more than two janitor sweeps past their expiry; want none", final.overdue)
	}
	for _, r := range reps {
		r.stop(t)
	}
	faultSummary(t, faultRow{
		fmt.Sprintf("%s of mixed load, 4 concurrent flows, lifetimes %s, janitor every %s", run, ttl, janitor),
		fmt.Sprintf("%d/%d flows ok; %d samples; peaks warm-up (first %s) vs later: heap %.1f/%.1f MiB, goroutines %d/%d, db connections %d/%d, rows %d/%d; revocation rules at the end %d (they live at least 1h); rows overdue at the end %d",
			res.ok, res.flows, len(samples), (warmup + every/2).Round(time.Second), float64(warm.heap)/(1<<20), float64(late.heap)/(1<<20), warm.goroutines, late.goroutines, warm.conns, late.conns, warm.rows, late.rows, final.rules, final.overdue),
		fmt.Sprintf("%d flows", res.flows-res.ok),
	})
}

// TestFaultSMTPOutage: the mail server unreachable, and the server SIGKILLed meanwhile.
//
// Injects: a cut of every connection between the server process and its SMTP server (a
// real one, publicauth/smtptest, behind a TCP proxy) for 20s (fast: 8s) while requests
// that send mail keep coming (magic link, password reset, verification resend, PIN login;
// each to an account of its own); halfway through, SIGKILL of the server and a restart,
// still without mail; then the mail server is back.
// Measures: the status, Retry-After and body of every answer, compared with the answers
// while the mail server was up; the mails queued in the outbox before the kill; how long
// after the mail server's return every mail arrived; duplicates (the same message twice).
// Must lose: nothing: every answer during the outage is the one given with the mail
// server up (no 503, nothing that tells the mail server is down), and every mail requested
// arrives after its return, across the SIGKILL. A duplicate is allowed only for a crash
// between the mail server's 250 and the outbox's delete (at least once); none is expected.
// Bound: the outage plus the first retry after it (at most 5s × 2^attempts, capped at 5
// minutes; about 40s here), the wait bounded at 3 minutes (a mail in flight at the kill
// waits for its 90s lease).
func TestFaultSMTPOutage(t *testing.T) {
	dsn := faultPostgres(t)
	fs := newFaultSetup(t, dsn)
	db := openSQL(t, dsn)
	mail := smtptest.Start(t)
	proxy := cutproxy.Start(t, mail.Addr())
	// One account per kind of mail, so counting a recipient's mails counts one kind.
	kinds := []struct{ kind, email, path string }{
		{"magic link", fs.email, "/api/public/request-magic-link"},
		{"password reset", "reset-" + fs.email, "/api/public/request-password-reset"},
		{"verification", "verify-" + fs.email, "/api/public/resend-verification"},
		{"PIN", "pin-" + fs.email, "/api/public/login"},
	}
	fs.gh.admin(t, "user", "create", "--email", kinds[1].email, "--password", testPassword, "--verified")
	fs.gh.admin(t, "user", "create", "--email", kinds[2].email, "--password", testPassword)
	fs.gh.admin(t, "user", "create", "--email", kinds[3].email, "--password", testPassword, "--verified", "--require-pin")
	r := newReplica(t, fs.gh.bin, "server", "http://"+freeAddr(t), dsn,
		"--smtp-url", "smtp://"+proxy.Addr(), "--mail-from", "Gatehouse <noreply@example.com>",
		"--trusted-proxies", "127.0.0.1", "--account-mail-limit", "10000/1m", "--login-rate-limit", "10000/1m")

	challenge := regexp.MustCompile(`"challengeId":"[^"]+"`)
	hc := &http.Client{Timeout: 20 * time.Second}
	// send makes one request of kind k and returns its answer, the random PIN challenge id
	// blanked: "status Retry-After body".
	send := func(k int) string {
		body := map[string]string{"email": kinds[k].email}
		switch kinds[k].path {
		case "/api/public/request-magic-link":
			body["redirect_uri"] = fs.redirect
		case "/api/public/login":
			body["password"] = testPassword
		}
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, r.base()+kinds[k].path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", flowIP())
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s request: %v", kinds[k].kind, err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"),
			challenge.ReplaceAll(bytes.TrimSpace(got), []byte(`"challengeId":"…"`)))
	}
	requested := make([]int, len(kinds))
	// round sends every kind once and checks each answer against want (when set).
	var mismatches []string
	round := func(want []string) []string {
		answers := make([]string, len(kinds))
		for k := range kinds {
			answers[k] = send(k)
			requested[k]++
			if want != nil && answers[k] != want[k] {
				mismatches = append(mismatches, fmt.Sprintf("%s: %s, with the mail server up %s", kinds[k].kind, answers[k], want[k]))
			}
		}
		return answers
	}
	// arrived waits (bounded) until every kind's mails requested so far have arrived and
	// the outbox is empty (a row is deleted just after its mail server's 250).
	arrived := func(limit time.Duration) bool {
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			all := count(t, db, "SELECT COUNT(*) FROM mail_outbox") == 0
			for k := range kinds {
				all = all && mail.Count(kinds[k].email) >= requested[k]
			}
			if all {
				return true
			}
			time.Sleep(200 * time.Millisecond)
		}
		return false
	}

	up := round(nil)
	for _, a := range up {
		if !strings.HasPrefix(a, "200 ") {
			t.Fatalf("answers with the mail server up: %q, want 200s", up)
		}
	}
	if !arrived(30 * time.Second) {
		t.Fatalf("with the mail server up, not every mail arrived within 30s: %d messages", len(mail.Messages()))
	}

	proxy.SetDown(true)
	outage := faultLen(20*time.Second, 8*time.Second)
	cut := time.Now()
	rounds := 0
	for time.Since(cut) < outage/2 {
		round(up)
		rounds++
		time.Sleep(faultLen(time.Second, 500*time.Millisecond))
	}
	queuedAtKill := count(t, db, "SELECT COUNT(*) FROM mail_outbox WHERE failed_at IS NULL")
	attemptsAtKill := count(t, db, "SELECT COALESCE(SUM(attempts), 0) FROM mail_outbox")
	r.alive(t)
	r.kill(t)
	r.start(t)
	for time.Since(cut) < outage {
		round(up)
		rounds++
		time.Sleep(faultLen(time.Second, 500*time.Millisecond))
	}
	if n := mail.Count(kinds[0].email) + mail.Count(kinds[1].email) + mail.Count(kinds[2].email) + mail.Count(kinds[3].email); n != len(kinds) {
		t.Errorf("%d mails arrived while the mail server was cut, want only the %d sent before", n, len(kinds))
	}
	proxy.SetDown(false)
	back := time.Now()
	delivered := arrived(3 * time.Minute)
	tookBack := time.Since(back)
	if !delivered {
		t.Errorf("not every mail arrived, its outbox row deleted, within 3 minutes of the mail server's return")
	}

	total, lost := 0, 0
	var counts []string
	for k := range kinds {
		got := mail.Count(kinds[k].email)
		total += requested[k]
		lost += max(requested[k]-got, 0)
		counts = append(counts, fmt.Sprintf("%s %d/%d", kinds[k].kind, got, requested[k]))
	}
	// A duplicate is the same message (its link or PIN) received twice.
	seen := map[string]int{}
	for _, m := range mail.Messages() {
		seen[m.Text]++
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	if dups > 0 {
		t.Logf("%d duplicate mails (allowed only for a send in flight at the SIGKILL)", dups)
	}
	if dups > 1 {
		t.Errorf("%d duplicate mails; at most the one in flight at the SIGKILL may be sent twice", dups)
	}
	if len(mismatches) > 0 {
		t.Errorf("%d answers during the outage differ from the answers with the mail server up:\n%s", len(mismatches), strings.Join(mismatches, "\n"))
	}
	r.stop(t)
	faultSummary(t, faultRow{
		fmt.Sprintf("SMTP cut for %s, the server SIGKILLed and restarted halfway; magic link, reset, verification, PIN login", outage),
		fmt.Sprintf("%d request rounds during the outage, %d answers unlike the mail-up ones; %d mails queued and %d attempts failed at the kill; every mail arrived %.1fs after SMTP's return: %v; %d duplicates",
			rounds, len(mismatches), queuedAtKill, attemptsAtKill, tookBack.Seconds(), delivered, dups),
		fmt.Sprintf("%d of %d mails (%s)", lost, total, strings.Join(counts, ", ")),
	})
}

// writableThenStopped prepares a database for a case that takes writes away: the fault
// setup, an admin user (adminEmail), and one whole flow through a server on the writable
// database, stopped before the case restarts it under the fault on the same issuer. g is
// what that flow left the client.
func writableThenStopped(t *testing.T, dsn string) (fs *faultSetup, adminEmail, issuer string, g grant) {
	t.Helper()
	fs = newFaultSetup(t, dsn)
	adminEmail = "admin-" + fs.email
	fs.gh.admin(t, "user", "create", "--email", adminEmail, "--password", testPassword, "--role", "admin", "--verified")
	issuer = "http://" + freeAddr(t)
	rw := newReplica(t, fs.gh.bin, "server on the writable database", issuer, dsn, "--login-rate-limit", "off")
	g, err := newFlowDriver(fs, func() []string { return []string{rw.base()} }).flow(context.Background(), 0, flowOptions{})
	if err != nil {
		t.Fatalf("a flow before the fault: %v", err)
	}
	rw.stop(t)
	return fs, adminEmail, issuer, g
}

// writableAgain restarts the server on the writable database after a case that took
// writes away and checks nothing was lost: the grant held through the fault refreshes, and
// a new flow works. It returns both outcomes for the case's summary.
func writableAgain(t *testing.T, fs *faultSetup, issuer, dsn string, g *grant, when string) (refreshErr, flowErr error) {
	t.Helper()
	back := newReplica(t, fs.gh.bin, "server on the writable database again", issuer, dsn, "--login-rate-limit", "off")
	defer back.stop(t)
	d := newFlowDriver(fs, func() []string { return []string{back.base()} })
	if refreshErr = d.refresh(context.Background(), 0, g); refreshErr != nil {
		t.Errorf("the grant held through the fault, %s: %v", when, refreshErr)
	}
	if _, flowErr = d.flow(context.Background(), 0, flowOptions{refreshes: 1}); flowErr != nil {
		t.Errorf("a flow %s: %v", when, flowErr)
	}
	return refreshErr, flowErr
}
