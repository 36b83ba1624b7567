package provider

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// routes registers every endpoint of the provider in one place and returns the handler
// that serves them under the mount path (the issuer's path): with the issuer
// https://acme.example/auth the token endpoint is /auth/api/oauth/token. A request outside
// the mount path (a root path, or one whose prefix an http.StripPrefix already removed)
// gets the JSON 404, as does an unknown path inside it.
func (p *Provider) routes() http.Handler {
	r := mux.NewRouter()
	get, post := http.MethodGet, http.MethodPost

	r.HandleFunc("/.well-known/openid-configuration", p.discovery).Methods(get, http.MethodHead)
	r.HandleFunc("/.well-known/jwks.json", p.jwks).Methods(get, http.MethodHead)
	r.HandleFunc("/api/oauth/authorize", p.authorize).Methods(get, post)
	r.HandleFunc("/api/oauth/authorize/resume", p.resumeAuthorize).Methods(get)
	r.HandleFunc("/api/oauth/par", p.failedRequestsLimited(p.basicChallenge(p.pushAuthorize))).Methods(post)
	r.HandleFunc("/api/oauth/token", p.failedRequestsLimited(p.basicChallenge(p.token))).Methods(post)
	r.HandleFunc("/api/oauth/device/code", p.failedRequestsLimited(p.basicChallenge(p.deviceAuthorization))).Methods(post)
	r.HandleFunc("/api/oauth/userinfo", p.userinfo).Methods(get, post)
	r.HandleFunc("/api/oauth/revoke", p.failedRequestsLimited(p.basicChallenge(p.revoke))).Methods(post)
	r.HandleFunc("/api/oauth/introspect", p.failedRequestsLimited(p.basicChallenge(p.introspect))).Methods(post)
	r.HandleFunc("/api/oauth/logout", p.logout).Methods(get, post)
	r.HandleFunc("/api/oauth/register", p.failedRequestsLimited(p.register)).Methods(post)
	r.HandleFunc("/api/oauth/register/{client_id}", p.failedRequestsLimited(p.readRegistration)).Methods(get)
	r.HandleFunc("/api/oauth/register/{client_id}", p.failedRequestsLimited(p.updateRegistration)).Methods(http.MethodPut)
	r.HandleFunc("/api/oauth/register/{client_id}", p.failedRequestsLimited(p.deleteRegistration)).Methods(http.MethodDelete)
	r.Handle("/api/admin/registration-tokens", p.adminRegistrationTokens()).Methods(post)

	p.auditRoutes(r)
	p.ui.Routes(r)
	p.auth.Routes(r)
	p.social.Routes(r)
	p.perms.Routes(r)

	notFound := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteError(w, http.StatusNotFound, "no such endpoint")
	})
	r.NotFoundHandler = notFound
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteError(w, http.StatusMethodNotAllowed, "method not allowed on this endpoint")
	})
	if p.mount == "" {
		return r
	}
	// The router sees the path that follows the mount path, which every route, page and
	// link of the provider is written relative to. It must not redirect an unclean path to
	// its clean form: that Location would lack the mount path. The embedder's mux has
	// cleaned the whole path already (http.ServeMux redirects unclean paths itself).
	r.SkipClean(true)
	inside := http.StripPrefix(p.mount, r)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.HasPrefix(req.URL.Path, p.mount+"/") {
			notFound(w, req)
			return
		}
		inside.ServeHTTP(w, req)
	})
}
