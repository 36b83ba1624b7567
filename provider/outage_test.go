package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/cutproxy"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestDatabaseOutage: while Postgres is unreachable the provider answers 503 (OAuth's
// temporarily_unavailable, the JSON API's Service Unavailable, /readyz-style Ready errors),
// and once it is back the same process serves again with no restart.
func TestDatabaseOutage(t *testing.T) {
	var backend *storagetest.Backend
	for _, b := range storagetest.Backends(t) {
		if b.Name == "postgres" {
			backend = &b
		}
	}
	if backend == nil {
		t.Skip("needs Postgres (" + storagetest.EnvPostgresDSN + ")")
	}
	dsn, err := url.Parse(backend.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := cutproxy.Start(t, dsn.Host)
	dsn.Host = proxy.Addr()

	ctx := context.Background()
	store, err := storage.Open(ctx, dsn.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	p, err := provider.New(provider.Config{Issuer: "http://127.0.0.1", Secret: []byte(strings.Repeat("o", 32)), JanitorInterval: -1},
		provider.WithStore(store), provider.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	client, err := p.CreateClient(ctx, provider.ClientSpec{ID: "svc", GrantTypes: []string{"client_credentials"}, AuthMethod: "client_secret_post"})
	if err != nil {
		t.Fatal(err)
	}
	// A client not yet used: the outage finds it in no cache.
	cold, err := p.CreateClient(ctx, provider.ClientSpec{ID: "cold", GrantTypes: []string{"client_credentials"}, AuthMethod: "client_secret_post"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	tokenFor := func(c provider.ClientInfo) (status int, code, accessToken string) {
		resp, err := http.PostForm(srv.URL+"/api/oauth/token", url.Values{
			"grant_type": {"client_credentials"}, "client_id": {c.ClientID}, "client_secret": {c.ClientSecret}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error       string `json:"error"`
			AccessToken string `json:"access_token"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error, body.AccessToken
	}
	token := func() (status int, code, accessToken string) { return tokenFor(client) }
	login := func() int {
		resp, err := http.Post(srv.URL+"/api/public/login", "application/json", strings.NewReader(`{"email":"a@example.com","password":"whatever it is"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// A few grants before the outage put the client in memory: a lookup that overlaps the
	// invalidation the creations' notifications cause is not cached, the next one is.
	var accessToken string
	for range 3 {
		var status int
		if status, _, accessToken = token(); status != http.StatusOK {
			t.Fatalf("before the outage: got %d, want 200", status)
		}
	}
	api := httptest.NewServer(p.RequireScopes()(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	t.Cleanup(api.Close)

	proxy.SetDown(true)
	// A client the database must be asked about gets 503.
	if status, code, _ := tokenFor(cold); status != http.StatusServiceUnavailable || code != "temporarily_unavailable" {
		t.Errorf("token of an uncached client during the outage: got %d %q, want 503 temporarily_unavailable", status, code)
	}
	// client_credentials of a cached client needs no database (the client from memory, the
	// token stateless, DESIGN.md §6): it goes on working through the outage.
	if status, code, _ := token(); status != http.StatusOK {
		t.Errorf("token of a cached client during the outage: got %d %q, want 200", status, code)
	}
	if status := login(); status != http.StatusServiceUnavailable {
		t.Errorf("login during the outage: got %d, want 503", status)
	}
	if err := p.Ready(ctx); err == nil {
		t.Error("Ready during the outage: got nil, want an error")
	}
	// A token whose revocation cannot be checked is neither accepted nor called invalid.
	if _, err := p.VerifyAccessToken(ctx, accessToken); !errors.Is(err, provider.ErrUnavailable) || errors.Is(err, provider.ErrInvalidToken) {
		t.Errorf("VerifyAccessToken during the outage: got %v, want ErrUnavailable", err)
	}
	req, err := http.NewRequest(http.MethodGet, api.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("RequireScopes during the outage: got %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}

	proxy.SetDown(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The uncached client's grant needs the database: it works again once it is back.
		status, _, _ := tokenFor(cold)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the outage: still %d after 10s, want 200", status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status := login(); status != http.StatusUnauthorized {
		t.Errorf("login after the outage: got %d, want 401 (unknown user)", status)
	}
}
