package publicauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ratelimit"
	"github.com/gatehouse-id/gatehouse/storage"
)

// captureMailer keeps the last mail, so the fuzz target can put a real PIN or link token
// into an input.
type captureMailer struct {
	mu   sync.Mutex
	last publicauth.Message
}

func (m *captureMailer) Send(_ context.Context, msg publicauth.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = msg
	return nil
}

func (m *captureMailer) lastMail() publicauth.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// apiRoutes are the JSON routes of publicauth, by the fuzz input's route number.
var apiRoutes = []struct{ method, path string }{
	{http.MethodPost, "/api/public/register"},
	{http.MethodPost, "/api/public/login"},
	{http.MethodPost, "/api/public/verify-pin"},
	{http.MethodPost, "/api/public/request-magic-link"},
	{http.MethodPost, "/api/public/resend-verification"},
	{http.MethodPost, "/api/public/request-password-reset"},
	{http.MethodPost, "/api/public/reset-password"},
	{http.MethodPost, "/api/public/confirm-password"},
	{http.MethodPost, "/api/public/logout"},
	{http.MethodPost, "/api/admin/login"},
	{http.MethodPost, "/api/admin/logout"},
	{http.MethodPatch, "/api/admin/users/$USER"},
	{http.MethodGet, "/api/public/session"},
	{http.MethodGet, "/api/sso/validate"},
	{http.MethodPatch, "/api/public/me"},
	{http.MethodGet, "/api/public/me"},
}

var linkToken = regexp.MustCompile(`token=([A-Za-z0-9_%-]+)`)

