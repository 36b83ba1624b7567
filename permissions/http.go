package permissions

import (
	"errors"
	"net/http"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// maxBodyBytes caps a JSON request body: the bodies here are a handful of short fields.
const maxBodyBytes = 16 << 10

// Describe is the one table from this package's errors to HTTP answers: the status and a
// message safe to show. Anything not in it is a 500 whose details are only logged.
func Describe(err error) (int, string) {
	var reqErr *httpjson.RequestError
	var inputErr *InputError
	var tokenErr *TokenError
	switch {
	case errors.As(err, &tokenErr):
		return http.StatusUnauthorized, tokenErr.Message
	case errors.As(err, &reqErr):
		return reqErr.Status, reqErr.Message
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
	case httpjson.Unavailable(err):
		return http.StatusServiceUnavailable, "service temporarily unavailable, try again shortly"
	}
	return http.StatusInternalServerError, "internal error"
}

// writeError answers with err mapped through Describe. A refused bearer token gets an
// RFC 6750 WWW-Authenticate challenge (a *TokenError the headers it carries); a 503 a Retry-After; a 500 is logged.
func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, message := Describe(err)
	var tokenErr *TokenError
	switch {
	case errors.As(err, &tokenErr):
		for name, values := range tokenErr.Header {
			w.Header()[name] = values
		}
	case errors.Is(err, ErrInvalidToken):
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	case errors.Is(err, ErrNoCredentials):
		w.Header().Set("WWW-Authenticate", "Bearer")
	case status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "5")
	case status >= http.StatusInternalServerError:
		s.logger.ErrorContext(r.Context(), "permissions: request failed",
			"method", r.Method, "path", r.URL.Path, "error", err)
	}
	httpjson.WriteError(w, status, message)
}

// readJSON reads r's body into dst: it must be declared application/json (else 415), be at
// most maxBodyBytes long (else 413) and hold exactly one JSON object (else 400); see
// httpjson.Decode. A field of the wrong JSON type is an *InputError naming it.
func readJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	return httpjson.Decode(w, r, dst, maxBodyBytes, func(field, reason string) error {
		return &InputError{Field: field, Reason: reason}
	})
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
