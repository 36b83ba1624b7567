package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// socialButtons returns the social login links of a login page, by label.
func socialButtons(t *testing.T, p page) map[string]string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(p.body))
	if err != nil {
		t.Fatalf("parse HTML of %s: %v", p.url, err)
	}
	out := map[string]string{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "a" && attr(n, "class") == "social-button" && n.FirstChild != nil {
			out[strings.TrimPrefix(n.FirstChild.Data, "Continue with ")] = attr(n, "href")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// publicSession reads GET /api/public/session with b's cookies.
func (e *env) publicSession(t *testing.T, b *browser) map[string]any {
	t.Helper()
	p := b.get(t, e.issuer+"/api/public/session")
	var body map[string]any
	if err := json.Unmarshal([]byte(p.body), &body); err != nil {
		t.Fatalf("session: %v: %s", err, p)
	}
	return body
}

// wantLoginMethods asserts that b is signed in as userID with exactly methods.
func wantLoginMethods(t *testing.T, e *env, b *browser, userID string, methods ...string) {
	t.Helper()
	s := e.publicSession(t, b)
	user, _ := s["user"].(map[string]any)
	if s["isValid"] != true || user["id"] != userID {
		t.Fatalf("session: got %v, want a valid session of %s", s, userID)
	}
	var got []string
	for _, m := range user["loginMethods"].([]any) {
		got = append(got, m.(string))
	}
	if !slices.Equal(got, methods) {
		t.Errorf("loginMethods: got %v, want %v", got, methods)
	}
}

// wantNoSession asserts that b carries no valid public session.
func wantNoSession(t *testing.T, e *env, b *browser) {
	t.Helper()
	if s := e.publicSession(t, b); s["isValid"] != false {
		t.Errorf("session: got %v, want none", s)
	}
}

// wantNoAccount asserts that nothing was created or linked for the identity and the email.
func wantNoAccount(t *testing.T, e *env, provider, subject, email string) {
	t.Helper()
	ctx := context.Background()
	if u, err := e.store.UserByIdentity(ctx, provider, subject); !errors.Is(err, publicauth.ErrIdentityNotFound) {
		t.Errorf("identity %s/%s: got user %v (err %v), want none linked", provider, subject, u, err)
	}
	if email != "" {
		if u, err := e.store.UserByEmail(ctx, email); !errors.Is(err, publicauth.ErrUserNotFound) {
			t.Errorf("user %s: got %v (err %v), want none", email, u, err)
		}
	}
}

func TestSocialLoginGoogle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		g := newFakeUpstream(t, "google")
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{Google: g.config()}})
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		g.signIn(fakeProfile{Sub: "g-ada", Email: "ada@example.com", Name: "Ada Lovelace", Verified: true})

		// The login page offers Google (and only Google); its button resumes the request.
		br := socialBrowser(t, e, g.srv.URL)
		ar := rp.start()
		p := br.get(t, ar.String())
		buttons := socialButtons(t, p)
		href, ok := buttons["Google"]
		if !ok || len(buttons) != 1 || !strings.HasPrefix(href, "/api/auth/google/login?request=") {
			t.Fatalf("login page buttons: got %v, want one Google button carrying the request", buttons)
		}
		p = br.get(t, e.issuer+href)
		tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
		for claim, want := range map[string]any{"email": "ada@example.com", "email_verified": true, "name": "Ada Lovelace"} {
			if tok.claims[claim] != want {
				t.Errorf("ID token %s: got %v, want %v", claim, tok.claims[claim], want)
			}
		}
		u, err := e.store.UserByIdentity(context.Background(), "google", "g-ada")
		if err != nil {
			t.Fatalf("UserByIdentity: %v", err)
		}
		if u.ID != tok.claims["sub"] || u.PasswordHash != "" || !u.EmailVerified || u.Role != publicauth.RoleUser {
			t.Errorf("created user: got %+v, want a verified social-only user, the token's subject", u)
		}
		wantLoginMethods(t, e, br, u.ID, "google")

		// Another browser, straight to Google through provider=google: the same account.
		br2 := socialBrowser(t, e, g.srv.URL)
		ar2 := rp.start(oauth2.SetAuthURLParam("provider", "google"))
		tok2 := rp.exchange(t, ar2, wantCode(t, e, ar2, callback(t, br2.get(t, ar2.String()), rpRedirectURI)))
		if tok2.claims["sub"] != u.ID {
			t.Errorf("second login: got sub %v, want %s", tok2.claims["sub"], u.ID)
		}
	})
}

