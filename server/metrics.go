package server

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
)

// metrics counts requests and their durations and serves them in the Prometheus text
// exposition format (version 0.0.4) at /metrics. One value per server: nothing is global.
type metrics struct {
	// bounds are the upper bounds, in seconds, of the duration histogram's buckets.
	bounds    []float64
	mu        sync.Mutex
	requests  map[requestKey]uint64
	durations map[string]*histogram // by method
	ops       opsCounts             // the provider's events (metrics_ops.go)
	// stats reads the provider's Stats; nil until the server has a provider.
	stats func() provider.Stats
	now   func() time.Time
}

type requestKey struct {
	method string
	code   int
}

type histogram struct {
	buckets []uint64 // one per bound, not cumulative: summed when written
	sum     float64
	count   uint64
}

func newMetrics() *metrics {
	return &metrics{
		bounds:    []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		requests:  map[requestKey]uint64{},
		durations: map[string]*histogram{},
		ops:       newOpsCounts(),
		now:       time.Now,
	}
}

// metricMethod bounds the method label to the standard methods.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// observe records one request.
func (m *metrics) observe(method string, code int, d time.Duration) {
	method = metricMethod(method)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{method, code}]++
	h := m.durations[method]
	if h == nil {
		h = &histogram{buckets: make([]uint64, len(m.bounds))}
		m.durations[method] = h
	}
	s := d.Seconds()
	for i, le := range m.bounds {
		if s <= le {
			h.buckets[i]++
			break
		}
	}
	h.sum += s
	h.count++
}

// ServeHTTP writes the metrics.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.writeTo(w)
	m.writeOps(w)
}

func (m *metrics) writeTo(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()

	keys := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b requestKey) int {
		if a.method != b.method {
			if a.method < b.method {
				return -1
			}
			return 1
		}
		return a.code - b.code
	})
	fmt.Fprintln(w, "# HELP gatehouse_http_requests_total HTTP requests served, by method and status code.")
	fmt.Fprintln(w, "# TYPE gatehouse_http_requests_total counter")
	for _, k := range keys {
		fmt.Fprintf(w, "gatehouse_http_requests_total{code=\"%d\",method=\"%s\"} %d\n", k.code, k.method, m.requests[k])
	}

	methods := make([]string, 0, len(m.durations))
	for method := range m.durations {
		methods = append(methods, method)
	}
	slices.Sort(methods)
	fmt.Fprintln(w, "# HELP gatehouse_http_request_duration_seconds Time to serve an HTTP request, by method.")
	fmt.Fprintln(w, "# TYPE gatehouse_http_request_duration_seconds histogram")
	for _, method := range methods {
		h := m.durations[method]
		var cum uint64
		for i, le := range m.bounds {
			cum += h.buckets[i]
			fmt.Fprintf(w, "gatehouse_http_request_duration_seconds_bucket{method=\"%s\",le=\"%s\"} %d\n",
				method, strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		fmt.Fprintf(w, "gatehouse_http_request_duration_seconds_bucket{method=\"%s\",le=\"+Inf\"} %d\n", method, h.count)
		fmt.Fprintf(w, "gatehouse_http_request_duration_seconds_sum{method=\"%s\"} %s\n", method, strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(w, "gatehouse_http_request_duration_seconds_count{method=\"%s\"} %d\n", method, h.count)
	}
}
