package publicauth_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage"
	// The examples and tests open SQLite databases: link its driver.
	_ "github.com/gatehouse-id/gatehouse/storage/sqlite"
)

// A Service over the SQLite store, serving the /api/public/* endpoints on a router: register,
// log in, and validate the session the login cookie carries.
func ExampleService_Routes() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "publicauth-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := storage.Open(ctx, "sqlite:"+filepath.Join(dir, "gatehouse.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	secret := make([]byte, publicauth.MinSecretLen)
	if _, err := rand.Read(secret); err != nil {
		log.Fatal(err)
	}
	svc, err := publicauth.New(publicauth.Config{Secret: secret}, store,
		publicauth.WithLimiter(ratelimit.NewMemory()),
		publicauth.WithMailer(publicauth.NewLogMailer(slog.New(slog.DiscardHandler))))
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close() // stops the mail worker; queued mail stays in the outbox
	r := mux.NewRouter()
	svc.Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()

	jar, err := cookiejar.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	send := func(method, path, body string) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		res.Body.Close()
		fmt.Println(method, path, res.Status)
	}
	send(http.MethodPost, "/api/public/register", `{"email":"alice@example.com","password":"correct horse","name":"Alice"}`)
	send(http.MethodPost, "/api/public/login", `{"email":"alice@example.com","password":"correct horse"}`)
	send(http.MethodGet, "/api/public/session", "")
	send(http.MethodPost, "/api/public/logout", "")
	send(http.MethodGet, "/api/public/session", "")
	// Output:
	// POST /api/public/register 201 Created
	// POST /api/public/login 200 OK
	// GET /api/public/session 200 OK
	// POST /api/public/logout 200 OK
	// GET /api/public/session 401 Unauthorized
}
