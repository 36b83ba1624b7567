package server

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
)

// opsCounts are the counters fed by the provider's events (provider.WithEvents): tokens,
// logins and revocations. Guarded by metrics.mu.
type opsCounts struct {
	tokens      map[string]uint64    // by grant type
	logins      map[[2]string]uint64 // by method, outcome
	revocations map[[2]string]uint64 // by kind, reason
}

func newOpsCounts() opsCounts {
	return opsCounts{tokens: map[string]uint64{}, logins: map[[2]string]uint64{}, revocations: map[[2]string]uint64{}}
}

// event counts one provider event; it is the server's provider.WithEvents sink. Label
// values are bounded: grant types and reasons are the provider's constants, and methods
// the configured login methods.
func (m *metrics) event(_ context.Context, e provider.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch e := e.(type) {
	case *provider.TokenIssued:
		m.ops.tokens[e.GrantType]++
	case *provider.LoginSucceeded:
		m.ops.logins[[2]string{e.Method, "success"}]++
	case *provider.LoginFailed:
		m.ops.logins[[2]string{e.Method, e.Reason}]++
	case *provider.TokenRevoked:
		m.ops.revocations[[2]string{e.Kind, "client_request"}]++
	case *provider.FamilyRevoked:
		m.ops.revocations[[2]string{"grant", e.Reason}]++
	}
}

