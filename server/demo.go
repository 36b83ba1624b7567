package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/internal/mountpath"
	"github.com/gatehouse-id/gatehouse/provider"
)

// demoClientID is the public, first-party client the demo relying party logs in with.
const demoClientID = "gatehouse-demo"

// demoCookie keeps state, nonce and PKCE verifier between /demo/login and /demo/callback.
const demoCookie = "gatehouse-demo-flow"

// demoFlowLifetime is how long a started demo login may take.
const demoFlowLifetime = 10 * time.Minute

//go:embed demo.html
var demoHTML string

// ensureDemoClient makes sure the demo client exists with the redirect URIs of issuer,
// re-creating it when the issuer changed since it was registered.
func ensureDemoClient(ctx context.Context, p *provider.Provider, issuer string, logger *slog.Logger) error {
	spec := provider.ClientSpec{
		ID:                     demoClientID,
		Name:                   "Gatehouse demo",
		RedirectURIs:           []string{issuer + "/demo/callback"},
		PostLogoutRedirectURIs: []string{issuer + "/demo"},
		Public:                 true,
		FirstParty:             true,
	}
	info, err := p.ClientByID(ctx, demoClientID)
	switch {
	case err == nil && slices.Equal(info.RedirectURIs, spec.RedirectURIs) &&
		slices.Equal(info.PostLogoutRedirectURIs, spec.PostLogoutRedirectURIs) && info.Public && info.FirstParty:
	case err == nil:
		if err := p.DeleteClient(ctx, demoClientID); err != nil {
			return fmt.Errorf("replace demo client: %w", err)
		}
		fallthrough
	case errors.Is(err, provider.ErrClientNotFound):
		if info, err = p.CreateClient(ctx, spec); err != nil {
			return fmt.Errorf("create demo client: %w", err)
		}
	default:
		return fmt.Errorf("look up demo client: %w", err)
	}
	logger.InfoContext(ctx, "demo mode: try a login at "+issuer+"/demo",
		slog.String("client_id", info.ClientID),
		slog.Any("redirect_uris", info.RedirectURIs),
		slog.Any("post_logout_redirect_uris", info.PostLogoutRedirectURIs),
		slog.Any("scopes", info.Scopes))
	return nil
}

// demo is a minimal relying party: it logs in with the authorization-code flow with PKCE
// S256, state and nonce, exchanges the code over the server's own listening address,
// verifies the ID token against the published keys and shows its claims.
type demo struct {
	issuer string
	// base is the issuer's path, the provider's mount point: the demo lives under it too,
	// at base+"/demo".
	base     string
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
	client   *http.Client
	secure   bool
	pages    *template.Template
	logger   *slog.Logger
}

// newDemo builds the demo. The browser is sent to issuer; the code exchange and key fetches
// go to internal, the server's own listening address (under the issuer's path, which the
// provider is mounted at).
func newDemo(issuer, internal string, logger *slog.Logger) *demo {
	base, _ := mountpath.Of(issuer) // provider.New checked it
	internal += base
	client := &http.Client{Timeout: 10 * time.Second}
	keys := oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), client), internal+"/.well-known/jwks.json")
	return &demo{
		issuer: issuer,
		base:   base,
		oauth: &oauth2.Config{
			ClientID:    demoClientID,
			RedirectURL: issuer + "/demo/callback",
			Scopes:      []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess},
			Endpoint: oauth2.Endpoint{
				AuthURL:   issuer + "/api/oauth/authorize",
				TokenURL:  internal + "/api/oauth/token",
				AuthStyle: oauth2.AuthStyleInParams,
			},
		},
		verifier: oidc.NewVerifier(issuer, keys, &oidc.Config{
			ClientID:             demoClientID,
			SupportedSigningAlgs: []string{oidc.RS256, oidc.ES256},
		}),
		client: client,
		secure: strings.HasPrefix(issuer, "https://"),
		pages:  template.Must(template.New("demo").Parse(demoHTML)),
		logger: logger,
	}
}

// internalURL is the base URL at which this process reaches its own listener.
func internalURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}

// register mounts the demo's pages on mux, under the issuer's path.
func (d *demo) register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+d.base+"/demo", d.index)
	mux.HandleFunc("GET "+d.base+"/demo/login", d.login)
	mux.HandleFunc("GET "+d.base+"/demo/callback", d.callback)
}

