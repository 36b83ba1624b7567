package publicauth

import (
	"net/http"

	"github.com/gorilla/mux"
)

// Routes registers the public authentication endpoints of the SSO interface (§4, items 8,
// 9 and 13, and DESIGN §4's logout) on r:
//
//	POST /api/public/register
//	POST /api/public/login
//	GET  /api/public/session
//	POST /api/public/logout
func (s *Service) Routes(r *mux.Router) {
	h := &handlers{s: s}
	r.HandleFunc("/api/public/register", h.register).Methods(http.MethodPost)
	r.HandleFunc("/api/public/login", h.login).Methods(http.MethodPost)
	r.HandleFunc("/api/public/session", h.session).Methods(http.MethodGet)
	r.HandleFunc("/api/public/logout", h.logout).Methods(http.MethodPost)
}