func TestSocialLoginFacebookLinksVerifiedAccount(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		f := newFakeUpstream(t, "facebook")
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{Facebook: f.config()}})
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		grace := e.user(t, "grace@example.com", "Grace Hopper")
		f.signIn(fakeProfile{Sub: "fb-grace", Email: "Grace@Example.com", Name: "G. Hopper"})

		br := socialBrowser(t, e, f.srv.URL)
		ar := rp.start(oauth2.SetAuthURLParam("provider", "facebook"))
		tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI)))
		if tok.claims["sub"] != grace.ID || tok.claims["name"] != "Grace Hopper" {
			t.Errorf("ID token: got sub %v name %v, want the existing account %s unchanged", tok.claims["sub"], tok.claims["name"], grace.ID)
		}
		wantLoginMethods(t, e, br, grace.ID, "password", "facebook")
		// The link is in the audit trail, then the login it made.
		rs, err := e.store.ListSecurityEvents(context.Background(), storage.SecurityEventFilter{UserID: grace.ID}, storage.SecurityEventCursor{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rs {
			got = append(got, r.Type+" "+r.Method)
		}
		if want := []string{"user.registered operator", "identity.linked facebook", "login.succeeded facebook"}; !slices.Equal(got, want) {
			t.Errorf("audit trail of grace: got %v, want %v", got, want)
		}
	})
}

func TestSocialLoginLinksWhenSignedInToAnUnverifiedAccount(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		g := newFakeUpstream(t, "google")
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{Google: g.config()}})
		u, err := e.p.CreateUser(context.Background(), provider.UserSpec{Email: "lin@example.com", Password: testPassword, Name: "Lin"})
		if err != nil {
			t.Fatal(err)
		}
		g.signIn(fakeProfile{Sub: "g-lin", Email: "lin@example.com", Name: "Lin", Verified: true})

		// Not signed in: the unverified account is not taken over.
		br := socialBrowser(t, e, g.srv.URL)
		p := br.get(t, e.issuer+"/api/auth/google/login")
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "Sign in to it with your password first") {
			t.Fatalf("got %s, want the 403 refusal page", p)
		}
		wantNoAccount(t, e, "google", "g-lin", "")
		wantNoSession(t, e, br)

		// Signed in with the password first, the same sign-in links Google to the account.
		req, _ := http.NewRequest(http.MethodPost, e.issuer+"/api/public/login",
			strings.NewReader(`{"email":"lin@example.com","password":"`+testPassword+`"}`))
		req.Header.Set("Content-Type", "application/json")
		if p := br.do(t, req); p.status != http.StatusOK {
			t.Fatalf("password login: %s", p)
		}
		p = br.get(t, e.issuer+"/api/auth/google/login")
		if p.status != http.StatusOK || !strings.Contains(p.body, "lin@example.com") {
			t.Fatalf("got %s, want the signed-in page", p)
		}
		wantLoginMethods(t, e, br, u.ID, "password", "google")
	})
}

