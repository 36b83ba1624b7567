package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
)

// The fuzz targets of the provider drive one real Provider on a real SQLite file, built
// once per fuzz function (per fuzzing worker), through its own handler: garbage must never
// reach a 5xx, and every error must be in its spec's shape.

// fuzzEnv is a provider for a fuzz target: a client "rp" (secret fuzzSecret, redirect URI
// rpRedirectURI, authorization_code and client_credentials) and a counter that gives each
// request its own client address, so the per-IP limit of failed requests does not turn
// every later input into the same 429.
type fuzzEnv struct {
	*env
	client provider.ClientInfo
	peers  atomic.Uint32
}

const fuzzSecret = "fuzz-client-secret-0123456789abcdef"

func newFuzzEnv(f *testing.F) *fuzzEnv {
	f.Helper()
	ctx := context.Background()
	store, err := storage.Open(ctx, "sqlite:"+filepath.Join(f.TempDir(), "gatehouse.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = store.Close() })
	if err := store.Migrate(ctx); err != nil {
		f.Fatal(err)
	}
	e := newEnvAt(f, store, "", func(string) provider.Config {
		// Every fuzzed request comes from an address of its own (serve), all for one client:
		// its limit on stored requests would soon answer 429 to everything.
		return provider.Config{PublicAuth: provider.PublicAuthConfig{AuthorizeClientLimit: provider.RateLimit{Limit: -1}}}
	})
	c := e.client(f, provider.ClientSpec{
		ID: "rp", Secret: fuzzSecret, RedirectURIs: []string{rpRedirectURI},
		GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"},
	})
	return &fuzzEnv{env: e, client: c}
}

// serve runs req through the provider's handler from an address of its own.
func (fe *fuzzEnv) serve(req *http.Request) *httptest.ResponseRecorder {
	n := fe.peers.Add(1)
	req.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:40000", byte(n>>16), byte(n>>8), byte(n))
	rec := httptest.NewRecorder()
	fe.p.ServeHTTP(rec, req)
	return rec
}

// push makes a pushed authorization request for rp and returns its request_uri.
func (fe *fuzzEnv) push(t testing.TB) string {
	form := url.Values{
		"response_type": {"code"}, "redirect_uri": {rpRedirectURI}, "scope": {"openid"},
		"state": {"fuzz-state-123"}, "nonce": {"fuzz-nonce-123"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"},
	}
	req := httptest.NewRequest(http.MethodPost, fe.issuer+"/api/oauth/par", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("rp", fuzzSecret)
	rec := fe.serve(req)
	var body struct {
		RequestURI string `json:"request_uri"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusCreated || body.RequestURI == "" {
		t.Fatalf("push: %d %s", rec.Code, rec.Body)
	}
	return body.RequestURI
}

// idToken signs an ID token of rp's user, as the provider issues them.
func (fe *fuzzEnv) idToken(t testing.TB) string {
	raw, err := fe.p.SignWithActiveKey(map[string]any{
		"iss": fe.issuer, "sub": "user-1", "aud": "rp", "iat": 1700000000, "exp": 1700003600,
	}, map[string]any{"typ": "JWT"})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// wantOAuthErrorShape fails t unless rec is a JSON object with a non-empty string "error"
// and, when present, a string "error_description".
func wantOAuthErrorShape(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: %d answer is not a JSON object: %q", what, rec.Code, rec.Body)
	}
	if e, ok := body["error"].(string); !ok || e == "" {
		t.Fatalf("%s: %d answer has no error code: %q", what, rec.Code, rec.Body)
	}
	if d, ok := body["error_description"]; ok {
		if _, ok := d.(string); !ok {
			t.Fatalf("%s: error_description is not a string: %q", what, rec.Body)
		}
	}
}

// authorizeBase is a valid authorization request of rp.
const authorizeBase = "client_id=rp&redirect_uri=https%3A%2F%2Frp.example.com%2Fcallback&response_type=code&scope=openid" +
	"&state=fuzz-state-123&nonce=fuzz-nonce-123&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"

// FuzzAuthorizeQuery feeds arbitrary authorization requests (GET query, or POST form) to
// the authorization endpoint: the provider's own parsing, fosite's NewAuthorizeRequest,
// the redirect-URI comparison, id_token_hint ("$HINT" in the input becomes a real ID token)
// and PAR's request_uri ("$PAR" becomes a request_uri freshly pushed by rp). Properties: no
// 5xx; a redirect that leaves the provider goes to rp's registered redirect URI (scheme,
// host, port and path exactly), never anywhere else; a JSON answer is an OAuth error.
func FuzzAuthorizeQuery(f *testing.F) {
	fe := newFuzzEnv(f)
	for _, seed := range []string{
		authorizeBase,
		strings.Replace(authorizeBase, "rp.example.com%2Fcallback", "evil.example.net%2Fcallback", 1),
		strings.Replace(authorizeBase, "rp.example.com%2Fcallback", "rp.example.com%2Fcallback%2F..%2Fother", 1),
		strings.Replace(authorizeBase, "rp.example.com%2Fcallback", "rp.example.com%3A443%2Fcallback", 1),
		strings.Replace(authorizeBase, "https%3A%2F%2Frp.example.com", "HTTPS%3A%2F%2FRP.EXAMPLE.COM", 1),
		strings.Replace(authorizeBase, "%2Fcallback", "%2Fcallback%3Fx%3D1", 1),
		strings.Replace(authorizeBase, "%2Fcallback", "%2Fcallback%23frag", 1),
		strings.Replace(authorizeBase, "https%3A%2F%2Frp.example.com", "https%3A%2F%2Frp.example.com%40evil.example.net", 1),
		strings.Replace(authorizeBase, "https%3A%2F%2Frp.example.com", "https%3A%2F%2Frp.example.com%5C%40evil.example.net", 1),
		authorizeBase + "&prompt=none&id_token_hint=$HINT",
		authorizeBase + "&prompt=none&id_token_hint=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
		"client_id=rp&request_uri=$PAR",
		"client_id=rp&request_uri=$PAR&redirect_uri=https%3A%2F%2Fevil.example.net%2F",
		"client_id=other&request_uri=$PAR",
		"client_id=rp&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Abogus",
		"client_id=rp&request_uri=https%3A%2F%2Fevil.example.net%2Freq",
		authorizeBase + "&request=eyJhbGciOiJub25lIn0.e30.",
		authorizeBase + "&response_mode=form_post",
		authorizeBase + "&response_type=token+id_token",
		authorizeBase + "&max_age=-1&prompt=login+none",
		authorizeBase + "&scope=openid&scope=email",
		"client_id=rp&client_id=other&redirect_uri=x",
		"%zz=1&client_id",
		"",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, query string, post bool) {
		if strings.Contains(query, "$PAR") {
			query = strings.ReplaceAll(query, "$PAR", url.QueryEscape(fe.push(t)))
		}
		query = strings.ReplaceAll(query, "$HINT", fe.idToken(t))
		target := fe.issuer + "/api/oauth/authorize"
		var req *http.Request
		if post {
			req = httptest.NewRequest(http.MethodPost, target, strings.NewReader(query))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req = httptest.NewRequest(http.MethodGet, target, nil)
			req.URL.RawQuery = query
		}
		rec := fe.serve(req)
		what := fmt.Sprintf("authorize %q (post %v)", query, post)
		if rec.Code >= 500 {
			t.Fatalf("%s: %d %s", what, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Header().Get("Content-Type"), "json") {
			wantOAuthErrorShape(t, what, rec)
		}
		if rec.Code < 300 || rec.Code > 399 {
			return
		}
		loc, err := url.Parse(rec.Header().Get("Location"))
		if err != nil {
			t.Fatalf("%s: Location %q: %v", what, rec.Header().Get("Location"), err)
		}
		if !loc.IsAbs() || "http://"+loc.Host == fe.issuer {
			return // the provider's own login or consent page
		}
		if loc.Scheme != "https" || loc.Host != "rp.example.com" || loc.Path != "/callback" || loc.User != nil {
			t.Fatalf("%s: redirected to %q, which is not the registered %s", what, loc, rpRedirectURI)
		}
	})
}

// tokenBase is a client_credentials request of rp.
const tokenBase = "grant_type=client_credentials&scope=openid"

// FuzzTokenForm feeds arbitrary token request forms (and client authentication in the
// header or the body) to the token endpoint. Properties: no 5xx; a 200 only for rp's
// client_credentials grant (surrounding spaces aside, which fosite tolerates); every other answer a 4xx OAuth error in JSON that no cache
// keeps.
func FuzzTokenForm(f *testing.F) {
	fe := newFuzzEnv(f)
	for _, seed := range []string{
		tokenBase,
		"grant_type=authorization_code&code=abc&redirect_uri=https%3A%2F%2Frp.example.com%2Fcallback&code_verifier=x",
		"grant_type=refresh_token&refresh_token=abc.def",
		"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=x",
		"grant_type=password&username=a&password=b",
		"grant_type=client_credentials&client_id=rp&client_secret=" + fuzzSecret,
		"grant_type=client_credentials&client_id=rp&client_secret=wrong",
		"grant_type=client_credentials&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_assertion=a.b.c",
		"grant_type=&grant_type=client_credentials",
		"grant_type=client_credentials&scope=%00",
		"%zz",
		"",
	} {
		f.Add(seed, uint8(0))
		f.Add(seed, uint8(1))
		f.Add(seed, uint8(2))
	}
	f.Fuzz(func(t *testing.T, form string, auth uint8) {
		req := httptest.NewRequest(http.MethodPost, fe.issuer+"/api/oauth/token", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		switch auth % 3 {
		case 1:
			req.SetBasicAuth("rp", fuzzSecret)
		case 2:
			req.SetBasicAuth("rp", "wrong")
		}
		rec := fe.serve(req)
		what := fmt.Sprintf("token %q (auth %d)", form, auth%3)
		if rec.Code == http.StatusOK {
			parsed, _ := url.ParseQuery(form)
			// fosite reads grant_type as a space-separated list (so "client_credentials "
			// passes, found by this target): one grant is still required.
			if strings.Join(strings.Fields(parsed.Get("grant_type")), " ") != "client_credentials" {
				t.Fatalf("%s: 200 %s", what, rec.Body)
			}
			return
		}
		if rec.Code < 400 || rec.Code > 499 {
			t.Fatalf("%s: %d %s", what, rec.Code, rec.Body)
		}
		wantOAuthErrorShape(t, what, rec)
		if cc := rec.Header().Get("Cache-Control"); !strings.Contains(cc, "no-store") {
			t.Fatalf("%s: Cache-Control %q", what, cc)
		}
	})
}

// FuzzIDTokenHint feeds arbitrary id_token_hint values to their check: raw strings, and
// claims and typ headers the harness signs with the provider's own active key, so the
// checks behind the signature are reached. Properties: an accepted hint is issued by this
// provider, has a subject, and is no access token (no client_id or scope claim, typ JWT or
// absent).
func FuzzIDTokenHint(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add("", `{"iss":"$ISS","sub":"u1","aud":"rp","exp":1}`, "JWT")
	f.Add("", `{"iss":"$ISS","sub":"u1","aud":"rp","exp":1}`, "")
	f.Add("", `{"iss":"$ISS","sub":"u1","client_id":"rp","scope":"openid"}`, "at+jwt")
	f.Add("", `{"iss":"$ISS","sub":""}`, "JWT")
	f.Add("", `{"iss":"https://evil.example.net","sub":"u1"}`, "JWT")
	f.Add("", `{"iss":"$ISS","sub":1}`, "jwt")
	f.Add("", `{"iss":"$ISS","sub":"u1","nbf":99999999999}`, "JWT")
	f.Add(fe.idToken(f), "", "")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "", "")
	f.Add("a.b.c", "", "")
	f.Fuzz(func(t *testing.T, raw, claimsJSON, typ string) {
		hint := raw
		if hint == "" {
			var claims map[string]any
			if json.Unmarshal([]byte(strings.ReplaceAll(claimsJSON, "$ISS", fe.issuer)), &claims) != nil || claims == nil {
				return
			}
			header := map[string]any{}
			if typ != "" {
				header["typ"] = typ
			}
			var err error
			if hint, err = fe.p.SignWithActiveKey(claims, header); err != nil {
				return
			}
		}
		claims, err := fe.p.VerifyIDTokenHint(hint)
		if err != nil {
			return
		}
		if iss, _ := claims["iss"].(string); iss != fe.issuer {
			t.Fatalf("hint %q accepted with iss %v", hint, claims["iss"])
		}
		if sub, _ := claims["sub"].(string); sub == "" {
			t.Fatalf("hint %q accepted without a subject", hint)
		}
		for _, c := range []string{"client_id", "scope"} {
			if _, ok := claims[c]; ok {
				t.Fatalf("hint %q accepted with an access token's %s", hint, c)
			}
		}
		if typ != "" && raw == "" && !strings.EqualFold(typ, "JWT") {
			t.Fatalf("hint of typ %q accepted", typ)
		}
	})
}

// FuzzNormalizeUserCode feeds arbitrary typed device user codes to their normaliser.
// Properties: the result is "" or a code of the alphabet's length; it is idempotent; the
// code as displayed (XXXX-XXXX), in lower case, or with spaces normalises back to itself.
func FuzzNormalizeUserCode(f *testing.F) {
	for _, seed := range []string{"BCDF-GHJK", "bcdfghjk", " bcdf ghjk ", "BCDF-GHJ", "BCDF-GHJKL", "ÄBCD-FGHJ", "bcdf\u2010ghjk", "BCDF--GHJK", "0000-0000", "ſBCD-FGHJ"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, typed string) {
		code := provider.NormalizeUserCode(typed)
		if code == "" {
			return
		}
		if len(code) != 8 || strings.ToUpper(code) != code {
			t.Fatalf("NormalizeUserCode(%q) = %q", typed, code)
		}
		if again := provider.NormalizeUserCode(code); again != code {
			t.Fatalf("NormalizeUserCode not idempotent: %q -> %q -> %q", typed, code, again)
		}
		shown := provider.DisplayUserCode(code)
		for _, variant := range []string{shown, strings.ToLower(shown), " " + code[:4] + " " + code[4:] + " "} {
			if got := provider.NormalizeUserCode(variant); got != code {
				t.Fatalf("NormalizeUserCode(%q) = %q, want %q", variant, got, code)
			}
		}
	})
}

// hostedRoutes are the hosted pages and the bearer-protected endpoint a browser or client
// reaches, by the fuzz input's route number.
var hostedRoutes = []struct{ method, path string }{
	{http.MethodGet, "/login"},
	{http.MethodPost, "/login"},
	{http.MethodPost, "/pin"},
	{http.MethodPost, "/magic-link"},
	{http.MethodGet, "/api/public/magic-login"},
	{http.MethodPost, "/api/public/magic-login"},
	{http.MethodGet, "/api/public/verify-email"},
	{http.MethodPost, "/api/public/verify-email"},
	{http.MethodGet, "/reset-password"},
	{http.MethodPost, "/reset-password"},
	{http.MethodPost, "/forgot-password"},
	{http.MethodGet, "/device"},
	{http.MethodPost, "/device"},
	{http.MethodGet, "/device/confirm"},
	{http.MethodGet, "/consent"},
	{http.MethodPost, "/consent"},
	{http.MethodPost, "/logout"},
	{http.MethodGet, "/api/oauth/userinfo"},
	{http.MethodGet, "/api/oauth/logout"},
	{http.MethodGet, "/account"},
	{http.MethodPost, "/account"},
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// FuzzHostedPages feeds arbitrary queries, forms and Authorization and DPoP headers to the
// hosted pages (login, PIN, the mailed links' pages, the device user-code form, consent,
// logout) and userinfo, with the browser's real CSRF cookie ("$CSRF" in a form becomes its
// field). Properties: no 5xx; a redirect that leaves the provider goes only to rp's
// registered redirect URI; a JSON answer is an OAuth error or, from userinfo, claims
// (which need a valid token the fuzzer cannot make).
func FuzzHostedPages(f *testing.F) {
	fe := newFuzzEnv(f)
	fe.user(f, "fuzz@example.com", "Fuzz")
	page := fe.serve(httptest.NewRequest(http.MethodGet, fe.issuer+"/login", nil))
	m := csrfField.FindStringSubmatch(page.Body.String())
	cookies := page.Result().Cookies()
	if m == nil || len(cookies) == 0 {
		f.Fatalf("GET /login: %d, no CSRF cookie or field", page.Code)
	}
	csrf := html.UnescapeString(m[1])
	for i, seed := range []string{
		"", "csrf_token=$CSRF&email=fuzz%40example.com&password=" + url.QueryEscape(testPassword),
		"csrf_token=$CSRF&challenge=abc&pin=123456", "csrf_token=$CSRF&email=fuzz%40example.com",
		"token=abc", "csrf_token=$CSRF&token=abc", "token=" + strings.Repeat("x", 300), "csrf_token=$CSRF&token=abc&password=x",
		"token=abc", "csrf_token=$CSRF&token=abc&password=a+new+long+password", "csrf_token=$CSRF&email=x",
		"user_code=BCDF-GHJK", "csrf_token=$CSRF&user_code=bcdf+ghjk", "user_code=%00",
		"request=abc", "csrf_token=$CSRF&request=abc&decision=allow", "csrf_token=$CSRF",
		"", "id_token_hint=a.b.c&post_logout_redirect_uri=https%3A%2F%2Fevil.example.net",
	} {
		f.Add(uint8(i), seed, "")
	}
	f.Add(uint8(17), "", "Bearer abc")
	f.Add(uint8(17), "", "DPoP eyJhbGciOiJFUzI1NiJ9.e30.x")
	f.Add(uint8(17), "access_token=abc", "Basic Zm9vOmJhcg==")
	f.Add(uint8(0), "request=%zz&request=x", "")
	f.Add(uint8(20), "csrf_token=$CSRF&name=New+Name&birthdate=2000-13-01&website=ftp%3A%2F%2Fx", "")
	f.Fuzz(func(t *testing.T, routeNo uint8, input, authorization string) {
		route := hostedRoutes[int(routeNo)%len(hostedRoutes)]
		input = strings.ReplaceAll(input, "$CSRF", url.QueryEscape(csrf))
		var req *http.Request
		if route.method == http.MethodGet {
			req = httptest.NewRequest(http.MethodGet, fe.issuer+route.path, nil)
			req.URL.RawQuery = input
		} else {
			req = httptest.NewRequest(route.method, fe.issuer+route.path, strings.NewReader(input))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for _, c := range cookies {
			req.AddCookie(c)
		}
		if authorization != "" {
			req.Header["Authorization"] = []string{authorization}
			req.Header["Dpop"] = []string{authorization}
		}
		rec := fe.serve(req)
		what := fmt.Sprintf("%s %s %q (Authorization %q)", route.method, route.path, input, authorization)
		if rec.Code >= 500 {
			t.Fatalf("%s: %d %s", what, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Header().Get("Content-Type"), "json") && rec.Code >= 400 {
			wantOAuthErrorShape(t, what, rec)
		}
		if rec.Code < 300 || rec.Code > 399 {
			return
		}
		loc, err := url.Parse(rec.Header().Get("Location"))
		if err != nil {
			t.Fatalf("%s: Location %q: %v", what, rec.Header().Get("Location"), err)
		}
		if !loc.IsAbs() || "http://"+loc.Host == fe.issuer {
			return
		}
		if loc.Scheme != "https" || loc.Host != "rp.example.com" || loc.Path != "/callback" || loc.User != nil {
			t.Fatalf("%s: redirected to %q, which is not the registered %s", what, loc, rpRedirectURI)
		}
	})
}
