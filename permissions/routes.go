package permissions

import (
	"net/http"

	"github.com/gorilla/mux"
)

// Routes registers the permission routes (SSO interface §4 items 15–20) and the admin
// listings on r, relative to the provider's mount path (the provider strips it before
// routing, so under the issuer https://acme.example/auth they are /auth/api/users/…):
//
//	GET    /api/users/{userId}/apps/{clientId}/permissions         token or admin
//	PUT    /api/users/{userId}/apps/{clientId}/permissions         client token + manage_permissions
//	DELETE /api/users/{userId}/apps/{clientId}/permissions         client token + manage_permissions
//	POST   /api/users/{userId}/apps/{clientId}/request-access      user-bound token
//	PUT    /api/admin/users/{userId}/apps/{clientId}/permissions   admin
//	DELETE /api/admin/users/{userId}/apps/{clientId}/permissions   admin
//	GET    /api/admin/apps/{clientId}/permissions                  admin
//	GET    /api/admin/audit                                        admin
//
// A change carrying a cookie is refused (403) when its Origin, or lacking it
// Sec-Fetch-Site, names another origin than Config.BaseURL's (package internal/sameorigin).
func (s *Service) Routes(r *mux.Router) {
	h := &handlers{s: s}
	guarded := func(f http.HandlerFunc) http.Handler { return s.sameOrigin.Wrap(f) }
	const record = "/api/users/{userId}/apps/{clientId}/permissions"
	const adminRecord = "/api/admin/users/{userId}/apps/{clientId}/permissions"
	r.Handle(record, guarded(h.get)).Methods(http.MethodGet)
	r.Handle(record, guarded(h.put(opClientWrite))).Methods(http.MethodPut)
	r.Handle(record, guarded(h.revoke(opClientWrite))).Methods(http.MethodDelete)
	r.Handle("/api/users/{userId}/apps/{clientId}/request-access", guarded(h.requestAccess)).Methods(http.MethodPost)
	r.Handle(adminRecord, guarded(h.put(opAdmin))).Methods(http.MethodPut)
	r.Handle(adminRecord, guarded(h.revoke(opAdmin))).Methods(http.MethodDelete)
	r.Handle("/api/admin/apps/{clientId}/permissions", guarded(h.listApp)).Methods(http.MethodGet)
	r.Handle("/api/admin/audit", guarded(h.listAudit)).Methods(http.MethodGet)
}
