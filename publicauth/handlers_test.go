package publicauth_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestRegister(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		t.Run("201 with the registration response", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			res := e.postJSON(t, "/api/public/register", map[string]string{
				"email": "  Alice@Example.com ", "password": "correct horse", "name": " Alice Liddell ",
			})
			wantStatus(t, res, http.StatusCreated)
			wantJSONHeaders(t, res)
			got := res.json(t)
			user, _ := got["user"].(map[string]any)
			id, _ := user["id"].(string)
			if u, err := uuid.Parse(id); err != nil || u.Version() != 4 {
				t.Errorf("user.id = %q, want a UUID v4", id)
			}
			if msg, _ := got["message"].(string); msg == "" {
				t.Errorf("message = %v, want a non-empty string", got["message"])
			}
			want := map[string]any{
				"success":          true,
				"message":          got["message"],
				"isAccountLinking": false,
				"loginMethods":     []any{"password"},
				"user": map[string]any{
					"id":        id,
					"email":     "Alice@Example.com",
					"name":      "Alice Liddell",
					"role":      "user",
					"createdAt": "2026-01-02T03:04:05Z",
				},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("body = %v, want %v", got, want)
			}
			stored, err := e.svc.UserByID(context.Background(), id)
			if err != nil {
				t.Fatalf("UserByID: %v", err)
			}
			if stored.Status != publicauth.StatusActive || stored.EmailVerified {
				t.Errorf("stored status %q, emailVerified %v; want %q, false", stored.Status, stored.EmailVerified, publicauth.StatusActive)
			}
			if !strings.HasPrefix(stored.PasswordHash, "$argon2id$v=19$m=7168,t=5,p=1$") {
				t.Errorf("stored password hash = %q, want an argon2id PHC string", stored.PasswordHash)
			}
		})

		for _, tc := range []struct {
			name        string
			existing    string // email registered first, if any
			contentType string
			body        string
			wantStatus  int
			wantBody    string
		}{
			{
				name:     "409 for an email taken in another case",
				existing: "alice@example.com", contentType: "application/json",
				body:       `{"email":"ALICE@example.COM","password":"correct horse","name":"Alice"}`,
				wantStatus: http.StatusConflict,
				wantBody:   `{"error":"Conflict","message":"email already registered"}`,
			},
			{
				name: "400 for an email that is not an address", contentType: "application/json",
				body:       `{"email":"alice.example.com","password":"correct horse","name":"Alice"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"email must be a valid email address"}`,
			},
			{
				name: "400 for an address with a display name", contentType: "application/json",
				body:       `{"email":"Alice <alice@example.com>","password":"correct horse","name":"Alice"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"email must be a valid email address"}`,
			},
			{
				name: "400 for a missing email", contentType: "application/json",
				body:       `{"password":"correct horse","name":"Alice"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"email is required"}`,
			},
			{
				name: "400 for a short password", contentType: "application/json",
				body:       `{"email":"alice@example.com","password":"short","name":"Alice"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"password must be at least 8 characters"}`,
			},
			{
				name: "400 for a breached password", contentType: "application/json",
				body:       `{"email":"alice@example.com","password":"Password123","name":"Alice"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"password is too common: it appears in lists of breached passwords"}`,
			},
			{
				name: "400 for a password containing the email", contentType: "application/json",
				body:       `{"email":"alice@example.com","password":"my Alice@Example.com!","name":"Alice"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"password must not be or contain your email address"}`,
			},
			{
				name: "400 for a missing name", contentType: "application/json",
				body:       `{"email":"alice@example.com","password":"correct horse"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"name is required"}`,
			},
			{
				name: "400 for a blank name", contentType: "application/json",
				body:       `{"email":"alice@example.com","password":"correct horse","name":"   "}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"name is required"}`,
			},
			{
				name: "400 for a name over 200 characters", contentType: "application/json",
				body:       `{"email":"alice@example.com","password":"correct horse","name":"` + strings.Repeat("a", 201) + `"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"name must be at most 200 characters"}`,
			},
			{
				name: "400 for a field of the wrong type", contentType: "application/json",
				body:       `{"email":5,"password":"correct horse","name":"Alice"}`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"email must be a JSON string"}`,
			},
			{
				name: "400 for a body that is not JSON", contentType: "application/json",
				body:       `email=alice@example.com`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"request body is not valid JSON"}`,
			},
			{
				name: "400 for a JSON array", contentType: "application/json",
				body:       `[]`,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"request body must be a JSON object"}`,
			},
			{
				name: "400 for an empty body", contentType: "application/json",
				body:       ``,
				wantStatus: http.StatusBadRequest,
				wantBody:   `{"error":"Bad Request","message":"request body is empty"}`,
			},
			{
				name: "413 for a body over 64 KiB", contentType: "application/json",
				body:       `{"email":"alice@example.com","name":"Alice","password":"` + strings.Repeat("x", 70<<10) + `"}`,
				wantStatus: http.StatusRequestEntityTooLarge,
				wantBody:   `{"error":"Request Entity Too Large","message":"request body must be at most 65536 bytes"}`,
			},
			{
				name: "415 for a form body", contentType: "application/x-www-form-urlencoded",
				body:       `email=alice@example.com&password=correct+horse&name=Alice`,
				wantStatus: http.StatusUnsupportedMediaType,
				wantBody:   `{"error":"Unsupported Media Type","message":"Content-Type must be application/json"}`,
			},
			{
				name: "415 without a Content-Type", contentType: "",
				body:       `{"email":"alice@example.com","password":"correct horse","name":"Alice"}`,
				wantStatus: http.StatusUnsupportedMediaType,
				wantBody:   `{"error":"Unsupported Media Type","message":"Content-Type must be application/json"}`,
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, publicauth.Config{})
				if tc.existing != "" {
					e.register(t, tc.existing, "another password", "Existing")
				}
				res := e.do(t, http.MethodPost, "/api/public/register", tc.contentType, tc.body)
				wantStatus(t, res, tc.wantStatus)
				wantJSONHeaders(t, res)
				wantBody(t, res, tc.wantBody)
			})
		}

		t.Run("201 with a charset parameter", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			res := e.do(t, http.MethodPost, "/api/public/register", "application/json; charset=utf-8",
				`{"email":"bob@example.com","password":"correct horse","name":"Bob"}`)
			wantStatus(t, res, http.StatusCreated)
		})

		t.Run("400 naming an unknown field, and no account", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			res := e.do(t, http.MethodPost, "/api/public/register", "application/json",
				`{"email":"bob@example.com","password":"correct horse","name":"Bob","plan":"gold"}`)
			wantStatus(t, res, http.StatusBadRequest)
			wantBody(t, res, `{"error":"Bad Request","message":"unknown field \"plan\""}`)
			res = e.do(t, http.MethodPost, "/api/public/register", "application/json",
				`{"email":"bob@example.com","password":"correct horse","name":"Bob"}`)
			wantStatus(t, res, http.StatusCreated)
		})
	})
}

func TestLogin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		t.Run("200 with the user and a public-session cookie", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			u := e.register(t, "Alice@Example.com", "correct horse", "Alice")
			res := e.postJSON(t, "/api/public/login", map[string]string{"email": "alice@example.com", "password": "correct horse"})
			wantStatus(t, res, http.StatusOK)
			wantJSONHeaders(t, res)
			want := map[string]any{
				"success": true,
				"user": map[string]any{
					"id":            u.ID,
					"email":         "Alice@Example.com",
					"name":          "Alice",
					"role":          "user",
					"status":        "active",
					"emailVerified": false,
					"loginMethods":  []any{"password"},
				},
				"loginMethods": []any{"password"},
			}
			if got := res.json(t); !reflect.DeepEqual(got, want) {
				t.Errorf("body = %v, want %v", got, want)
			}
			c := res.cookie(publicauth.CookiePublic)
			if c == nil {
				t.Fatalf("no %s cookie set", publicauth.CookiePublic)
			}
			if c.Value == "" || !c.HttpOnly || c.Path != "/" || c.SameSite != http.SameSiteLaxMode ||
				!c.Secure || c.MaxAge != int((7*24*time.Hour).Seconds()) {
				t.Errorf("cookie = %+v, want a value, HttpOnly, Path=/, SameSite=Lax, Secure (the default), Max-Age=604800", c)
			}
			if res.cookie(publicauth.CookieAdmin) != nil {
				t.Errorf("login set an %s cookie, want none", publicauth.CookieAdmin)
			}
		})

		t.Run("no Secure attribute only when configured for plain http", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{InsecureCookies: true, SessionLifespan: time.Hour})
			e.register(t, "alice@example.com", "correct horse", "Alice")
			res := e.postJSON(t, "/api/public/login", map[string]string{"email": "alice@example.com", "password": "correct horse"})
			wantStatus(t, res, http.StatusOK)
			c := res.cookie(publicauth.CookiePublic)
			if c == nil || c.Secure || c.MaxAge != 3600 {
				t.Errorf("cookie = %+v, want no Secure attribute and Max-Age=3600", c)
			}
		})

		t.Run("401 with one body for unknown email and wrong password", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			e.register(t, "alice@example.com", "correct horse", "Alice")
			const want = `{"error":"Unauthorized","message":"invalid email or password"}`
			var bodies []string
			for _, creds := range []map[string]string{
				{"email": "nobody@example.com", "password": "correct horse"},
				{"email": "alice@example.com", "password": "wrong horse!"},
				{"email": "not an email", "password": "correct horse"},
			} {
				res := e.postJSON(t, "/api/public/login", creds)
				wantStatus(t, res, http.StatusUnauthorized)
				wantJSONHeaders(t, res)
				wantBody(t, res, want)
				if c := res.cookie(publicauth.CookiePublic); c != nil {
					t.Errorf("failed login set cookie %+v, want none", c)
				}
				bodies = append(bodies, string(res.body))
			}
			for i := range bodies {
				if bodies[i] != bodies[0] {
					t.Errorf("body %d = %q, want byte-identical to %q", i, bodies[i], bodies[0])
				}
			}
		})

		t.Run("403 for a disabled account with the right password only", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			u := e.register(t, "alice@example.com", "correct horse", "Alice")
			disable(t, e, u)
			res := e.postJSON(t, "/api/public/login", map[string]string{"email": "alice@example.com", "password": "correct horse"})
			wantStatus(t, res, http.StatusForbidden)
			wantBody(t, res, `{"error":"Forbidden","message":"account disabled"}`)
			res = e.postJSON(t, "/api/public/login", map[string]string{"email": "alice@example.com", "password": "wrong horse!"})
			wantStatus(t, res, http.StatusUnauthorized)
		})

		t.Run("400 for a missing password", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			res := e.postJSON(t, "/api/public/login", map[string]string{"email": "alice@example.com"})
			wantStatus(t, res, http.StatusBadRequest)
			wantBody(t, res, `{"error":"Bad Request","message":"password is required"}`)
		})

		t.Run("415 for a form body", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			res := e.do(t, http.MethodPost, "/api/public/login", "text/plain", `{"email":"a@example.com","password":"x"}`)
			wantStatus(t, res, http.StatusUnsupportedMediaType)
		})

		t.Run("logging in again replaces the session", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			e.register(t, "alice@example.com", "correct horse", "Alice")
			first := e.login(t, "alice@example.com", "correct horse")
			res := e.postJSON(t, "/api/public/login", map[string]string{"email": "alice@example.com", "password": "correct horse"}, first)
			wantStatus(t, res, http.StatusOK)
			second := res.cookie(publicauth.CookiePublic)
			if second == nil || second.Value == first.Value {
				t.Fatalf("second login cookie = %+v, want a new value", second)
			}
			wantStatus(t, e.do(t, http.MethodGet, "/api/public/session", "", "", first), http.StatusUnauthorized)
			wantStatus(t, e.do(t, http.MethodGet, "/api/public/session", "", "", second), http.StatusOK)
		})
	})
}

func TestSession(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		const invalid = `{"isValid":false,"error":"Unauthorized","message":"no valid session"}`

		t.Run("200 with the spec's fields", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			u := e.register(t, "alice@example.com", "correct horse", "Alice")
			c := e.login(t, "alice@example.com", "correct horse")
			res := e.do(t, http.MethodGet, "/api/public/session", "", "", c)
			wantStatus(t, res, http.StatusOK)
			wantJSONHeaders(t, res)
			want := map[string]any{
				"isValid": true,
				"user": map[string]any{
					"id":            u.ID,
					"email":         "alice@example.com",
					"name":          "Alice",
					"role":          "user",
					"status":        "active",
					"emailVerified": false,
					"loginMethods":  []any{"password"},
				},
			}
			if got := res.json(t); !reflect.DeepEqual(got, want) {
				t.Errorf("body = %v, want %v", got, want)
			}
		})

		t.Run("200 until just before expiry", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			e.register(t, "alice@example.com", "correct horse", "Alice")
			c := e.login(t, "alice@example.com", "correct horse")
			e.clock.Advance(7*24*time.Hour - time.Second)
			wantStatus(t, e.do(t, http.MethodGet, "/api/public/session", "", "", c), http.StatusOK)
		})

		for _, tc := range []struct {
			name string
			// cookie turns a valid session cookie into the one sent (nil: send none).
			cookie func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie
		}{
			{"401 without a cookie", func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie { return nil }},
			{"401 with a tampered cookie", func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie {
				v := []byte(valid.Value)
				i := len(v) / 2
				if v[i] == 'A' {
					v[i] = 'B'
				} else {
					v[i] = 'A'
				}
				return &http.Cookie{Name: valid.Name, Value: string(v)}
			}},
			{"401 with a cookie of another secret", func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie {
				// No mail worker: it would take the env's queued mail, sealed under the env's secret.
				other, err := publicauth.New(publicauth.Config{Secret: []byte("another secret of at least 32 bytes!"), MailRetryInterval: -1}, e.store,
					publicauth.WithLimiter(ratelimit.NewMemory()), publicauth.WithLogger(discardLogger()))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(other.Close)
				u, err := e.store.UserByEmail(context.Background(), "alice@example.com")
				if err != nil {
					t.Fatal(err)
				}
				return startSession(t, other, u, publicauth.SessionPublic)
			}},
			{"401 after logout with the old cookie", func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie {
				wantStatus(t, e.do(t, http.MethodPost, "/api/public/logout", "", "", valid), http.StatusOK)
				return valid
			}},
			{"401 after expiry", func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie {
				e.clock.Advance(7*24*time.Hour + time.Second)
				return valid
			}},
			{"401 once the account is disabled", func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie {
				u, err := e.store.UserByEmail(context.Background(), "alice@example.com")
				if err != nil {
					t.Fatal(err)
				}
				disable(t, e, u)
				return valid
			}},
			{"401 after all the user's sessions end", func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie {
				u, err := e.store.UserByEmail(context.Background(), "alice@example.com")
				if err != nil {
					t.Fatal(err)
				}
				if err := e.svc.EndAllSessions(context.Background(), u.ID); err != nil {
					t.Fatalf("EndAllSessions: %v", err)
				}
				return valid
			}},
			{"401 for the value under the admin cookie's name", func(t *testing.T, e *env, valid *http.Cookie) *http.Cookie {
				return &http.Cookie{Name: publicauth.CookieAdmin, Value: valid.Value}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, publicauth.Config{})
				e.register(t, "alice@example.com", "correct horse", "Alice")
				valid := e.login(t, "alice@example.com", "correct horse")
				var cookies []*http.Cookie
				if c := tc.cookie(t, e, valid); c != nil {
					cookies = append(cookies, c)
				}
				res := e.do(t, http.MethodGet, "/api/public/session", "", "", cookies...)
				wantStatus(t, res, http.StatusUnauthorized)
				wantJSONHeaders(t, res)
				wantBody(t, res, invalid)
			})
		}
	})
}

func TestLogout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, tc := range []struct {
			name       string
			withCookie bool
		}{
			{"200 and cookie cleared with a session", true},
			{"200 and cookie cleared without a session", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, publicauth.Config{})
				e.register(t, "alice@example.com", "correct horse", "Alice")
				var cookies []*http.Cookie
				if tc.withCookie {
					cookies = append(cookies, e.login(t, "alice@example.com", "correct horse"))
				}
				res := e.do(t, http.MethodPost, "/api/public/logout", "", "", cookies...)
				wantStatus(t, res, http.StatusOK)
				wantJSONHeaders(t, res)
				wantBody(t, res, `{"success":true}`)
				c := res.cookie(publicauth.CookiePublic)
				if c == nil || c.Value != "" || c.MaxAge >= 0 || c.Path != "/" || !c.HttpOnly {
					t.Errorf("cookie = %+v, want an empty, expired, HttpOnly cookie on Path=/", c)
				}
			})
		}

		t.Run("200 twice with the same cookie", func(t *testing.T) {
			e := newEnv(t, b, publicauth.Config{})
			e.register(t, "alice@example.com", "correct horse", "Alice")
			c := e.login(t, "alice@example.com", "correct horse")
			wantStatus(t, e.do(t, http.MethodPost, "/api/public/logout", "", "", c), http.StatusOK)
			wantStatus(t, e.do(t, http.MethodPost, "/api/public/logout", "", "", c), http.StatusOK)
		})
	})
}

// disable sets the user's status to disabled in the store.
func disable(t *testing.T, e *env, u *publicauth.User) {
	t.Helper()
	setStatus(t, e, u, publicauth.StatusDisabled)
}

// setStatus sets the user's status in the store.
func setStatus(t *testing.T, e *env, u *publicauth.User, status string) {
	t.Helper()
	if _, err := e.store.ChangeUser(context.Background(), u.ID, publicauth.UserChange{Status: &status}); err != nil {
		t.Fatalf("ChangeUser: %v", err)
	}
}