func TestSocialLoginReturnTo(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		g := newFakeUpstream(t, "google")
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{Google: g.config()}})
		e.client(t, provider.ClientSpec{}) // registers rpRedirectURI
		g.signIn(fakeProfile{Sub: "g-1", Email: "one@example.com", Name: "One", Verified: true})

		// A registered redirect URI: the browser lands there, signed in. The same URI with
		// another query is not registered.
		br := socialBrowser(t, e, g.srv.URL)
		p := br.get(t, e.issuer+"/api/auth/google/login?"+url.Values{"return_to": {rpRedirectURI + "?x=1"}}.Encode())
		if p.status != http.StatusBadRequest {
			t.Fatalf("return_to with an unregistered query: got %s, want 400", p)
		}
		p = br.get(t, e.issuer+"/api/auth/google/login?"+url.Values{"return_to": {rpRedirectURI}}.Encode())
		if p.status != http.StatusFound || p.header.Get("Location") != rpRedirectURI {
			t.Fatalf("got %s, want a 302 to %s, as any login that ends at a redirect URI", p, rpRedirectURI)
		}
		u, err := e.store.UserByIdentity(context.Background(), "google", "g-1")
		if err != nil {
			t.Fatal(err)
		}
		wantLoginMethods(t, e, br, u.ID, "google")

		// A path on our origin.
		br = socialBrowser(t, e, g.srv.URL)
		p = br.get(t, e.issuer+"/api/auth/google/login?return_to=%2Fapi%2Fpublic%2Fsession")
		if p.status != http.StatusOK || p.url.Path != "/api/public/session" || !strings.Contains(p.body, `"isValid":true`) {
			t.Fatalf("got %s, want the session document", p)
		}
	})
}

func TestSocialLoginUpstreamFailures(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		g := newFakeUpstream(t, "google")
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{
			Google: g.config(),
			// Short, so the hanging token endpoint below costs little; the default is 10 s.
			HTTPClient: &http.Client{Timeout: 500 * time.Millisecond},
		}})
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		g.signIn(fakeProfile{Sub: "g-x", Email: "x@example.com", Name: "X", Verified: true})
		tests := []struct {
			name  string
			setup func(f *fakeUpstream)
		}{
			{"token endpoint times out", func(f *fakeUpstream) { f.hang = make(chan struct{}) }},
			{"token endpoint fails", func(f *fakeUpstream) { f.tokenStatus = http.StatusInternalServerError }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				g.set(tt.setup)
				t.Cleanup(func() {
					g.set(func(f *fakeUpstream) {
						if f.hang != nil {
							close(f.hang)
							f.hang = nil
						}
						f.tokenStatus = 0
					})
				})
				br := socialBrowser(t, e, g.srv.URL)
				ar := rp.start(oauth2.SetAuthURLParam("provider", "google"))
				p := br.get(t, ar.String())
				if p.status != http.StatusOK || p.url.Path != "/login" || p.url.Query().Get("request") == "" ||
					!strings.Contains(p.body, "could not be reached or answered with an error") {
					t.Fatalf("got %s, want the login page of the request with a message", p)
				}
				wantNoAccount(t, e, "google", "g-x", "x@example.com")
				wantNoSession(t, e, br)
			})
		}
	})
}

// startSocialLogin begins a login at path in b and walks it to the provider, returning the
// callback URL the provider sends the browser to, unvisited.
func startSocialLogin(t *testing.T, e *env, b *browser, path string) string {
	t.Helper()
	stop := *b.client
	stop.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	nb := &browser{client: &stop}
	p := nb.get(t, e.issuer+path)
	if p.status != http.StatusFound {
		t.Fatalf("login: got %s, want a 302 to the provider", p)
	}
	p = nb.get(t, p.header.Get("Location"))
	if p.status != http.StatusFound {
		t.Fatalf("provider: got %s, want a 302 back", p)
	}
	return p.header.Get("Location")
}

