package publicauth

import (
	"net/http"

	"github.com/gorilla/mux"
)

// Routes registers the JSON endpoints of public authentication (SSO interface §4 and
// DESIGN §4) on r, relative to BaseURL's path: r routes what follows that path (the
// provider strips it first), so under https://acme.example/auth the login is
// POST /auth/api/public/login.
//
//	POST /api/public/register
//	POST /api/public/login
//	POST /api/public/verify-pin
//	POST /api/public/request-magic-link
//	POST /api/public/resend-verification
//	POST /api/public/request-password-reset
//	POST /api/public/reset-password
//	POST /api/public/confirm-password
//	GET  /api/public/session
//	POST /api/public/logout
//	POST /api/admin/login
//	POST /api/admin/logout
//	PATCH /api/admin/users/{userId}
//	GET  /api/public/me
//	PATCH /api/public/me
//	GET  /api/sso/validate
//
// The links mail opens (GET /api/public/verify-email, GET /api/public/magic-login) are browser
// pages: the provider serves them with VerifyEmail, CheckMagicLink (the page of the link)
// and ConsumeMagicLink (its button's POST), and StartPINChallenge.
// A POST or PATCH carrying a cookie is refused (403) when its Origin, or lacking it
// Sec-Fetch-Site, names another origin than BaseURL's (package internal/sameorigin).
// Every POST but the logouts first counts against the per-IP limit (CheckRate). The session
// checks and logouts are not rate limited: they guess no secret, and relying parties call
// them on every request from one address.
func (s *Service) Routes(r *mux.Router) {
	h := &handlers{s: s}
	for _, route := range []struct {
		method, path string
		handle       http.HandlerFunc
	}{
		{http.MethodPost, "/api/public/register", h.register},
		{http.MethodPost, "/api/public/login", h.login},
		{http.MethodPost, "/api/public/verify-pin", h.verifyPIN},
		{http.MethodPost, "/api/public/request-magic-link", h.requestMagicLink},
		{http.MethodPost, "/api/public/resend-verification", h.resendVerification},
		{http.MethodPost, "/api/public/request-password-reset", h.requestPasswordReset},
		{http.MethodPost, "/api/public/reset-password", h.resetPassword},
		{http.MethodPost, "/api/public/confirm-password", h.confirmPassword},
		{http.MethodGet, "/api/public/session", h.session},
		{http.MethodPost, "/api/public/logout", h.logout},
		{http.MethodPost, "/api/admin/login", h.adminLogin},
		{http.MethodPost, "/api/admin/logout", h.adminLogout},
		{http.MethodPatch, "/api/admin/users/{userId}", h.adminUpdateUser},
		{http.MethodGet, "/api/sso/validate", h.ssoValidate},
		{http.MethodGet, "/api/public/me", h.me},
		{http.MethodPatch, "/api/public/me", h.updateMe},
	} {
		r.Handle(route.path, s.sameOrigin.Wrap(route.handle)).Methods(route.method)
	}
}
