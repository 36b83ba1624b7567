package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/gatehouse-id/gatehouse/provider"
)

// A team's Go server creates a provider on its own database, registers a client and mounts
// the provider as an http.Handler.
func Example() {
	dir, err := os.MkdirTemp("", "gatehouse-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	p, err := provider.New(provider.Config{
		Issuer: "https://sso.example.com",
		DSN:    "sqlite:" + filepath.Join(dir, "gatehouse.db"),
		Secret: []byte("an example system secret of 32+ bytes"),
	}, provider.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	client, err := p.CreateClient(context.Background(), provider.ClientSpec{
		ID:           "webapp",
		Name:         "Web App",
		RedirectURIs: []string{"https://app.example.com/callback"},
		FirstParty:   true,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("client:", client.ClientID, client.Scopes, client.GrantTypes, client.IDTokenAlg)
	fmt.Println("secret shown once:", client.ClientSecret != "")

	// Mount p on a mux (here: one request through a recorder).
	mux := http.NewServeMux()
	mux.Handle("/", p)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/openid-configuration", nil))
	var doc struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := json.NewDecoder(rec.Body).Decode(&doc); err != nil {
		log.Fatal(err)
	}
	fmt.Println("discovery:", rec.Code, doc.Issuer, doc.TokenEndpoint)
	// Output:
	// client: webapp [openid profile email offline_access] [authorization_code refresh_token] RS256
	// secret shown once: true
	// discovery: 200 https://sso.example.com https://sso.example.com/api/oauth/token
}