func (d *demo) index(w http.ResponseWriter, r *http.Request) {
	d.render(w, http.StatusOK, "index", map[string]any{
		"Base":      d.base,
		"Issuer":    d.issuer,
		"ClientID":  demoClientID,
		"LoggedOut": r.URL.Query().Has("state"),
	})
}

// login starts an authorization request: fresh state, nonce and PKCE verifier go into a
// short-lived HttpOnly cookie, the browser to the authorization endpoint.
func (d *demo) login(w http.ResponseWriter, r *http.Request) {
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	http.SetCookie(w, &http.Cookie{
		Name:     demoCookie,
		Value:    state + "." + nonce + "." + verifier,
		Path:     d.base + "/demo/",
		MaxAge:   int(demoFlowLifetime / time.Second),
		HttpOnly: true,
		Secure:   d.secure,
		SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, d.oauth.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)), http.StatusFound)
}

// callback finishes the flow: it checks state, exchanges the code, verifies the ID token
// and its nonce, and shows the claims.
func (d *demo) callback(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: demoCookie, Path: d.base + "/demo/", MaxAge: -1, HttpOnly: true, Secure: d.secure, SameSite: http.SameSiteLaxMode})
	q := r.URL.Query()
	var state, nonce, verifier string
	if c, err := r.Cookie(demoCookie); err == nil {
		parts := strings.Split(c.Value, ".")
		if len(parts) == 3 {
			state, nonce, verifier = parts[0], parts[1], parts[2]
		}
	}
	if state == "" {
		d.fail(w, http.StatusBadRequest, "This login expired or was started in another browser. Start again.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(state), []byte(q.Get("state"))) != 1 {
		d.fail(w, http.StatusBadRequest, "The state parameter does not match the one this browser sent. Start again.")
		return
	}
	// Only an answer to this browser's own request may show the provider's error text.
	if e := q.Get("error"); e != "" {
		d.fail(w, http.StatusBadRequest, "The provider answered "+e+": "+q.Get("error_description"))
		return
	}
	ctx := context.WithValue(r.Context(), oauth2.HTTPClient, d.client)
	tok, err := d.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		d.logger.WarnContext(ctx, "demo: code exchange failed", slog.Any("error", err))
		msg := "The token request failed."
		if re := (*oauth2.RetrieveError)(nil); errors.As(err, &re) && re.ErrorCode != "" {
			msg = "The token endpoint answered " + re.ErrorCode + ": " + re.ErrorDescription
		}
		d.fail(w, http.StatusBadGateway, msg)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		d.fail(w, http.StatusBadGateway, "The token response holds no ID token.")
		return
	}
	idt, err := d.verifier.Verify(oidc.ClientContext(ctx, d.client), raw)
	if err != nil {
		d.logger.WarnContext(ctx, "demo: ID token rejected", slog.Any("error", err))
		d.fail(w, http.StatusBadGateway, "The ID token did not verify: "+err.Error())
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		d.fail(w, http.StatusBadRequest, "The ID token's nonce does not match the one this browser sent.")
		return
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		d.fail(w, http.StatusBadGateway, "The ID token's claims could not be read.")
		return
	}
	pretty, _ := json.MarshalIndent(claims, "", "  ")
	logout := d.issuer + "/api/oauth/logout?" + url.Values{
		"id_token_hint":            {raw},
		"post_logout_redirect_uri": {d.issuer + "/demo"},
		"state":                    {rand.Text()},
	}.Encode()
	d.render(w, http.StatusOK, "result", map[string]any{
		"Base":       d.base,
		"Issuer":     d.issuer,
		"Subject":    idt.Subject,
		"Claims":     string(pretty),
		"TokenType":  tok.Type(),
		"Expiry":     tok.Expiry.UTC().Format(time.RFC3339),
		"Scope":      tok.Extra("scope"),
		"GotRefresh": tok.RefreshToken != "",
		"LogoutURL":  logout,
	})
}

func (d *demo) fail(w http.ResponseWriter, status int, msg string) {
	d.render(w, status, "error", map[string]any{"Base": d.base, "Issuer": d.issuer, "Message": msg})
}

func (d *demo) render(w http.ResponseWriter, status int, name string, data map[string]any) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	if err := d.pages.ExecuteTemplate(w, name, data); err != nil {
		d.logger.Error("demo: render page", slog.String("page", name), slog.Any("error", err))
	}
}