// writeOps writes the operational metrics: the event counters and, when the server has a
// provider, its Stats (rate limits, lockouts, mail, connection pool, signing keys).
func (m *metrics) writeOps(w io.Writer) {
	var stats provider.Stats
	if m.stats != nil {
		stats = m.stats() // outside the lock: it reads the pool and the key set
	}
	now := m.now()

	m.mu.Lock()
	header(w, "gatehouse_tokens_issued_total", "counter", "Token responses of the token endpoint, by grant type.")
	for _, g := range slices.Sorted(maps.Keys(m.ops.tokens)) {
		fmt.Fprintf(w, "gatehouse_tokens_issued_total{grant_type=%s} %d\n", label(g), m.ops.tokens[g])
	}
	header(w, "gatehouse_logins_total", "counter", "Login attempts, by method and outcome (success, or the reason of the refusal).")
	for _, k := range sortedPairs(m.ops.logins) {
		fmt.Fprintf(w, "gatehouse_logins_total{method=%s,outcome=%s} %d\n", label(k[0]), label(k[1]), m.ops.logins[k])
	}
	header(w, "gatehouse_revocations_total", "counter", "Revocations: of a token by its client (kind access_token or refresh_token), or of a whole grant by Gatehouse (kind grant, with the reason).")
	for _, k := range sortedPairs(m.ops.revocations) {
		fmt.Fprintf(w, "gatehouse_revocations_total{kind=%s,reason=%s} %d\n", label(k[0]), label(k[1]), m.ops.revocations[k])
	}
	m.mu.Unlock()

	if m.stats == nil {
		return
	}
	header(w, "gatehouse_lockouts_total", "counter", "Login attempts refused because the email had too many failed logins.")
	fmt.Fprintf(w, "gatehouse_lockouts_total %d\n", stats.LockoutRefusals)
	header(w, "gatehouse_rate_limit_refusals_total", "counter", "Requests a rate limit refused, by limit.")
	for _, l := range slices.Sorted(maps.Keys(stats.RateLimitRefusals)) {
		fmt.Fprintf(w, "gatehouse_rate_limit_refusals_total{limit=%s} %d\n", label(l), stats.RateLimitRefusals[l])
	}
	if b := stats.RedisBreaker; b != nil {
		open := 0
		if b.State != "closed" {
			open = 1
		}
		header(w, "gatehouse_rate_limit_breaker_open", "gauge", "1 while the circuit breaker of the rate limits' Redis is open (limits fail open without trying Redis) or probing, else 0.")
		fmt.Fprintf(w, "gatehouse_rate_limit_breaker_open %d\n", open)
		header(w, "gatehouse_rate_limit_breaker_opened_total", "counter", "Times the circuit breaker of the rate limits' Redis opened after a failure of Redis.")
		fmt.Fprintf(w, "gatehouse_rate_limit_breaker_opened_total %d\n", b.Opened)
	}
	header(w, "gatehouse_outbound_request_failures_total", "counter", "Failed requests to URLs clients supplied, by purpose (jwks_uri, backchannel_logout_uri) and reason (refused_address, timeout, connection, status, too_large, invalid_url, invalid_document).")
	for _, f := range slices.SortedFunc(maps.Keys(stats.OutboundFailures), func(a, b provider.OutboundFailure) int {
		return cmp.Or(strings.Compare(a.Purpose, b.Purpose), strings.Compare(a.Reason, b.Reason))
	}) {
		fmt.Fprintf(w, "gatehouse_outbound_request_failures_total{purpose=%s,reason=%s} %d\n", label(f.Purpose), label(f.Reason), stats.OutboundFailures[f])
	}
	header(w, "gatehouse_mail_failures_total", "counter", "Mail delivery attempts the mailer failed (each is retried from the outbox).")
	fmt.Fprintf(w, "gatehouse_mail_failures_total %d\n", stats.MailFailures)
	header(w, "gatehouse_mail_queue_depth", "gauge", "Mails in the outbox still to deliver, all replicas' (-1: the database did not answer).")
	fmt.Fprintf(w, "gatehouse_mail_queue_depth %d\n", stats.MailQueued)
	header(w, "gatehouse_mail_queue_due", "gauge", "Mails in the outbox due for a delivery attempt now.")
	fmt.Fprintf(w, "gatehouse_mail_queue_due %d\n", stats.MailDue)
	header(w, "gatehouse_mail_given_up", "gauge", "Mails given up on (link or PIN expired undelivered) still kept in the outbox.")
	fmt.Fprintf(w, "gatehouse_mail_given_up %d\n", stats.MailGivenUp)

	p := stats.Pool
	header(w, "gatehouse_db_connections", "gauge", "Database connections, by state: open (in use plus idle), in_use, idle.")
	fmt.Fprintf(w, "gatehouse_db_connections{state=\"idle\"} %d\n", p.Idle)
	fmt.Fprintf(w, "gatehouse_db_connections{state=\"in_use\"} %d\n", p.InUse)
	fmt.Fprintf(w, "gatehouse_db_connections{state=\"open\"} %d\n", p.OpenConnections)
	header(w, "gatehouse_db_connections_max", "gauge", "The most database connections the pool opens (0: no limit).")
	fmt.Fprintf(w, "gatehouse_db_connections_max %d\n", p.MaxOpenConnections)
	header(w, "gatehouse_db_connection_waits_total", "counter", "Times a statement waited for a free database connection.")
	fmt.Fprintf(w, "gatehouse_db_connection_waits_total %d\n", p.WaitCount)
	header(w, "gatehouse_db_connection_wait_seconds_total", "counter", "Time statements spent waiting for a free database connection.")
	fmt.Fprintf(w, "gatehouse_db_connection_wait_seconds_total %s\n", strconv.FormatFloat(p.WaitDuration.Seconds(), 'g', -1, 64))

	header(w, "gatehouse_signing_key_age_seconds", "gauge", "Seconds since the signing key each algorithm signs with now was created.")
	for _, alg := range slices.Sorted(maps.Keys(stats.ActiveKeyCreated)) {
		age := max(now.Sub(stats.ActiveKeyCreated[alg]), 0)
		fmt.Fprintf(w, "gatehouse_signing_key_age_seconds{alg=%s} %s\n", label(alg), strconv.FormatFloat(age.Truncate(time.Second).Seconds(), 'g', -1, 64))
	}
}

func header(w io.Writer, name, kind, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
}

// label quotes a label value as the text format wants: backslash, double quote and line
// feed escaped.
func label(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v) + `"`
}

func sortedPairs(m map[[2]string]uint64) [][2]string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	return keys
}
