package provider

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// routes registers every endpoint of the provider in one place, under the mount path (the
// issuer's path): with the issuer https://acme.example/auth the token endpoint is
// /auth/api/oauth/token. A request outside the mount path (a root path, or one whose prefix
// an http.StripPrefix removed) gets the JSON 404, as does an unknown path inside it.
func (p *Provider) routes() *mux.Router {
	root := mux.NewRouter()
	r := root
	if p.mount != "" {
		r = root.PathPrefix(p.mount + "/").Subrouter()
	}
	get, post := http.MethodGet, http.MethodPost

	r.HandleFunc("/.well-known/openid-configuration", p.discovery).Methods(get, http.MethodHead)
	r.HandleFunc("/.well-known/jwks.json", p.jwks).Methods(get, http.MethodHead)
	r.HandleFunc("/api/oauth/authorize", p.authorize).Methods(get, post)
	r.HandleFunc("/api/oauth/authorize/resume", p.resumeAuthorize).Methods(get)
	r.HandleFunc("/api/oauth/token", p.failedRequestsLimited(p.basicChallenge(p.token))).Methods(post)
	r.HandleFunc("/api/oauth/userinfo", p.userinfo).Methods(get, post)
	r.HandleFunc("/api/oauth/revoke", p.failedRequestsLimited(p.basicChallenge(p.revoke))).Methods(post)
	r.HandleFunc("/api/oauth/introspect", p.failedRequestsLimited(p.basicChallenge(p.introspect))).Methods(post)
	r.HandleFunc("/api/oauth/logout", p.logout).Methods(get, post)

	p.ui.Routes(r)
	p.auth.Routes(r)
	p.social.Routes(r)
	p.perms.Routes(r)

	notFound := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteError(w, http.StatusNotFound, "no such endpoint")
	})
	notAllowed := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteError(w, http.StatusMethodNotAllowed, "method not allowed on this endpoint")
	})
	for _, router := range []*mux.Router{root, r} {
		router.NotFoundHandler, router.MethodNotAllowedHandler = notFound, notAllowed
	}
	return root
}