// FuzzPublicAPI feeds arbitrary JSON bodies to every route of the public and admin JSON
// API, through the real handlers on a real SQLite file, with or without the admin's
// admin-session and public-session cookies. In a body "$CHALLENGE" and "$PIN" become a fresh PIN challenge of the
// user and its mailed PIN, "$TOKEN" the token of a freshly mailed password-reset link, so
// the PIN and mail-link inputs are fuzzed around real secrets. Properties: no 5xx; every
// answer is JSON; an error is {"error": the status text, "message": non-empty}; a 2xx of a
// state-changing route never answers a body that failed to decode as one JSON object.
func FuzzPublicAPI(f *testing.F) {
	ctx := context.Background()
	store, err := storage.Open(ctx, "sqlite:"+filepath.Join(f.TempDir(), "gatehouse.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = store.Close() })
	if err := store.Migrate(ctx); err != nil {
		f.Fatal(err)
	}
	if err := store.CreateClient(ctx, &storage.Client{ID: "app", RedirectURIs: []string{appRedirectURI}}); err != nil {
		f.Fatal(err)
	}
	mailer := &captureMailer{}
	svc, err := publicauth.New(publicauth.Config{
		Secret: testSecret, InsecureCookies: true, MagicLinkAllowedOrigins: []string{"https://allowed.example"},
	}, store,
		publicauth.WithLogger(discardLogger()),
		publicauth.WithMailer(mailer),
		publicauth.WithLimiter(ratelimit.NewMemory()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(svc.Close)
	const email, password = "fuzz@example.com", "correct horse battery staple"
	user, err := svc.CreateUser(ctx, publicauth.UserInput{Email: email, Password: password, Name: "Fuzz", Verified: true, Role: publicauth.RoleAdmin})
	if err != nil {
		f.Fatal(err)
	}
	router := mux.NewRouter()
	svc.Routes(router)
	rec := httptest.NewRecorder()
	if _, err := svc.StartSession(ctx, rec, user, publicauth.SessionAdmin, "password"); err != nil {
		f.Fatal(err)
	}
	// The "signed in" inputs carry both sessions: the admin routes read admin-session,
	// /api/public/me public-session.
	if _, err := svc.StartSession(ctx, rec, user, publicauth.SessionPublic, "password"); err != nil {
		f.Fatal(err)
	}
	adminCookies := rec.Result().Cookies()
	var peers atomic.Uint32

	for i, seed := range []string{
		`{"email":"new@example.com","password":"another long password 1","name":"New"}`,
		`{"email":"fuzz@example.com","password":"correct horse battery staple"}`,
		`{"challengeId":"$CHALLENGE","pin":"$PIN"}`,
		`{"email":"fuzz@example.com","redirect_uri":"https://allowed.example/x"}`,
		`{"email":"FUZZ@example.com"}`,
		`{"email":"fuzz@example.com"}`,
		`{"token":"$TOKEN","password":"a brand new password 2"}`,
		`{"token":"$TOKEN","password":"correct horse battery staple"}`,
		`{}`,
		`{"email":"fuzz@example.com","password":"correct horse battery staple"}`,
		`{}`,
		`{"name":"Renamed","role":"user","status":"disabled"}`,
		``,
		``,
		`{"name":"Renamed","givenName":"A","birthdate":"1990-02-30","zoneinfo":"Europe/Nowhere","website":"javascript:x","address":{"country":1}}`,
		``,
	} {
		f.Add(uint8(i), seed, true)
		f.Add(uint8(i), seed, false)
	}
	for _, seed := range []string{
		`{"challengeId":"$CHALLENGE","pin":" $PIN "}`,
		`{"challengeId":"$CHALLENGE","pin":"000000"}`,
		`{"challengeId":"` + strings.Repeat("a", 200) + `","pin":"1"}`,
		`{"challengeId":1,"pin":[]}`,
		`{"email":"fuzz@example.com","redirect_uri":"https://allowed.example@evil.example/"}`,
		`{"email":"fuzz@example.com","redirect_uri":"https://app.example/callback"}`,
		`{"email":"fuzz@example.com","redirect_uri":"https://app.example/callback/../x"}`,
		`{"email":"fuzz@example.com","redirect_uri":"javascript:alert(1)"}`,
		`{"email":"a@b@c","password":"x","name":"` + strings.Repeat("é", 300) + `"}`,
		`{"email":"fuzz@example.com","password":null}`,
		`{"email":"fuzz@example.com"} {}`,
		`[{"email":"fuzz@example.com"}]`,
		`{"token":"$TOKEN$TOKEN","password":"x"}`,
		`{"token":"` + strings.Repeat("x", 5000) + `"}`,
		`{"email":"other@example.com","phoneNumberVerified":true}`,
		`{"picture":"https://` + strings.Repeat("a", 3000) + `","locale":"\u0000"}`,
	} {
		for route := range apiRoutes {
			if strings.Contains(seed, "challengeId") && apiRoutes[route].path != "/api/public/verify-pin" {
				continue
			}
			f.Add(uint8(route), seed, false)
		}
	}
	f.Fuzz(func(t *testing.T, routeNo uint8, body string, admin bool) {
		route := apiRoutes[int(routeNo)%len(apiRoutes)]
		if strings.Contains(body, "$CHALLENGE") || strings.Contains(body, "$PIN") {
			svc.Wait() // earlier inputs' mail is out, so the last mail is the PIN's
			c, err := svc.StartPINChallenge(ctx, user, publicauth.SessionPublic, "password", publicauth.Destination{Resume: "/"})
			if err != nil {
				return // the per-account mail limit: no fresh challenge for this input
			}
			svc.Wait()
			subject := mailer.lastMail().Subject
			body = strings.ReplaceAll(body, "$CHALLENGE", c.ID)
			body = strings.ReplaceAll(body, "$PIN", subject[strings.LastIndexByte(subject, ' ')+1:])
		}
		if strings.Contains(body, "$TOKEN") {
			if err := svc.RequestPasswordReset(ctx, email); err != nil {
				t.Fatal(err)
			}
			svc.Wait()
			m := linkToken.FindStringSubmatch(mailer.lastMail().Text)
			if m == nil {
				return // the per-account mail limit: no fresh link
			}
			token, _ := url.QueryUnescape(m[1])
			body = strings.ReplaceAll(body, "$TOKEN", token)
		}
		path := strings.ReplaceAll(route.path, "$USER", user.ID)
		req := httptest.NewRequest(route.method, "http://localhost:8080"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		n := peers.Add(1)
		req.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:40000", byte(n>>16), byte(n>>8), byte(n))
		if admin {
			for _, c := range adminCookies {
				req.AddCookie(c)
			}
		}
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)
		what := fmt.Sprintf("%s %s %q (admin %v)", route.method, route.path, body, admin)
		if rec.Code >= 500 {
			t.Fatalf("%s: %d %s", what, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: %d with Content-Type %q", what, rec.Code, ct)
		}
		var answer map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%s: %d answer is not a JSON object: %q", what, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && (route.path == "/api/public/session" || route.path == "/api/sso/validate") {
			// The session checks answer 401 in the SSO interface's own shapes
			// ({"isValid": false}, {"success": false, …}).
			if _, ok := answer["isValid"]; !ok && answer["success"] != false {
				t.Fatalf("%s: %d answer %q", what, rec.Code, rec.Body)
			}
			return
		}
		if rec.Code >= 400 {
			msg, _ := answer["message"].(string)
			if answer["error"] != http.StatusText(rec.Code) || msg == "" {
				t.Fatalf("%s: %d error not in the shape {error, message}: %q", what, rec.Code, rec.Body)
			}
			return
		}
		trimmed := strings.TrimSpace(body)
		if route.method != http.MethodGet && !strings.HasSuffix(route.path, "logout") &&
			(!json.Valid([]byte(trimmed)) || !strings.HasPrefix(trimmed, "{")) {
			t.Fatalf("%s: %d for a body that is not one JSON object", what, rec.Code)
		}
	})
}
