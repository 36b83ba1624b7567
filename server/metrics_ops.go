package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-id/gatehouse/provider"
)

// event counts one provider event; it is the server's provider.WithEvents sink. Label
// values are bounded: grant types and reasons are the provider's constants, and methods
// the configured login methods.
func (m *metrics) event(_ context.Context, e provider.Event) {
	switch e := e.(type) {
	case *provider.TokenIssued:
		m.tokens.WithLabelValues(e.GrantType).Inc()
	case *provider.LoginSucceeded:
		m.logins.WithLabelValues(e.Method, "success").Inc()
	case *provider.LoginFailed:
		m.logins.WithLabelValues(e.Method, e.Reason).Inc()
	case *provider.TokenRevoked:
		m.revoked.WithLabelValues(e.Kind, "client_request").Inc()
	case *provider.FamilyRevoked:
		m.revoked.WithLabelValues("grant", e.Reason).Inc()
	}
}

// The metrics read from the provider's Stats at each scrape.
var (
	descLockouts = prometheus.NewDesc("gatehouse_lockouts_total",
		"Login attempts refused because the email had too many failed logins.", nil, nil)
	descRefusals = prometheus.NewDesc("gatehouse_rate_limit_refusals_total",
		"Requests a rate limit refused, by limit.", []string{"limit"}, nil)
	descBreakerOpen = prometheus.NewDesc("gatehouse_rate_limit_breaker_open",
		"1 while the circuit breaker of the rate limits' Redis is open (limits fail open without trying Redis) or probing, else 0.", nil, nil)
	descBreakerOpened = prometheus.NewDesc("gatehouse_rate_limit_breaker_opened_total",
		"Times the circuit breaker of the rate limits' Redis opened after a failure of Redis.", nil, nil)
	descMailFailures = prometheus.NewDesc("gatehouse_mail_failures_total",
		"Mail delivery attempts the mailer failed (each is retried from the outbox).", nil, nil)
	descMailQueued = prometheus.NewDesc("gatehouse_mail_queue_depth",
		"Mails in the outbox still to deliver, all replicas' (-1: the database did not answer).", nil, nil)
	descMailDue = prometheus.NewDesc("gatehouse_mail_queue_due",
		"Mails in the outbox due for a delivery attempt now.", nil, nil)
	descMailGivenUp = prometheus.NewDesc("gatehouse_mail_given_up",
		"Mails given up on (link or PIN expired undelivered) still kept in the outbox.", nil, nil)
	descDBConns = prometheus.NewDesc("gatehouse_db_connections",
		"Database connections, by state: open (in use plus idle), in_use, idle.", []string{"state"}, nil)
	descDBConnsMax = prometheus.NewDesc("gatehouse_db_connections_max",
		"The most database connections the pool opens (0: no limit).", nil, nil)
	descDBWaits = prometheus.NewDesc("gatehouse_db_connection_waits_total",
		"Times a statement waited for a free database connection.", nil, nil)
	descDBWaitSeconds = prometheus.NewDesc("gatehouse_db_connection_wait_seconds_total",
		"Time statements spent waiting for a free database connection.", nil, nil)
	descOutboundFailures = prometheus.NewDesc("gatehouse_outbound_request_failures_total",
		"Failed requests to URLs clients supplied, by purpose (jwks_uri, backchannel_logout_uri) and reason (refused_address, timeout, connection, status, too_large, invalid_url, invalid_document).", []string{"purpose", "reason"}, nil)
	descKeyAge = prometheus.NewDesc("gatehouse_signing_key_age_seconds",
		"Seconds since the signing key each algorithm signs with now was created.", []string{"alg"}, nil)
)

// statsCollector exports the provider's Stats (rate limits, lockouts, mail, connection pool,
// signing keys), read once per scrape; nothing while the server has no provider.
type statsCollector struct{ m *metrics }

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLockouts, descRefusals, descBreakerOpen, descBreakerOpened,
		descMailFailures, descMailQueued, descMailDue, descMailGivenUp, descDBConns, descDBConnsMax,
		descDBWaits, descDBWaitSeconds, descOutboundFailures, descKeyAge} {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	if c.m.stats == nil {
		return
	}
	s := c.m.stats()
	now := c.m.now()
	metric := func(d *prometheus.Desc, kind prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, kind, v, labels...)
	}
	metric(descLockouts, prometheus.CounterValue, float64(s.LockoutRefusals))
	for limit, n := range s.RateLimitRefusals {
		metric(descRefusals, prometheus.CounterValue, float64(n), limit)
	}
	if b := s.RedisBreaker; b != nil {
		open := 0.0
		if b.State != "closed" {
			open = 1
		}
		metric(descBreakerOpen, prometheus.GaugeValue, open)
		metric(descBreakerOpened, prometheus.CounterValue, float64(b.Opened))
	}
	for f, n := range s.OutboundFailures {
		metric(descOutboundFailures, prometheus.CounterValue, float64(n), f.Purpose, f.Reason)
	}
	metric(descMailFailures, prometheus.CounterValue, float64(s.MailFailures))
	metric(descMailQueued, prometheus.GaugeValue, float64(s.MailQueued))
	metric(descMailDue, prometheus.GaugeValue, float64(s.MailDue))
	metric(descMailGivenUp, prometheus.GaugeValue, float64(s.MailGivenUp))
	p := s.Pool
	metric(descDBConns, prometheus.GaugeValue, float64(p.Idle), "idle")
	metric(descDBConns, prometheus.GaugeValue, float64(p.InUse), "in_use")
	metric(descDBConns, prometheus.GaugeValue, float64(p.OpenConnections), "open")
	metric(descDBConnsMax, prometheus.GaugeValue, float64(p.MaxOpenConnections))
	metric(descDBWaits, prometheus.CounterValue, float64(p.WaitCount))
	metric(descDBWaitSeconds, prometheus.CounterValue, p.WaitDuration.Seconds())
	for alg, created := range s.ActiveKeyCreated {
		age := max(now.Sub(created), 0)
		metric(descKeyAge, prometheus.GaugeValue, age.Truncate(time.Second).Seconds(), alg)
	}
}
