// Command loadgen measures how many tokens per second an OAuth 2.0 token endpoint issues:
// it runs concurrent client_credentials grants over keep-alive connections for a fixed time
// and prints throughput and latency percentiles as JSON. It speaks only standard OAuth, so
// the same run can target Gatehouse, Hydra or node-oidc-provider on the same machine;
// `make bench` starts a Gatehouse and points it here.
//
//	go run ./examples/loadgen -token-url http://127.0.0.1:8080/api/oauth/token \
//		-client-id svc -client-secret … -c 16 -d 15s
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// result is what a run prints.
type result struct {
	Target       string             `json:"target"`
	Concurrency  int                `json:"concurrency"`
	Seconds      float64            `json:"seconds"`
	Requests     int                `json:"requests"`
	Errors       int                `json:"errors"`
	TokensPerSec float64            `json:"tokens_per_second"`
	LatencyMS    map[string]float64 `json:"latency_ms"`
	FirstError   string             `json:"first_error,omitempty"`
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	tokenURL := fs.String("token-url", "", "token endpoint URL (required)")
	clientID := fs.String("client-id", "", "client id (required)")
	secret := fs.String("client-secret", "", "client secret (required)")
	scope := fs.String("scope", "", "scope to request")
	auth := fs.String("auth", "post", "client authentication: post (client_secret_post) or basic")
	concurrency := fs.Int("c", 16, "concurrent requests")
	duration := fs.Duration("d", 10*time.Second, "how long to run")
	warmup := fs.Duration("warmup", time.Second, "how long to run before measuring")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tokenURL == "" || *clientID == "" || *secret == "" {
		return errors.New("-token-url, -client-id and -client-secret are required")
	}
	if *auth != "post" && *auth != "basic" {
		return errors.New("-auth must be post or basic")
	}
	if *concurrency < 1 || *duration <= 0 {
		return errors.New("-c must be at least 1 and -d positive")
	}

	form := url.Values{"grant_type": {"client_credentials"}}
	if *scope != "" {
		form.Set("scope", *scope)
	}
	if *auth == "post" {
		form.Set("client_id", *clientID)
		form.Set("client_secret", *secret)
	}
	body := form.Encode()
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: *concurrency, MaxConnsPerHost: *concurrency},
	}
	request := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, *tokenURL, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if *auth == "basic" {
			req.SetBasicAuth(url.QueryEscape(*clientID), url.QueryEscape(*secret))
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
			return fmt.Errorf("status %d, decode error %v", resp.StatusCode, err)
		}
		return nil
	}

	// Warm up: connections, caches, JIT of the other side.
	if err := drive(*concurrency, *warmup, request, nil); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errCount  int
		firstErr  error
	)
	record := func(d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errCount++
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		latencies = append(latencies, d)
	}
	start := time.Now()
	if err := drive(*concurrency, *duration, request, record); err != nil {
		return err
	}
	elapsed := time.Since(start).Seconds()

	slices.Sort(latencies)
	pct := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		i := min(len(latencies)-1, int(p*float64(len(latencies))))
		return float64(latencies[i].Microseconds()) / 1000
	}
	res := result{
		Target: *tokenURL, Concurrency: *concurrency, Seconds: elapsed,
		Requests: len(latencies) + errCount, Errors: errCount,
		TokensPerSec: float64(len(latencies)) / elapsed,
		LatencyMS:    map[string]float64{"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": pct(1)},
	}
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// drive runs request from n workers until d has passed, reporting each to record (when not
// nil). During a warm-up (record nil) the first error aborts the run, so a misconfigured
// target fails fast instead of being measured.
func drive(n int, d time.Duration, request func(context.Context) error, record func(time.Duration, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t := time.Now()
				err := request(ctx)
				if ctx.Err() != nil {
					return // cut off by the deadline: not a measurement
				}
				if record == nil {
					if err != nil {
						errs <- err
						cancel()
						return
					}
					continue
				}
				record(time.Since(t), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