func TestSocialLoginAttacks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		g := newFakeUpstream(t, "google")
		f := newFakeUpstream(t, "facebook")
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{Google: g.config(), Facebook: f.config()}})
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		e.user(t, "verified@example.com", "Verified Owner")
		if _, err := e.p.CreateUser(context.Background(), provider.UserSpec{
			Email: "unverified@example.com", Password: testPassword, Name: "Unverified Owner",
		}); err != nil {
			t.Fatal(err)
		}
		const badState = "Sign-in could not be verified"

		tests := []struct {
			name    string
			profile fakeProfile
			// run drives the browser and returns the page it ended on.
			run        func(t *testing.T, b *browser) page
			wantStatus int
			wantPath   string // of the final page, when it is ours
			wantBody   string
			// noAccount names the identity that must not exist afterwards.
			noAccount [3]string
		}{
			{
				name: "missing state", profile: fakeProfile{Sub: "g-a1", Email: "a1@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					cb, _ := url.Parse(startSocialLogin(t, e, b, "/api/auth/google/login"))
					q := cb.Query()
					q.Del("state")
					cb.RawQuery = q.Encode()
					return b.get(t, cb.String())
				},
				wantStatus: http.StatusBadRequest, wantBody: badState, noAccount: [3]string{"google", "g-a1", "a1@example.com"},
			},
			{
				name: "wrong state", profile: fakeProfile{Sub: "g-a2", Email: "a2@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					cb, _ := url.Parse(startSocialLogin(t, e, b, "/api/auth/google/login"))
					q := cb.Query()
					q.Set("state", randomString(43))
					cb.RawQuery = q.Encode()
					return b.get(t, cb.String())
				},
				wantStatus: http.StatusBadRequest, wantBody: badState, noAccount: [3]string{"google", "g-a2", "a2@example.com"},
			},
			{
				name: "callback without the cookie (another browser)", profile: fakeProfile{Sub: "g-a3", Email: "a3@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					cb := startSocialLogin(t, e, b, "/api/auth/google/login")
					return socialBrowser(t, e).get(t, cb)
				},
				wantStatus: http.StatusBadRequest, wantBody: badState, noAccount: [3]string{"google", "g-a3", "a3@example.com"},
			},
			{
				name: "replayed callback", profile: fakeProfile{Sub: "g-a4", Email: "a4@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					cb := startSocialLogin(t, e, b, "/api/auth/google/login")
					if p := b.get(t, cb); p.status != http.StatusOK || !strings.Contains(p.body, "a4@example.com") {
						t.Fatalf("first callback: got %s, want the signed-in page", p)
					}
					return b.get(t, cb)
				},
				wantStatus: http.StatusBadRequest, wantBody: badState,
			},
			{
				name: "state of another provider's login", profile: fakeProfile{Sub: "g-a5", Email: "a5@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					cb, _ := url.Parse(startSocialLogin(t, e, b, "/api/auth/google/login"))
					cb.Path = "/api/auth/facebook/callback"
					return b.get(t, cb.String())
				},
				wantStatus: http.StatusBadRequest, wantBody: badState, noAccount: [3]string{"google", "g-a5", "a5@example.com"},
			},
			{
				name:    "unverified upstream email of an existing account",
				profile: fakeProfile{Sub: "g-a6", Email: "verified@example.com", Verified: false},
				run: func(t *testing.T, b *browser) page {
					return b.get(t, rp.start(oauth2.SetAuthURLParam("provider", "google")).String())
				},
				wantStatus: http.StatusOK, wantPath: "/login", wantBody: "no verified email address",
				noAccount: [3]string{"google", "g-a6", ""},
			},
			{
				name:    "Facebook profile without an email",
				profile: fakeProfile{Sub: "fb-a7", Name: "No Mail"},
				run: func(t *testing.T, b *browser) page {
					return b.get(t, e.issuer+"/api/auth/facebook/login")
				},
				wantStatus: http.StatusOK, wantPath: "/login", wantBody: "no verified email address",
				noAccount: [3]string{"facebook", "fb-a7", ""},
			},
			{
				name:    "verified upstream email of an account whose own email is unverified",
				profile: fakeProfile{Sub: "g-a8", Email: "unverified@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					return b.get(t, e.issuer+"/api/auth/google/login")
				},
				wantStatus: http.StatusForbidden, wantBody: "An account with this email address already exists",
				noAccount: [3]string{"google", "g-a8", ""},
			},
			{
				name: "foreign return URL", profile: fakeProfile{Sub: "g-a9", Email: "a9@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					before := g.authorizationCount()
					p := b.get(t, e.issuer+"/api/auth/google/login?"+url.Values{"return_to": {evilURI}}.Encode())
					if g.authorizationCount() != before || p.header.Get("Location") != "" || p.header.Get("Set-Cookie") != "" {
						t.Errorf("a refused return URL still went to the provider or set a cookie: %s", p)
					}
					return p
				},
				wantStatus: http.StatusBadRequest, wantBody: "return_to must be", noAccount: [3]string{"google", "g-a9", "a9@example.com"},
			},
			{
				name: "protocol-relative return URL", profile: fakeProfile{Sub: "g-a10", Email: "a10@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					return b.get(t, e.issuer+"/api/auth/google/login?return_to=%2F%2Fevil.example.net%2Fx")
				},
				wantStatus: http.StatusBadRequest, wantBody: "return_to must be", noAccount: [3]string{"google", "g-a10", "a10@example.com"},
			},
			{
				name: "upstream denial", profile: fakeProfile{Sub: "g-a11", Email: "a11@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					g.set(func(f *fakeUpstream) { f.deny = true })
					ar := rp.start(oauth2.SetAuthURLParam("provider", "google"))
					p := b.get(t, ar.String())
					if p.url.Query().Get("request") == "" {
						t.Errorf("the login page after a denial lost the authorization request: %s", p.url)
					}
					return p
				},
				wantStatus: http.StatusOK, wantPath: "/login", wantBody: "was cancelled", noAccount: [3]string{"google", "g-a11", "a11@example.com"},
			},
			{
				name: "expired or unknown authorization request", profile: fakeProfile{Sub: "g-a12", Email: "a12@example.com", Verified: true},
				run: func(t *testing.T, b *browser) page {
					return b.get(t, e.issuer+"/api/auth/google/login?request="+randomString(43))
				},
				wantStatus: http.StatusBadRequest, wantBody: "Sign-in request expired", noAccount: [3]string{"google", "g-a12", "a12@example.com"},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				g.signIn(tt.profile)
				f.signIn(tt.profile)
				br := socialBrowser(t, e, g.srv.URL, f.srv.URL)
				p := tt.run(t, br)
				if p.status != tt.wantStatus || (tt.wantPath != "" && p.url.Path != tt.wantPath) || !strings.Contains(p.body, tt.wantBody) {
					t.Errorf("got %s\nwant %d %s with %q", p, tt.wantStatus, tt.wantPath, tt.wantBody)
				}
				if strings.Contains(strings.ToLower(p.body), "goroutine") || strings.Contains(p.body, "SQL") {
					t.Errorf("the answer leaks internals: %s", p)
				}
				if tt.noAccount[0] != "" {
					wantNoAccount(t, e, tt.noAccount[0], tt.noAccount[1], tt.noAccount[2])
				}
				if tt.wantStatus != http.StatusOK || tt.wantPath == "/login" {
					if tt.name != "replayed callback" {
						wantNoSession(t, e, br)
					}
				}
			})
		}
		// The existing accounts were left alone.
		for _, email := range []string{"verified@example.com", "unverified@example.com"} {
			u, err := e.store.UserByEmail(context.Background(), email)
			if err != nil || len(u.SocialProviders) != 0 {
				t.Errorf("%s: got %+v (err %v), want no linked provider", email, u, err)
			}
		}
	})
}

