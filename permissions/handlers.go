package permissions

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gatehouse-id/gatehouse/internal/bearer"
	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gorilla/mux"
)

// handlers serves the permission routes: each authenticates the caller, asks authorize,
// calls the Service and encodes. Routes registers them.
type handlers struct {
	s *Service
}

// putRequest is the body of both PUT routes.
type putRequest struct {
	Status string `json:"status"`
	Role   string `json:"role"`
}

// accessRequest is the body of request-access (SSO interface §4 item 18). The user is the
// token's subject; email and name are accepted as the interface sends them and not
// trusted for anything.
type accessRequest struct {
	Email string `json:"email"`
	Name  string `json:"name"`
}

// admit authenticates r for op and asks authorize whether the caller may act on the record
// of the path. Bearer routes read the Authorization header (a scheme other than Bearer or
// DPoP is no credential); a GET without an access token may come from an admin session
// instead.
func (h *handlers) admit(r *http.Request, op operation) (caller, string, string, error) {
	vars := mux.Vars(r)
	userID, clientID := vars["userId"], vars["clientId"]
	var c caller
	var err error
	_, hasBearer := bearer.FromHeader(r)
	switch {
	case op == opAdmin:
		c.adminID, err = h.s.admins.Admin(r)
	case hasBearer:
		var info TokenInfo
		if info, err = h.s.tokens.Validate(r); err == nil {
			c.token = &info
		}
	case op == opRead:
		c.adminID, err = h.s.admins.Admin(r)
		if errors.Is(err, ErrNoSession) {
			err = ErrNoCredentials
		}
	}
	if err != nil {
		return c, "", "", err
	}
	return c, userID, clientID, authorize(op, c, userID, clientID)
}

// get serves GET /api/users/{userId}/apps/{clientId}/permissions: 200 and the record, 404
// when there is none.
func (h *handlers) get(w http.ResponseWriter, r *http.Request) {
	_, userID, clientID, err := h.admit(r, opRead)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	rec, err := h.s.Get(r.Context(), userID, clientID)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, newRecordView(rec))
}

// put serves both PUT routes (op tells which): 201 and the record when it was created, 200
// when it was updated.
func (h *handlers) put(op operation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, userID, clientID, err := h.admit(r, op)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		var req putRequest
		if err := readJSON(w, r, &req); err != nil {
			h.s.writeError(w, r, err)
			return
		}
		rec, created, err := h.s.Put(r.Context(), c.actor(), userID, clientID, req.Status, req.Role)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		httpjson.Write(w, status, newRecordView(rec))
	}
}

// revoke serves both DELETE routes (op tells which): 200 and the revoked record.
func (h *handlers) revoke(op operation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, userID, clientID, err := h.admit(r, op)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		rec, err := h.s.Revoke(r.Context(), c.actor(), userID, clientID)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		httpjson.Write(w, http.StatusOK, newRecordView(rec))
	}
}

// requestAccess serves POST /api/users/{userId}/apps/{clientId}/request-access: 201 with a
// new pending record, 200 when a request is already pending, 409 when access is approved.
// The body (email, name) is optional; when sent it must be a JSON object.
func (h *handlers) requestAccess(w http.ResponseWriter, r *http.Request) {
	_, userID, clientID, err := h.admit(r, opRequestAccess)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if r.ContentLength != 0 {
		var req accessRequest
		if err := readJSON(w, r, &req); err != nil {
			h.s.writeError(w, r, err)
			return
		}
	}
	rec, outcome, err := h.s.RequestAccess(r.Context(), userID, clientID)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if outcome == RequestPending {
		httpjson.Write(w, http.StatusOK, accessRequestView{Message: "access request already pending", Permission: newRecordView(rec)})
		return
	}
	httpjson.Write(w, http.StatusCreated, accessRequestView{Message: "access requested", Permission: newRecordView(rec)})
}

// listApp serves GET /api/admin/apps/{clientId}/permissions?status=&limit=&cursor=.
func (h *handlers) listApp(w http.ResponseWriter, r *http.Request) {
	q, limit, ok := h.admitListing(w, r)
	if !ok {
		return
	}
	records, next, err := h.s.ListApp(r.Context(), mux.Vars(r)["clientId"], q.Get("status"), q.Get("cursor"), limit)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	page := recordPage{Permissions: make([]*recordView, 0, len(records)), NextCursor: optional(next)}
	for _, rec := range records {
		page.Permissions = append(page.Permissions, newRecordView(rec))
	}
	httpjson.Write(w, http.StatusOK, page)
}

// listAudit serves GET /api/admin/audit?userId=&clientId=&limit=&cursor=.
func (h *handlers) listAudit(w http.ResponseWriter, r *http.Request) {
	q, limit, ok := h.admitListing(w, r)
	if !ok {
		return
	}
	f := AuditFilter{UserID: q.Get("userId"), ClientID: q.Get("clientId")}
	entries, next, err := h.s.ListAudit(r.Context(), f, q.Get("cursor"), limit)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	page := auditPage{Entries: make([]auditEntryView, 0, len(entries)), NextCursor: optional(next)}
	for _, e := range entries {
		page.Entries = append(page.Entries, auditEntryView{
			ID: e.ID, UserID: e.UserID, ClientID: e.ClientID,
			Actor:  actorView{Type: e.Actor.Kind, ID: e.Actor.ID},
			Action: e.Action, Before: newRecordView(e.Before), After: newRecordView(e.After), At: formatTime(e.At),
		})
	}
	httpjson.Write(w, http.StatusOK, page)
}

// admitListing lets only admins through to a listing and reads its query and its limit
// (DefaultPageSize when absent). When it returns false it has answered the request.
func (h *handlers) admitListing(w http.ResponseWriter, r *http.Request) (url.Values, int, bool) {
	_, _, _, err := h.admit(r, opAdmin)
	q := r.URL.Query()
	limit := DefaultPageSize
	if err == nil && q.Get("limit") != "" {
		if limit, err = strconv.Atoi(q.Get("limit")); err != nil {
			err = &InputError{Field: "limit", Reason: "must be a whole number"}
		}
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return nil, 0, false
	}
	return q, limit, true
}
