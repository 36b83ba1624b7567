package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse-id/gatehouse/provider"
)

// metrics counts requests, their durations and the provider's events, and serves them with
// the provider's Stats, the Go runtime's and the process's metrics at /metrics, through
// github.com/prometheus/client_golang. One registry per server: nothing is global, and
// package provider links none of it (it reports through Stats and WithEvents).
type metrics struct {
	registry  *prometheus.Registry
	requests  *prometheus.CounterVec   // by method, code
	durations *prometheus.HistogramVec // by method
	tokens    *prometheus.CounterVec   // by grant type
	logins    *prometheus.CounterVec   // by method, outcome
	revoked   *prometheus.CounterVec   // by kind, reason
	// stats reads the provider's Stats; nil until the server has a provider.
	stats func() provider.Stats
	now   func() time.Time
	page  http.Handler
}

// durationBuckets are the upper bounds, in seconds, of the request duration histogram.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_http_requests_total",
			Help: "HTTP requests served, by method and status code."}, []string{"method", "code"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_http_request_duration_seconds",
			Help: "Time to serve an HTTP request, by method.", Buckets: durationBuckets}, []string{"method"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_tokens_issued_total",
			Help: "Token responses of the token endpoint, by grant type."}, []string{"grant_type"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_logins_total",
			Help: "Login attempts, by method and outcome (success, or the reason of the refusal)."}, []string{"method", "outcome"}),
		revoked: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_revocations_total",
			Help: "Revocations: of a token by its client (kind access_token or refresh_token), or of a whole grant by Gatehouse (kind grant, with the reason)."},
			[]string{"kind", "reason"}),
		now: time.Now,
	}
	m.registry.MustRegister(m.requests, m.durations, m.tokens, m.logins, m.revoked,
		statsCollector{m},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.page = promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
	return m
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
	m.requests.WithLabelValues(method, strconv.Itoa(code)).Inc()
	m.durations.WithLabelValues(method).Observe(d.Seconds())
}

// ServeHTTP writes the metrics in the exposition format the scraper asks for (the text
// format by default).
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.page.ServeHTTP(w, r) }
