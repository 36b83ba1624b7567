package server

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// After a scripted set of flows, /metrics shows exactly what happened: tokens issued by
// grant type, logins by method and outcome, the lockout and the rate-limit refusal they
// caused, the revocation, the mail that could not be sent (and stays queued), the pool and the key ages.
func TestMetricsCountScriptedFlows(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dsn := b.DSN(t)
			store := []string{"--dsn", dsn}
			if _, isFile := sqlitePath(dsn); !isFile {
				store = append(store, "--secret", strings.Repeat("k", 32))
			}
			const email, password = "ann@example.com", "correct horse battery staple"
			mustRun(t, nil, append([]string{"user", "create", "--email", email, "--password", password, "--verified"}, store...)...)
			mustRun(t, nil, append([]string{"client", "create", "--id", "svc", "--client-secret", "s3cret", "--grant-type", "client_credentials"}, store...)...)

			// A mail server that is not there: every mail fails.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			deadSMTP := ln.Addr().String()
			ln.Close()

			base, logs, _ := startServer(t, append([]string{"--janitor-interval=-1s", "--lockout", "3/1h", "--token-error-limit", "2/1h",
				"--smtp-url", "smtp://" + deadSMTP, "--mail-from", "Gatehouse <noreply@example.com>"}, store...)...)
			origin := base

			post := func(path string, body io.Reader, contentType string, basic ...string) (int, string) {
				t.Helper()
				req, err := http.NewRequest(http.MethodPost, origin+path, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", contentType)
				if len(basic) == 2 {
					req.SetBasicAuth(basic[0], basic[1])
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			form := func(path string, v url.Values, secret string) (int, string) {
				return post(path, strings.NewReader(v.Encode()), "application/x-www-form-urlencoded", "svc", secret)
			}
			jsonPost := func(path, body string) int {
				code, _ := post(path, strings.NewReader(body), "application/json")
				return code
			}
			want := func(what string, got, want int) {
				t.Helper()
				if got != want {
					t.Fatalf("%s: got %d, want %d; logs:\n%s", what, got, want, logs.String())
				}
			}

			// Two client_credentials tokens; the first is revoked by its client.
			var first string
			for i := range 2 {
				code, body := form("/api/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "s3cret")
				want("client_credentials token", code, http.StatusOK)
				if i == 0 {
					first = jsonField(body, "access_token")
				}
			}
			code, _ := form("/api/oauth/revoke", url.Values{"token": {first}, "token_type_hint": {"access_token"}}, "s3cret")
			want("revoke", code, http.StatusOK)
			// Two wrong client secrets reach the limit; the third attempt is refused.
			for range 2 {
				code, _ := form("/api/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "wrong")
				want("wrong client secret", code, http.StatusUnauthorized)
			}
			code, _ = form("/api/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "wrong")
			want("over the token error limit", code, http.StatusTooManyRequests)

			// One login, three wrong passwords (the lockout's limit), then a locked email.
			want("login", jsonPost("/api/public/login", `{"email":"`+email+`","password":"`+password+`"}`), http.StatusOK)
			for range 3 {
				want("wrong password", jsonPost("/api/public/login", `{"email":"`+email+`","password":"wrong"}`), http.StatusUnauthorized)
			}
			want("locked", jsonPost("/api/public/login", `{"email":"`+email+`","password":"`+password+`"}`), http.StatusTooManyRequests)

			// A reset mail the dead mail server cannot take: it stays queued in the outbox,
			// for a retry 5 seconds on.
			want("reset request", jsonPost("/api/public/request-password-reset", `{"email":"`+email+`"}`), http.StatusOK)

			var page string
			for range 400 { // the mail fails within its connection attempt: bounded wait
				resp, err := http.Get(origin + "/metrics")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				page = string(b)
				if strings.Contains(page, "\ngatehouse_mail_failures_total 1\n") && strings.Contains(page, "\ngatehouse_mail_queue_depth 1\n") {
					break
				}
				time.Sleep(25 * time.Millisecond)
			}
			for _, line := range []string{
				`gatehouse_tokens_issued_total{grant_type="client_credentials"} 2`,
				`gatehouse_logins_total{method="password",outcome="bad_credentials"} 3`,
				`gatehouse_logins_total{method="password",outcome="locked"} 1`,
				`gatehouse_logins_total{method="password",outcome="success"} 1`,
				`gatehouse_revocations_total{kind="access_token",reason="client_request"} 1`,
				`gatehouse_lockouts_total 1`,
				`gatehouse_rate_limit_refusals_total{limit="oauth-failures"} 1`,
				`gatehouse_mail_failures_total 1`,
				`gatehouse_mail_queue_depth 1`,
				`gatehouse_mail_given_up 0`,
				`gatehouse_db_connection_waits_total 0`,
			} {
				if !strings.Contains(page, "\n"+line+"\n") {
					t.Errorf("metrics lack %s", line)
				}
			}
			for family, n := range map[string]int{"gatehouse_tokens_issued_total": 1, "gatehouse_logins_total": 3,
				"gatehouse_revocations_total": 1, "gatehouse_rate_limit_refusals_total": 1} {
				if got := strings.Count(page, "\n"+family+"{"); got != n {
					t.Errorf("%s: %d series, want only the %d above", family, got, n)
				}
			}
			if v := metricValue(page, `gatehouse_db_connections{state="open"}`); v < 1 {
				t.Errorf("open connections: got %v, want at least 1", v)
			}
			for _, alg := range []string{"ES256", "EdDSA", "RS256"} {
				if v := metricValue(page, `gatehouse_signing_key_age_seconds{alg="`+alg+`"}`); v < 0 || v > 3600 {
					t.Errorf("age of the %s key: got %v, want a few seconds", alg, v)
				}
			}
			checkDashboardNames(t, page)
			if t.Failed() {
				t.Logf("metrics:\n%s", page)
			}
		})
	}
}

// metricValue is the value of the series named exactly series, -1 when absent.
func metricValue(page, series string) float64 {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// jsonField is a string field of a JSON object, "" without it.
func jsonField(body, name string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	v, _ := m[name].(string)
	return v
}

// checkDashboardNames fails t unless every metric the example Grafana dashboard queries is
// one the server exports, so the dashboard cannot drift from the names.
func checkDashboardNames(t *testing.T, page string) {
	t.Helper()
	raw, err := os.ReadFile("../examples/grafana/gatehouse.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	names := regexp.MustCompile(`gatehouse_[a-z_]+`)
	var queried int
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, name := range names.FindAllString(target.Expr, -1) {
				queried++
				family := strings.TrimSuffix(name, "_bucket")
				if !strings.Contains(page, "# TYPE "+family+" ") {
					t.Errorf("dashboard panel %q queries %s, which /metrics does not export", p.Title, name)
				}
			}
		}
	}
	if queried == 0 {
		t.Error("the dashboard queries no gatehouse metric")
	}
}

// TestOutboundFailureMetric: the provider's outbound failures are exported by purpose and
// reason, sorted, one series each.
func TestOutboundFailureMetric(t *testing.T) {
	m := newMetrics()
	m.stats = func() provider.Stats {
		return provider.Stats{OutboundFailures: map[provider.OutboundFailure]uint64{
			{Purpose: "jwks_uri", Reason: "timeout"}:                       2,
			{Purpose: "backchannel_logout_uri", Reason: "refused_address"}: 1,
			{Purpose: "jwks_uri", Reason: "refused_address"}:               3,
		}}
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	out := rec.Body
	want := "# TYPE gatehouse_outbound_request_failures_total counter\n" +
		`gatehouse_outbound_request_failures_total{purpose="backchannel_logout_uri",reason="refused_address"} 1` + "\n" +
		`gatehouse_outbound_request_failures_total{purpose="jwks_uri",reason="refused_address"} 3` + "\n" +
		`gatehouse_outbound_request_failures_total{purpose="jwks_uri",reason="timeout"} 2` + "\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("metrics lack\n%s\ngot:\n%s", want, out.String())
	}
}
