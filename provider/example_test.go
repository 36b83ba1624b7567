package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"

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

// An API in the same process checks each access token with VerifyAccessToken: signature,
// expiry and revocation, as introspection would, without an HTTP round trip.
func ExampleProvider_VerifyAccessToken() {
	p, secret, cleanup := exampleProvider()
	defer cleanup()
	token := exampleClientToken(p, secret, "reports:read")

	at, err := p.VerifyAccessToken(context.Background(), token)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("subject:", at.Subject, "client:", at.ClientID, "scopes:", at.Scopes, "user:", at.UserBound)

	// A token that is not one of p's, like a revoked or expired one, is ErrInvalidToken.
	_, err = p.VerifyAccessToken(context.Background(), "forged."+token)
	fmt.Println("forged:", errors.Is(err, provider.ErrInvalidToken))
	// Output:
	// subject: reports client: reports scopes: [reports:read] user: false
	// forged: true
}

// RequireScopes guards a team's own API routes: a request without a valid token carrying
// every named scope gets an RFC 6750 answer, and the handler reads the token from the
// request context.
func ExampleProvider_RequireScopes() {
	p, secret, cleanup := exampleProvider()
	defer cleanup()

	mux := http.NewServeMux()
	mux.Handle("/api/reports", p.RequireScopes("reports:read")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at, _ := provider.AccessTokenFromContext(r.Context())
		fmt.Fprintln(w, "reports for", at.Subject)
	})))
	mux.Handle("/", p)

	for _, token := range []string{"", exampleClientToken(p, secret, "reports:read")} {
		req := httptest.NewRequest(http.MethodGet, "/api/reports", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("WWW-Authenticate"), strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 401 Bearer realm="https://sso.example.com" {"error":"invalid_request","error_description":"An access token is required."}
	// 200  reports for reports
}

// RequireUser guards a route that acts for a user: a client's own token
// (client_credentials) carries the scope but speaks for no user, so RequireUser refuses it
// where RequireScopes lets it through.
func ExampleProvider_RequireUser() {
	p, secret, cleanup := exampleProvider()
	defer cleanup()

	mux := http.NewServeMux()
	myReports := func(w http.ResponseWriter, r *http.Request) {
		at, _ := provider.AccessTokenFromContext(r.Context())
		fmt.Fprintln(w, "reports of user", at.Subject)
	}
	mux.Handle("/api/my/reports", p.RequireUser("reports:read")(http.HandlerFunc(myReports)))
	mux.Handle("/api/reports", p.RequireScopes("reports:read")(http.HandlerFunc(myReports)))
	mux.Handle("/", p)

	token := exampleClientToken(p, secret, "reports:read")
	for _, path := range []string{"/api/my/reports", "/api/reports"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		var body struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		fmt.Println(path, rec.Code, body.Error)
	}
	// Output:
	// /api/my/reports 401 insufficient_user_authentication
	// /api/reports 200
}

// WithEvents tells a team's server what happened: here a sink logs each event with the
// fields it cares about, from the registration of the example's client on. It runs after the change committed, on the request's goroutine.
func ExampleWithEvents() {
	sink := func(ctx context.Context, e provider.Event) {
		switch e := e.(type) {
		case *provider.TokenIssued:
			fmt.Println(e.Name(), e.GrantType, e.ClientID, e.Scopes)
		case *provider.TokenRevoked:
			fmt.Println(e.Name(), e.Kind, e.ClientID)
		case *provider.LoginFailed:
			fmt.Println(e.Name(), e.Method, e.Reason, e.Metadata().ClientIP)
		default:
			fmt.Println(e.Name())
		}
	}
	p, secret, cleanup := exampleProvider(provider.WithEvents(sink))
	defer cleanup()

	token := exampleClientToken(p, secret, "reports:read")
	revoke := httptest.NewRequest(http.MethodPost, "/api/oauth/revoke", strings.NewReader(url.Values{"token": {token}}.Encode()))
	revoke.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	revoke.SetBasicAuth("reports", secret)
	p.ServeHTTP(httptest.NewRecorder(), revoke)

	login := httptest.NewRequest(http.MethodPost, "/api/public/login",
		strings.NewReader(`{"email": "nobody@example.com", "password": "not a password of ours"}`))
	login.Header.Set("Content-Type", "application/json")
	p.ServeHTTP(httptest.NewRecorder(), login)
	// Output:
	// client.created
	// token.issued client_credentials reports [reports:read]
	// token.revoked access_token reports
	// login.failed password bad_credentials 192.0.2.1
}

// exampleProvider is a provider on a fresh SQLite file, with opts, and one client_credentials
// client, "reports", which may ask for reports:read, and that client's secret; cleanup
// closes the provider and removes the file.
func exampleProvider(opts ...provider.Option) (p *provider.Provider, secret string, cleanup func()) {
	dir, err := os.MkdirTemp("", "gatehouse-example")
	if err != nil {
		log.Fatal(err)
	}
	p, err = provider.New(provider.Config{
		Issuer: "https://sso.example.com",
		DSN:    "sqlite:" + filepath.Join(dir, "gatehouse.db"),
		Secret: []byte("an example system secret of 32+ bytes"),
	}, append([]provider.Option{provider.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)...)
	if err != nil {
		log.Fatal(err)
	}
	client, err := p.CreateClient(context.Background(), provider.ClientSpec{
		ID: "reports", Name: "Reports", GrantTypes: []string{"client_credentials"}, Scopes: []string{"reports:read"},
	})
	if err != nil {
		log.Fatal(err)
	}
	return p, client.ClientSecret, func() { p.Close(); os.RemoveAll(dir) }
}

// exampleClientToken asks p's token endpoint for an access token of the "reports" client
// (authenticated by secret) with scope.
func exampleClientToken(p *provider.Provider, secret, scope string) string {
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}
	req := httptest.NewRequest(http.MethodPost, "/api/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("reports", secret)
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	var resp struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(rec.Body).Decode(&resp); err != nil || resp.AccessToken == "" {
		log.Fatalf("token endpoint: %d %v", rec.Code, err)
	}
	return resp.AccessToken
}

// staffDirectory stands for a company's own user table: WithAccounts reads it through
// the three methods of provider.Accounts. (A real one queries its database and compares
// password hashes in constant time.)
type staffDirectory map[string]struct {
	account  provider.Account
	password string
}

func (d staffDirectory) AccountByID(_ context.Context, id string) (*provider.Account, error) {
	for _, s := range d {
		if s.account.ID == id {
			return &s.account, nil
		}
	}
	return nil, provider.ErrAccountNotFound
}

func (d staffDirectory) AccountByEmail(_ context.Context, email string) (*provider.Account, error) {
	if s, ok := d[strings.ToLower(email)]; ok {
		return &s.account, nil
	}
	return nil, provider.ErrAccountNotFound
}

func (d staffDirectory) Authenticate(_ context.Context, email, password string) (*provider.Account, error) {
	s, ok := d[strings.ToLower(email)]
	if !ok || s.password != password {
		return nil, provider.ErrBadCredentials
	}
	return &s.account, nil
}

// A team keeps its accounts in its own user table: logins check passwords there, tokens
// carry its ids as sub, and WithClaims adds a claim of its own. The directory cannot create
// accounts (it is no provider.AccountRegistrar), so registration answers 404.
func ExampleWithAccounts() {
	dir, err := os.MkdirTemp("", "gatehouse-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	staff := staffDirectory{"ann@acme.example": {
		account:  provider.Account{ID: "42", Email: "ann@acme.example", EmailVerified: true, Name: "Ann"},
		password: "correct horse battery staple",
	}}
	p, err := provider.New(provider.Config{
		Issuer:       "https://acme.example",
		DSN:          "sqlite:" + filepath.Join(dir, "gatehouse.db"),
		Secret:       []byte("an example system secret of 32+ bytes"),
		Registration: provider.RegistrationClosed,
	}, provider.WithAccounts(staff),
		provider.WithClaims(func(_ context.Context, r provider.ClaimsRequest) (map[string]any, error) {
			return map[string]any{"tenant": "acme"}, nil
		}),
		provider.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	for _, call := range []struct{ path, body string }{
		{"/api/public/login", `{"email": "ann@acme.example", "password": "correct horse battery staple"}`},
		{"/api/public/register", `{"email": "bob@acme.example", "password": "another fine passphrase", "name": "Bob"}`},
	} {
		req := httptest.NewRequest(http.MethodPost, call.path, strings.NewReader(call.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		var resp struct {
			User    struct{ ID string }
			Message string
		}
		_ = json.NewDecoder(rec.Body).Decode(&resp)
		fmt.Println(call.path, rec.Code, resp.User.ID+resp.Message)
	}
	// Output:
	// /api/public/login 200 42
	// /api/public/register 404 registration is not available
}
