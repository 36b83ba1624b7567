package permissions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// maxBodyBytes caps a JSON request body: the bodies here are a handful of short fields.
const maxBodyBytes = 16 << 10

// requestError is a fault of the HTTP request itself (media type, size, JSON syntax),
// found before the service is called.
type requestError struct {
	status  int
	message string
}

func (e *requestError) Error() string { return e.message }

// Describe is the one table from this package's errors to HTTP answers: the status and a
// message safe to show. Anything not in it is a 500 whose details are only logged.
func Describe(err error) (int, string) {
	var reqErr *requestError
	var inputErr *InputError
	switch {
	case errors.As(err, &reqErr):
		return reqErr.status, reqErr.message
	case errors.As(err, &inputErr):
		return http.StatusBadRequest, inputErr.Error()
	case errors.Is(err, ErrNoCredentials):
		return http.StatusUnauthorized, "a bearer access token is required"
	case errors.Is(err, ErrInvalidToken):
		return http.StatusUnauthorized, "access token is invalid, expired or revoked"
	case errors.Is(err, ErrNoSession):
		return http.StatusUnauthorized, "an admin-session or public-session of an admin is required"
	case errors.Is(err, ErrNotAdmin),
		errors.Is(err, ErrClientMismatch),
		errors.Is(err, ErrSubjectMismatch),
		errors.Is(err, ErrScopeMissing),
		errors.Is(err, ErrClientTokenRequired),
		errors.Is(err, ErrUserTokenRequired):
		return http.StatusForbidden, err.Error()
	case errors.Is(err, ErrUnknownUser), errors.Is(err, ErrUnknownClient):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, ErrNoRecord):
		return http.StatusNotFound, "no permission record for this user and application"
	case errors.Is(err, ErrAlreadyApproved):
		return http.StatusConflict, "access is already approved"
	case unavailable(err):
		return http.StatusServiceUnavailable, "service temporarily unavailable, try again shortly"
	}
	return http.StatusInternalServerError, "internal error"
}

// unavailable reports whether err says the store cannot reach its database; the store marks
// such errors with an Unavailable method.
func unavailable(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.As(err, &u) && u.Unavailable()
}

// errorBody is the application error shape: the HTTP status text and a message.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// writeError answers with err mapped through Describe. A refused bearer token gets an
// RFC 6750 WWW-Authenticate challenge; a 503 a Retry-After; a 500 is logged.
func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, message := Describe(err)
	switch {
	case errors.Is(err, ErrInvalidToken):
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	case errors.Is(err, ErrNoCredentials):
		w.Header().Set("WWW-Authenticate", "Bearer")
	case status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "5")
	case status >= http.StatusInternalServerError:
		s.logger.ErrorContext(r.Context(), "permissions: request failed",
			"method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, errorBody{Error: http.StatusText(status), Message: message})
}

// writeJSON answers with status and v as JSON that no cache keeps.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is out; a failed write is a gone client
}

// readJSON reads r's body into dst: it must be declared application/json (else 415), be at
// most maxBodyBytes long (else 413) and hold exactly one JSON object (else 400). A field of
// the wrong JSON type is an *InputError naming it.
func readJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return &requestError{http.StatusUnsupportedMediaType, "Content-Type must be application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &requestError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body must be at most %d bytes", maxBodyBytes)}
	case err != nil:
		return &requestError{http.StatusBadRequest, "request body could not be read"}
	}
	body = bytes.TrimSpace(body)
	switch {
	case len(body) == 0:
		return &requestError{http.StatusBadRequest, "request body is empty"}
	case !json.Valid(body):
		return &requestError{http.StatusBadRequest, "request body is not valid JSON"}
	case body[0] != '{':
		return &requestError{http.StatusBadRequest, "request body must be a JSON object"}
	}
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(body, dst); errors.As(err, &typeErr) {
		return &InputError{Field: typeErr.Field, Reason: "must be a JSON " + typeErr.Type.String()}
	} else if err != nil {
		return &requestError{http.StatusBadRequest, "request body is not valid JSON"}
	}
	return nil
}

// recordView is the permission record of the SSO interface (§2): timestamps in RFC 3339
// UTC; requestedAt, grantedAt and grantedBy null until set.
type recordView struct {
	UserID      string  `json:"userId"`
	ClientID    string  `json:"clientId"`
	AppName     string  `json:"appName"`
	HasAccess   bool    `json:"hasAccess"`
	Status      string  `json:"status"`
	Role        string  `json:"role"`
	RequestedAt *string `json:"requestedAt"`
	GrantedAt   *string `json:"grantedAt"`
	GrantedBy   *string `json:"grantedBy"`
	CreatedAt   string  `json:"createdAt"`
	UpdatedAt   string  `json:"updatedAt"`
}

func newRecordView(r *Record) *recordView {
	if r == nil {
		return nil
	}
	return &recordView{
		UserID: r.UserID, ClientID: r.ClientID, AppName: r.AppName, HasAccess: r.HasAccess,
		Status: r.Status, Role: r.Role, RequestedAt: formatOptional(r.RequestedAt),
		GrantedAt: formatOptional(r.GrantedAt), GrantedBy: optional(r.GrantedBy),
		CreatedAt: formatTime(r.CreatedAt), UpdatedAt: formatTime(r.UpdatedAt),
	}
}

// accessRequestView is the access request response (SSO interface §2).
type accessRequestView struct {
	Message    string      `json:"message"`
	Permission *recordView `json:"permission"`
}

// actorView names who made an audited change.
type actorView struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// auditEntryView is one entry of GET /api/admin/audit.
type auditEntryView struct {
	ID       string      `json:"id"`
	UserID   string      `json:"userId"`
	ClientID string      `json:"clientId"`
	Actor    actorView   `json:"actor"`
	Action   string      `json:"action"`
	Before   *recordView `json:"before"`
	After    *recordView `json:"after"`
	At       string      `json:"at"`
}

// recordPage and auditPage are the listing responses; nextCursor is null on the last page.
type recordPage struct {
	Permissions []*recordView `json:"permissions"`
	NextCursor  *string       `json:"nextCursor"`
}

type auditPage struct {
	Entries    []auditEntryView `json:"entries"`
	NextCursor *string          `json:"nextCursor"`
}

// formatTime renders t as the interface's timestamps: RFC 3339 in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func formatOptional(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := formatTime(*t)
	return &s
}

// optional is nil for "", else a pointer to s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
