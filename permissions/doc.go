// Package permissions keeps the per-application permission record of the SSO interface:
// one record per (user, client application) holding a status (pending, approved, revoked)
// and a role (none, user, admin), its state machine, who may read and change it, the audit
// log of every change, and the HTTP routes of SSO interface §4 items 15–20 plus the admin
// listings:
//
//	GET    /api/users/{userId}/apps/{clientId}/permissions
//	PUT    /api/users/{userId}/apps/{clientId}/permissions
//	DELETE /api/users/{userId}/apps/{clientId}/permissions
//	POST   /api/users/{userId}/apps/{clientId}/request-access
//	PUT    /api/admin/users/{userId}/apps/{clientId}/permissions
//	DELETE /api/admin/users/{userId}/apps/{clientId}/permissions
//	GET    /api/admin/apps/{clientId}/permissions?status=&limit=&cursor=
//	GET    /api/admin/audit?userId=&clientId=&limit=&cursor=
//
// Who may call what is decided in one place (authorize, access.go); errors map to HTTP in
// one table (Describe, http.go). Every change also emits an events.PermissionChanged
// (WithEvents), delivered once it committed. The package imports nothing of Gatehouse but
// events and its internal helpers: it declares what
// it needs as small interfaces — Store (records, audit, token revocation, transactions),
// Tokens (stateful bearer-token validation), Admins (the admin-session check) and Directory
// (users and client names) — which package storage and the provider implement.
package permissions
