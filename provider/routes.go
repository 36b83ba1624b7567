package provider

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
)

// routes registers every endpoint of the provider in one place.
func (p *Provider) routes() *mux.Router {
	r := mux.NewRouter()
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

	r.HandleFunc("/login", p.formPage("login")).Methods(get)
	r.HandleFunc("/login", p.loginSubmit).Methods(post)
	r.HandleFunc("/register", p.formPage("register")).Methods(get)
	r.HandleFunc("/register", p.registerSubmit).Methods(post)
	r.HandleFunc("/consent", p.consentPage).Methods(get)
	r.HandleFunc("/consent", p.consentSubmit).Methods(post)
	r.HandleFunc(logoutPath, p.logoutConfirm).Methods(post)
	r.HandleFunc("/pin", p.pinSubmit).Methods(post)
	r.HandleFunc("/magic-link", p.magicLinkSubmit).Methods(post)
	r.HandleFunc("/forgot-password", p.formPage("forgot_password")).Methods(get)
	r.HandleFunc("/forgot-password", p.forgotPasswordSubmit).Methods(post)
	r.HandleFunc(publicauth.PathResetPassword, p.resetPasswordPage).Methods(get)
	r.HandleFunc(publicauth.PathResetPassword, p.resetPasswordSubmit).Methods(post)
	r.HandleFunc(publicauth.PathConfirmPassword, p.confirmPasswordPage).Methods(get)
	r.HandleFunc(publicauth.PathConfirmPassword, p.confirmPasswordSubmit).Methods(post)
	r.HandleFunc(signedInPath, p.signedIn).Methods(get)
	r.HandleFunc(publicauth.PathMagicLogin, p.magicLoginPage).Methods(get)
	r.HandleFunc(publicauth.PathMagicLogin, p.magicLogin).Methods(post)
	r.HandleFunc(publicauth.PathVerifyEmail, p.verifyEmail).Methods(get)
	r.HandleFunc("/ui/style.css", p.pages.style).Methods(get, http.MethodHead)

	p.auth.Routes(r)
	p.social.Routes(r)
	p.perms.Routes(r)

	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteError(w, http.StatusNotFound, "no such endpoint")
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteError(w, http.StatusMethodNotAllowed, "method not allowed on this endpoint")
	})
	return r
}
