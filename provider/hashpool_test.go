package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// argon2MiB is what one password hash or check allocates (publicauth's argon2id memory).
const argon2MiB = 7 << 20

// unlimited turns a provider rate limit off, so a burst from one address reaches hashing.
var unlimited = provider.RateLimit{Limit: -1, Window: time.Minute}

// heapObjectBytes is the heap memory held by objects, live or not yet swept (HeapAlloc).
func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// burst sends n requests made by newRequest at once (each goroutine waits for the others
// before sending) and returns their statuses, Retry-After headers and bodies.
func burst(t *testing.T, client *http.Client, n int, newRequest func(i int) *http.Request) []page {
	t.Helper()
	pages := make([]page, n)
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		req := newRequest(i)
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			res, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			errs[i] = err
			pages[i] = page{status: res.StatusCode, header: res.Header, url: req.URL, body: string(body)}
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	return pages
}

// jsonLogin is a POST /api/public/login of email and password.
func jsonLogin(t *testing.T, e *env, email, password string) *http.Request {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	req, err := http.NewRequest(http.MethodPost, e.issuer+"/api/public/login", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// A burst of 64 concurrent wrong-password logins holds the heap to what the hashing slots
// need: every login is checked (401), but at most PasswordHashConcurrency argon2id blocks of
// 7 MiB exist at once, where unbounded hashing would hold 64 × 7 MiB = 448 MiB. Half the
// logins name an unknown email, whose dummy verification goes through the same slots.
func TestLoginBurstHeapBounded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		const logins, slots = 64, 2
		e := newEnv(t, b, provider.Config{PublicAuth: provider.PublicAuthConfig{
			PasswordHashConcurrency: slots, PasswordHashQueue: logins,
			LoginRateLimit: unlimited, LockoutLimit: unlimited,
		}})
		e.user(t, "ann@example.com", "Ann")
		// Pin the collector's pacing, so the bound below does not depend on GOGC.
		defer debug.SetGCPercent(debug.SetGCPercent(100))
		runtime.GC()
		baseline := heapObjectBytes()

		ctx, stop := context.WithCancel(context.Background())
		peaks := make(chan uint64)
		go func() {
			peak := heapObjectBytes()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					peaks <- peak
					return
				case <-tick.C:
					peak = max(peak, heapObjectBytes())
				}
			}
		}()
		client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: logins}}
		pages := burst(t, client, logins, func(i int) *http.Request {
			email := "ann@example.com"
			if i%2 == 1 {
				email = "nobody@example.com"
			}
			return jsonLogin(t, e, email, "not the password at all")
		})
		stop()
		peak := <-peaks
		for i, p := range pages {
			if p.status != http.StatusUnauthorized {
				t.Fatalf("login %d: %s, want 401", i, p)
			}
		}
		// The collector lets the heap grow to twice what was live at its last cycle (the
		// baseline and the blocks of the running hashes), and a block allocated while a cycle
		// is still marking overshoots that: four blocks of slack cover it. Unbounded hashing
		// would need 64 blocks.
		bound := 2 * (baseline + (slots+4)*argon2MiB)
		t.Logf("heap: baseline %d MiB, peak %d MiB, bound %d MiB", baseline>>20, peak>>20, bound>>20)
		if peak > bound {
			t.Errorf("peak heap %d MiB over %d concurrent logins exceeds %d MiB", peak>>20, logins, bound>>20)
		}
	})
}

// A burst beyond the slots and queue is refused rather than queued without end: the JSON
// login answers 503 with Retry-After in the spec's error shape, the hosted login form the
// error page with 503 and Retry-After. With one slot and no queue, a burst of 16 finds the
// slot busy; the bounded retries only cover a scheduler that ran every request alone.
func TestPasswordHashingBusy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		const n, attempts = 16, 5
		e := newEnv(t, b, provider.Config{PublicAuth: provider.PublicAuthConfig{
			PasswordHashConcurrency: 1, PasswordHashQueue: -1,
			LoginRateLimit: unlimited, LockoutLimit: unlimited,
		}})
		e.user(t, "ann@example.com", "Ann")
		client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: n}}

		// wantRefusals runs bursts until one has a 503, and checks every answer is either
		// the normal one (okStatus) or a well-formed refusal.
		wantRefusals := func(t *testing.T, okStatus int, newRequest func(i int) *http.Request, wantRefusal func(t *testing.T, p page)) {
			t.Helper()
			for range attempts {
				refused := 0
				for _, p := range burst(t, client, n, newRequest) {
					switch p.status {
					case okStatus:
					case http.StatusServiceUnavailable:
						refused++
						if got := p.header.Get("Retry-After"); got != "1" {
							t.Errorf("Retry-After = %q, want \"1\"", got)
						}
						wantRefusal(t, p)
					default:
						t.Fatalf("got %s, want %d or 503", p, okStatus)
					}
				}
				if refused > 0 {
					return
				}
			}
			t.Fatalf("%d bursts of %d logins against one hashing slot were never refused", attempts, n)
		}

		t.Run("JSON", func(t *testing.T) {
			wantRefusals(t, http.StatusUnauthorized, func(int) *http.Request {
				return jsonLogin(t, e, "ann@example.com", "not the password at all")
			}, func(t *testing.T, p page) {
				if got := p.header.Get("Content-Type"); got != "application/json" {
					t.Errorf("Content-Type = %q", got)
				}
				const want = `{"error":"Service Unavailable","message":"too many sign-ins are being checked at once, try again in a moment"}`
				if got := strings.TrimSpace(p.body); got != want {
					t.Errorf("body = %s, want %s", got, want)
				}
			})
		})

		t.Run("hosted", func(t *testing.T) {
			browsers := make([]*browser, n)
			forms := make([]htmlForm, n)
			for i := range n {
				browsers[i] = e.browser(t)
				p := browsers[i].get(t, e.issuer+"/login")
				if p.status != http.StatusOK {
					t.Fatalf("login page: %s", p)
				}
				forms[i] = p.form(t)
				forms[i].fields.Set("email", "ann@example.com")
				forms[i].fields.Set("password", "not the password at all")
			}
			// Each browser sends its own form, cookies and CSRF token, over the shared client.
			wantRefusals(t, http.StatusUnauthorized, func(i int) *http.Request {
				req, err := http.NewRequest(http.MethodPost, forms[i].action, strings.NewReader(forms[i].fields.Encode()))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				action, _ := url.Parse(forms[i].action)
				for _, c := range browsers[i].client.Jar.Cookies(action) {
					req.AddCookie(c)
				}
				return req
			}, func(t *testing.T, p page) {
				if got := p.header.Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
					t.Errorf("Content-Type = %q, want the HTML error page", got)
				}
				if !strings.Contains(p.body, "Too many sign-ins are being checked right now") {
					t.Errorf("503 page does not say why:\n%s", p.body)
				}
			})
		})
	})
}