func TestSocialRoutesOfDisabledProviders(t *testing.T) {
	e := newEnv(t, storagetest.Backends(t)[0], provider.Config{})
	br := e.browser(t)
	for _, path := range []string{
		"/api/auth/google/login", "/api/auth/google/callback?state=x&code=y",
		"/api/auth/facebook/login", "/api/auth/oidc/corp/login", "/api/auth/oidc/corp/callback",
	} {
		r := e.call(t, http.MethodGet, path, nil, nil)
		if r.status != http.StatusNotFound || r.body["error"] != "Not Found" || r.body["message"] == "" {
			t.Errorf("%s: got %s, want 404 in the JSON error shape", path, r)
		}
	}
	if p := br.get(t, e.issuer+"/login"); p.status != http.StatusOK || strings.Contains(p.body, "social-button") {
		t.Errorf("login page without providers: got %s, want no social button", p)
	}
}

// TestSocialLoginOIDCUpstream federates one Gatehouse to another: the second is the first's
// OpenID Connect upstream, over real HTTP, and the relying party of the first ends with
// tokens for the user of the second.
func TestSocialLoginOIDCUpstream(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		upstream := newEnv(t, b, provider.Config{})
		upstream.user(t, "hedy@corp.example", "Hedy Lamarr")
		var client provider.ClientInfo
		e := newEnvFor(t, b, func(issuer string) provider.Config {
			client = upstream.client(t, provider.ClientSpec{
				Name: "Gatehouse downstream", FirstParty: true,
				RedirectURIs: []string{issuer + "/api/auth/oidc/corp/callback"},
				Scopes:       []string{"openid", "email", "profile"},
			})
			return provider.Config{Social: provider.SocialConfig{OIDC: []provider.OIDCUpstream{{
				Name: "corp", Issuer: upstream.issuer, ClientID: client.ClientID, ClientSecret: client.ClientSecret,
			}}}}
		})
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		br := socialBrowser(t, e, upstream.issuer)

		ar := rp.start()
		p := br.get(t, ar.String())
		href, ok := socialButtons(t, p)["corp"]
		if !ok {
			t.Fatalf("login page: no corp button on %s", p)
		}
		p = br.get(t, e.issuer+href)
		if u, _ := url.Parse(upstream.issuer); p.url.Host != u.Host || p.url.Path != "/login" {
			t.Fatalf("got %s, want the upstream's login page", p)
		}
		p = br.login(t, p, "hedy@corp.example")
		tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
		if tok.claims["email"] != "hedy@corp.example" || tok.claims["email_verified"] != true || tok.claims["name"] != "Hedy Lamarr" {
			t.Errorf("ID token: got %v, want Hedy's verified email and name", tok.claims)
		}
		u, err := e.store.UserByEmail(context.Background(), "hedy@corp.example")
		if err != nil || u.ID != tok.claims["sub"] || !slices.Equal(u.SocialProviders, []string{"oidc:corp"}) {
			t.Fatalf("downstream user: got %+v (err %v), want the token's subject linked to oidc:corp", u, err)
		}
		wantLoginMethods(t, e, br, u.ID, "oidc:corp")

		// A second sign-in, straight to the upstream through provider=oidc:corp, lands on the
		// same downstream account. (Both servers are on 127.0.0.1, so the browser's cookie
		// jar holds one public-session for both: the upstream may ask for the password again.)
		ar2 := rp.start(oauth2.SetAuthURLParam("provider", "oidc:corp"))
		p = br.get(t, ar2.String())
		if p.status == http.StatusOK && p.url.Path == "/login" {
			p = br.login(t, p, "hedy@corp.example")
		}
		tok2 := rp.exchange(t, ar2, wantCode(t, e, ar2, callback(t, p, rpRedirectURI)))
		if tok2.claims["sub"] != u.ID {
			t.Errorf("second sign-in: got sub %v, want %s", tok2.claims["sub"], u.ID)
		}
	})
}

