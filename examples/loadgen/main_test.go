package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A token endpoint that answers every grant: the run reports the tokens it got and no errors.
func TestRunCountsTokens(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.PostFormValue("grant_type") != "client_credentials" || r.PostFormValue("client_secret") != "s3cret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		served.Add(1)
		_, _ = w.Write([]byte(`{"access_token":"t","token_type":"Bearer"}`))
	}))
	defer srv.Close()

	var out bytes.Buffer
	err := run([]string{"-token-url", srv.URL, "-client-id", "svc", "-client-secret", "s3cret",
		"-c", "2", "-d", "200ms", "-warmup", "50ms"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var res result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output is not the JSON result: %v\n%s", err, out.String())
	}
	if res.Requests == 0 || res.Errors != 0 || res.TokensPerSec <= 0 || res.LatencyMS["p50"] <= 0 {
		t.Errorf("got %+v, want tokens counted without errors", res)
	}
	if int64(res.Requests) > served.Load() {
		t.Errorf("reported %d requests, but the server answered only %d", res.Requests, served.Load())
	}
}

// A misconfigured target fails the warm-up instead of being measured.
func TestRunFailsFastOnErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	err := run([]string{"-token-url", srv.URL, "-client-id", "svc", "-client-secret", "wrong", "-d", "5s"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "warm-up") || !strings.Contains(err.Error(), "401") {
		t.Errorf("got %v, want a warm-up error naming the 401", err)
	}
}
