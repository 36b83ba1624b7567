package provider_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// statementLog is a slog handler that records the SQL statements the store logs
// (storage.WithLogger logs each one at debug level, BEGIN and COMMIT excepted).
type statementLog struct {
	mu   sync.Mutex
	sqls []string
}

func (l *statementLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *statementLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *statementLog) WithGroup(string) slog.Handler            { return l }

func (l *statementLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "storage: sql" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "sql" {
			l.mu.Lock()
			l.sqls = append(l.sqls, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// during returns the statements run while fn ran.
func (l *statementLog) during(fn func()) []string {
	l.mu.Lock()
	l.sqls = nil
	l.mu.Unlock()
	fn()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sqls
}

// statementBudget is the number of SQL statements each hot operation may run once the
// clients it uses are cached (BEGIN and COMMIT not counted), as DESIGN.md §6 budgets them.
// Access tokens are stateless: no statement stores or reads one.
var statementBudget = []struct {
	op   string
	want int
	// onPostgres is want on Postgres, where it differs.
	onPostgres int
}{
	// The session read, the code insert (PKCE and OpenID Connect data on the code row) and,
	// in its transaction, the record of the client in the session's clients, which
	// back-channel logout needs to know whom to tell when the session ends. On Postgres the
	// code and the record are one statement, outside any transaction (no BEGIN, no COMMIT).
	{"authorize with a session", 3, 2},
	// The code read, its conditional invalidation and the refresh-token insert.
	{"code exchange", 3, 0},
	// The token read, its conditional rotation, the rule revoking the grant's earlier access
	// tokens (DESIGN.md §3) and the new refresh-token insert.
	{"refresh", 4, 0},
	// Nothing: the client is cached and the token stateless.
	{"client_credentials", 0, 0},
	// The revocation-rule query, and the user's email for username: the token measured
	// carries the email scope (without it, the rule query alone).
	{"introspection", 2, 0},
	// The revocation-rule query and the user.
	{"userinfo", 2, 0},
}

// TestStatementBudget counts the statements of every hot operation, so the round trips
// per request cannot creep back up.
func TestStatementBudget(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		log := &statementLog{}
		store := b.OpenWith(t, storage.WithLogger(slog.New(log)))
		e := newEnvOnStore(t, store, func(string) provider.Config {
			return provider.Config{JanitorInterval: -1, KeyReloadInterval: time.Hour}
		})
		user := e.user(t, "budget@example.com", "Budget")
		web := e.client(t, provider.ClientSpec{ID: "web", FirstParty: true})
		svc := e.client(t, provider.ClientSpec{ID: "svc", GrantTypes: []string{"client_credentials"}, Scopes: []string{"manage_permissions"}})
		rp := e.relyingParty(t, web)
		br := e.browser(t)
		rp.signIn(t, e, br, user.Email) // logs in and caches the client
		ccForm := url.Values{"grant_type": {"client_credentials"}, "scope": {"manage_permissions"}}
		if r := e.token(t, svc, ccForm); r.status != http.StatusOK { // caches svc
			t.Fatalf("client_credentials: %s", r)
		}

		ar := rp.start()
		var code string
		var issued, refreshed, cc jsonResponse
		ops := map[string]func(){
			"authorize with a session": func() {
				code = wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rp.config.RedirectURL))
			},
			"code exchange": func() {
				issued = e.token(t, web, url.Values{"grant_type": {"authorization_code"}, "code": {code},
					"redirect_uri": {rp.config.RedirectURL}, "code_verifier": {ar.verifier}})
			},
			"refresh": func() {
				refreshed = e.refresh(t, web, issued.body["refresh_token"].(string))
			},
			"client_credentials": func() { cc = e.token(t, svc, ccForm) },
			"introspection": func() {
				if got := e.introspect(t, web, refreshed.body["access_token"].(string)); got["active"] != true {
					t.Errorf("introspection: got %v, want active", got)
				}
			},
			"userinfo": func() {
				if r := e.userinfo(t, refreshed.body["access_token"].(string)); r.status != http.StatusOK {
					t.Errorf("userinfo: got %s", r)
				}
			},
		}
		for _, budget := range statementBudget {
			sqls := log.during(ops[budget.op])
			want := budget.want
			if b.Name == "postgres" && budget.onPostgres != 0 {
				want = budget.onPostgres
			}
			if len(sqls) != want {
				t.Errorf("%s: %d statements, want %d:\n\t%s", budget.op, len(sqls), want, strings.Join(sqls, "\n\t"))
			}
			if budget.op == "code exchange" && issued.status != http.StatusOK {
				t.Fatalf("code exchange: %s", issued)
			}
			if budget.op == "refresh" && refreshed.status != http.StatusOK {
				t.Fatalf("refresh: %s", refreshed)
			}
		}
		if cc.status != http.StatusOK {
			t.Errorf("client_credentials: %s", cc)
		}
	})
}