func TestSocialConfigIsValidated(t *testing.T) {
	tests := []struct {
		name string
		cfg  provider.SocialConfig
		want string
	}{
		{"Google id without secret", provider.SocialConfig{Google: provider.SocialProvider{ClientID: "id"}}, "google: client id and client secret are both required"},
		{"Facebook secret without id", provider.SocialConfig{Facebook: provider.SocialProvider{ClientSecret: "s"}}, "facebook: client id and client secret are both required"},
		{"override not a URL", provider.SocialConfig{Google: provider.SocialProvider{ClientID: "id", ClientSecret: "s", TokenURL: "token"}}, "token URL"},
		{"plain http off loopback", provider.SocialConfig{OIDC: []provider.OIDCUpstream{{Name: "corp", Issuer: "http://idp.example", ClientID: "a", ClientSecret: "b"}}}, "must use https"},
		{"bad OIDC name", provider.SocialConfig{OIDC: []provider.OIDCUpstream{{Name: "Corp IdP", Issuer: "https://idp.example", ClientID: "a", ClientSecret: "b"}}}, "name must be"},
		{"OIDC name twice", provider.SocialConfig{OIDC: []provider.OIDCUpstream{
			{Name: "corp", Issuer: "https://idp.example", ClientID: "a", ClientSecret: "b"},
			{Name: "corp", Issuer: "https://other.example", ClientID: "a", ClientSecret: "b"},
		}}, `OIDC upstream "corp" is configured twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := provider.New(provider.Config{DSN: "sqlite:" + filepath.Join(t.TempDir(), "g.db"), Secret: testSecret, Social: tt.cfg})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestSocialLoginUnreachableOIDCUpstream(t *testing.T) {
	// Nothing listens on the discard port of loopback.
	e := newEnv(t, storagetest.Backends(t)[0], provider.Config{Social: provider.SocialConfig{OIDC: []provider.OIDCUpstream{{
		Name: "down", Issuer: "http://127.0.0.1:9", ClientID: "a", ClientSecret: "b",
	}}}})
	rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
	br := socialBrowser(t, e)
	p := br.get(t, rp.start(oauth2.SetAuthURLParam("provider", "oidc:down")).String())
	if p.status != http.StatusOK || p.url.Path != "/login" || !strings.Contains(p.body, "could not be reached") {
		t.Fatalf("got %s, want the login page with a message", p)
	}
	if _, ok := socialButtons(t, p)["down"]; !ok {
		t.Errorf("the login page lost the provider's button")
	}
}

// registerForm opens the hosted registration page in b and submits it as name, email and
// testPassword.
func registerForm(t *testing.T, e *env, b *browser, email, name string) page {
	t.Helper()
	p := b.get(t, e.issuer+"/register")
	if p.status != http.StatusOK {
		t.Fatalf("got %s, want the registration page", p)
	}
	f := p.form(t)
	f.fields.Set("email", email)
	f.fields.Set("name", name)
	f.fields.Set("password", testPassword)
	return b.post(t, f.action, f.fields)
}

func TestHostedRegisterAddsPasswordToSocialOnlyAccount(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		g := newFakeUpstream(t, "google")
		mail := smtptest.Start(t)
		mailer, err := publicauth.NewSMTPMailer(mail.URL(), "Gatehouse <noreply@gatehouse.test>")
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, b, provider.Config{Social: provider.SocialConfig{Google: g.config()}}, provider.WithMailer(mailer))
		ctx := context.Background()

		// Signed in through Google, the owner registers a password: it is added at once.
		g.signIn(fakeProfile{Sub: "g-kim", Email: "kim@example.com", Name: "Kim", Verified: true})
		br := socialBrowser(t, e, g.srv.URL)
		if p := br.get(t, e.issuer+"/api/auth/google/login"); p.status != http.StatusOK || !strings.Contains(p.body, "kim@example.com") {
			t.Fatalf("got %s, want the signed-in page", p)
		}
		kim, err := e.store.UserByIdentity(ctx, "google", "g-kim")
		if err != nil {
			t.Fatal(err)
		}
		if p := registerForm(t, e, br, "kim@example.com", "Kim K."); p.status != http.StatusOK || !strings.Contains(p.body, "kim@example.com") {
			t.Fatalf("got %s, want the signed-in page", p)
		}
		wantLoginMethods(t, e, br, kim.ID, "password", "google")

		// Not signed in to it, a registration only mails a link; opening it adds the password.
		g.signIn(fakeProfile{Sub: "g-lou", Email: "lou@example.com", Name: "Lou", Verified: true})
		if p := socialBrowser(t, e, g.srv.URL).get(t, e.issuer+"/api/auth/google/login"); p.status != http.StatusOK {
			t.Fatalf("got %s, want the signed-in page", p)
		}
		lou, err := e.store.UserByIdentity(ctx, "google", "g-lou")
		if err != nil {
			t.Fatal(err)
		}
		other := e.browser(t)
		if p := registerForm(t, e, other, "lou@example.com", "Lou"); p.status != http.StatusOK || !strings.Contains(p.body, "Check your email") {
			t.Fatalf("got %s, want the check-your-email page", p)
		}
		wantNoSession(t, e, other)
		if u, err := e.store.UserByID(ctx, lou.ID); err != nil || u.PasswordHash != "" {
			t.Fatalf("before the link: %+v, %v; want no password yet", u, err)
		}
		link := smtptest.Link(t, mail.WaitFor(t, "lou@example.com"))
		confirm := func(password string) page {
			t.Helper()
			f := other.get(t, link).form(t)
			return other.post(t, f.action, url.Values{
				"csrf_token": {f.fields.Get("csrf_token")}, "token": {f.fields.Get("token")}, "password": {password},
			})
		}
		// The owner types the password the registration chose; another one changes nothing.
		if p := confirm("not the registered password"); p.status != http.StatusUnauthorized {
			t.Fatalf("confirm with another password: got %s, want 401", p)
		}
		if p := confirm(testPassword); p.status != http.StatusOK || !strings.Contains(p.body, "Password added") {
			t.Fatalf("got %s, want the password-added page", p)
		}
		if p := confirm(testPassword); p.status != http.StatusBadRequest {
			t.Errorf("link used again: got %s, want 400", p)
		}
		req, _ := http.NewRequest(http.MethodPost, e.issuer+"/api/public/login",
			strings.NewReader(`{"email":"lou@example.com","password":"`+testPassword+`"}`))
		req.Header.Set("Content-Type", "application/json")
		if p := other.do(t, req); p.status != http.StatusOK {
			t.Fatalf("password login: %s", p)
		}
		wantLoginMethods(t, e, other, lou.ID, "password", "google")
	})
}

// TestSocialLoginBehindPINGate: an upstream login is a first factor like a password, so a
// user behind the PIN gate (an admin, say) is asked for the mailed PIN before any session.
func TestSocialLoginBehindPINGate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		mail := smtptest.Start(t)
		g := newFakeUpstream(t, "google")
		e := newEnv(t, b, provider.Config{
			Social:     provider.SocialConfig{Google: g.config()},
			PublicAuth: provider.PublicAuthConfig{SMTPURL: mail.URL(), MailFrom: "Gatehouse <no-reply@example.com>"},
		})
		u, err := e.p.CreateUser(context.Background(), provider.UserSpec{
			Email: "root@example.com", Password: testPassword, Name: "Root", Role: "admin", Verified: true, RequirePIN: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		g.signIn(fakeProfile{Sub: "g-root", Email: "root@example.com", Name: "Root", Verified: true})

		br := socialBrowser(t, e, g.srv.URL)
		p := br.get(t, e.issuer+"/api/auth/google/login")
		f := p.form(t)
		if p.status != http.StatusOK || !strings.HasSuffix(f.action, "/pin") {
			t.Fatalf("got %s, want the PIN page", p)
		}
		wantNoSession(t, e, br)
		pin := smtptest.PIN(t, mail.WaitFor(t, "root@example.com"))
		p = br.post(t, f.action, url.Values{
			"csrf_token": {f.fields.Get("csrf_token")}, "challenge": {f.fields.Get("challenge")}, "pin": {pin},
		})
		if p.status != http.StatusOK || !strings.Contains(p.body, "root@example.com") {
			t.Fatalf("got %s, want the signed-in page", p)
		}
		wantLoginMethods(t, e, br, u.ID, "password", "google")
	})
}
