package permissions

import (
	"net/http"

	"github.com/gorilla/mux"
)

// Routes registers the permission routes (SSO interface §4 items 15–20) and the admin
// listings on r:
//
//	GET    /api/users/{userId}/apps/{clientId}/permissions         token or admin
//	PUT    /api/users/{userId}/apps/{clientId}/permissions         client token + manage_permissions
//	DELETE /api/users/{userId}/apps/{clientId}/permissions         client token + manage_permissions
//	POST   /api/users/{userId}/apps/{clientId}/request-access      user-bound token
//	PUT    /api/admin/users/{userId}/apps/{clientId}/permissions   admin
//	DELETE /api/admin/users/{userId}/apps/{clientId}/permissions   admin
//	GET    /api/admin/apps/{clientId}/permissions                  admin
//	GET    /api/admin/audit                                        admin
func (s *Service) Routes(r *mux.Router) {
	h := &handlers{s: s}
	const record = "/api/users/{userId}/apps/{clientId}/permissions"
	const adminRecord = "/api/admin/users/{userId}/apps/{clientId}/permissions"
	r.HandleFunc(record, h.get).Methods(http.MethodGet)
	r.HandleFunc(record, h.put(opClientWrite)).Methods(http.MethodPut)
	r.HandleFunc(record, h.revoke(opClientWrite)).Methods(http.MethodDelete)
	r.HandleFunc("/api/users/{userId}/apps/{clientId}/request-access", h.requestAccess).Methods(http.MethodPost)
	r.HandleFunc(adminRecord, h.put(opAdmin)).Methods(http.MethodPut)
	r.HandleFunc(adminRecord, h.revoke(opAdmin)).Methods(http.MethodDelete)
	r.HandleFunc("/api/admin/apps/{clientId}/permissions", h.listApp).Methods(http.MethodGet)
	r.HandleFunc("/api/admin/audit", h.listAudit).Methods(http.MethodGet)
}
