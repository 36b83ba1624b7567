package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/internal/sameorigin"
	"github.com/gatehouse-id/gatehouse/permissions"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// inTxRecording runs change in one transaction with the recording of e: the change and its
// security event commit together, or neither does. change's error is returned unchanged.
func (p *Provider) inTxRecording(ctx context.Context, e events.Event, change func(ctx context.Context) error) error {
	return p.store.InTx(ctx, func(ctx context.Context) error {
		if err := change(ctx); err != nil {
			return err
		}
		return p.events.Emit(ctx, e)
	})
}

// auditRoutes registers the audit trail's listings (README "Audit trail"):
//
//	GET /api/admin/events      admin session (admin-session, or an admin's public-session)
//	GET /api/public/me/events  public-session: the signed-in user's own events
//
// They stand behind the same-origin guard of every cookie route (package
// internal/sameorigin), which admits reads from anywhere: no CORS header is sent, so a
// browser keeps the answer from a page of another origin.
func (p *Provider) auditRoutes(r *mux.Router) {
	guard, _ := sameorigin.New(p.cfg.Issuer) // withDefaults checked the issuer
	r.Handle("/api/admin/events", guard.Wrap(http.HandlerFunc(p.listSecurityEvents))).Methods(http.MethodGet)
	r.Handle("/api/public/me/events", guard.Wrap(http.HandlerFunc(p.listOwnSecurityEvents))).Methods(http.MethodGet)
}

// Paging of the audit listings: the conventions of GET /api/admin/audit.
const (
	eventsDefaultPageSize = permissions.DefaultPageSize
	eventsMaxPageSize     = permissions.MaxPageSize
)

// eventTypePattern is what a type filter may be: an event type, or a family ending in ".*".
var eventTypePattern = regexp.MustCompile(`^[a-z][a-z_]*(\.[a-z][a-z_]*)*(\.\*)?$`)

// listSecurityEvents serves GET /api/admin/events?type=&userId=&clientId=&since=&until=&limit=&cursor=.
func (p *Provider) listSecurityEvents(w http.ResponseWriter, r *http.Request) {
	_, err := p.auth.Admin(r)
	switch {
	case errors.Is(err, publicauth.ErrSessionNotFound):
		httpjson.WriteError(w, http.StatusUnauthorized, "an admin session is required")
		return
	case errors.Is(err, publicauth.ErrNotAdmin):
		httpjson.WriteError(w, http.StatusForbidden, "the session is not an admin's")
		return
	case err != nil:
		p.auditError(w, r, err)
		return
	}
	q := r.URL.Query()
	f := storage.SecurityEventFilter{Type: q.Get("type"), UserID: q.Get("userId"), ClientID: q.Get("clientId")}
	p.writeEventPage(w, r, f, q, nil)
}

// listOwnSecurityEvents serves GET /api/public/me/events?type=&since=&until=&limit=&cursor=:
// only the events of the public session's user.
func (p *Provider) listOwnSecurityEvents(w http.ResponseWriter, r *http.Request) {
	_, u, err := p.auth.CurrentSession(r, publicauth.SessionPublic)
	switch {
	case errors.Is(err, publicauth.ErrSessionNotFound):
		httpjson.WriteError(w, http.StatusUnauthorized, "a public session is required")
		return
	case err != nil:
		p.auditError(w, r, err)
		return
	}
	q := r.URL.Query()
	p.writeEventPage(w, r, storage.SecurityEventFilter{Type: q.Get("type"), UserID: u.ID}, q, func(v *eventView, e *storage.SecurityEvent) {
		ownEventView(v, e, u.ID)
	})
}

// ownEventView makes v, the view of e, what e's user userID may see in their own listing.
// The address and user agent of the request behind e are shown only when the user made it
// (causedBy); and an admin is never named to the user: a permission change keeps its
// actorType but drops an admin's actorId, and any grantedBy naming an admin.
func ownEventView(v *eventView, e *storage.SecurityEvent, userID string) {
	if !causedBy(e, userID) {
		v.IP, v.UserAgent = nil, ""
	}
	if e.Type != (*events.PermissionChanged)(nil).Name() {
		return
	}
	var d map[string]json.RawMessage
	if json.Unmarshal(v.Details, &d) != nil {
		v.Details = json.RawMessage("{}")
		return
	}
	var actorType string
	_ = json.Unmarshal(d["actorType"], &actorType)
	if actorType == permissions.ActorAdmin {
		delete(d, "actorId")
	}
	for _, name := range []string{"before", "after"} {
		var record map[string]json.RawMessage
		if json.Unmarshal(d[name], &record) != nil || record == nil {
			continue
		}
		var grantedBy string
		_ = json.Unmarshal(record["grantedBy"], &grantedBy)
		if grantedBy != "" && !strings.HasPrefix(grantedBy, permissions.ClientGrantPrefix) {
			record["grantedBy"] = json.RawMessage(`""`)
		}
		d[name], _ = json.Marshal(record) // a map of raw JSON: cannot fail
	}
	v.Details, _ = json.Marshal(d)
}

// causedBy reports whether userID made the request behind e: a permission change whose
// actor is the user (an access request), and every event of the user's own sign-ins,
// registration, verification, password and consents. Not so a change an admin or an
// application made, a client revoking its token, and grants revoked for what a client or
// an admin did (a reused code or refresh token, a revoked permission, a disabled account).
func causedBy(e *storage.SecurityEvent, userID string) bool {
	switch e.Type {
	case (*events.PermissionChanged)(nil).Name():
		var d struct {
			ActorType string `json:"actorType"`
			ActorID   string `json:"actorId"`
		}
		return json.Unmarshal(e.Details, &d) == nil && d.ActorType == permissions.ActorUser && d.ActorID == userID
	case (*events.TokenRevoked)(nil).Name():
		return false
	case (*events.FamilyRevoked)(nil).Name(), (*events.ConsentWithdrawn)(nil).Name():
		switch e.Outcome {
		case events.ReasonPasswordReset, events.ReasonPasswordAdded, events.ReasonEmailVerified:
			return true
		}
		return false
	}
	return true
}

// writeEventPage checks the type, time and paging parameters of q, lists one page of the
// events f (with those bounds) selects and writes it: {"events": […], "nextCursor": …|null}.
// restrict, when not nil, changes each event's view for the reader. A bad parameter is a
// 400 in the JSON error shape naming it.
func (p *Provider) writeEventPage(w http.ResponseWriter, r *http.Request, f storage.SecurityEventFilter, q url.Values, restrict func(*eventView, *storage.SecurityEvent)) {
	bad := func(msg string) { httpjson.WriteError(w, http.StatusBadRequest, msg) }
	if f.Type != "" && (len(f.Type) > 64 || !eventTypePattern.MatchString(f.Type)) {
		bad("type must be an event type such as login.failed, or a family such as login.*")
		return
	}
	if len(f.UserID) > 255 || len(f.ClientID) > 255 {
		bad("userId and clientId must be at most 255 bytes")
		return
	}
	for name, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				bad(name + " must be an RFC 3339 time")
				return
			}
			*dst = t
		}
	}
	limit := eventsDefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > eventsMaxPageSize {
			bad(fmt.Sprintf("limit must be a whole number between 1 and %d", eventsMaxPageSize))
			return
		}
		limit = n
	}
	after, ok := decodeEventCursor(q.Get("cursor"))
	if !ok {
		bad("cursor is not a cursor this listing returned")
		return
	}
	rs, err := p.store.ListSecurityEvents(r.Context(), f, after, limit+1)
	if err != nil {
		p.auditError(w, r, err)
		return
	}
	page := eventPage{Events: make([]eventView, 0, min(len(rs), limit))}
	if len(rs) > limit {
		rs = rs[:limit]
		next := encodeEventCursor(storage.SecurityEventCursor{At: rs[limit-1].At, ID: rs[limit-1].ID})
		page.NextCursor = &next
	}
	for _, e := range rs {
		v := newEventView(e)
		if restrict != nil {
			restrict(&v, e)
		}
		page.Events = append(page.Events, v)
	}
	httpjson.Write(w, http.StatusOK, page)
}

// auditError answers a failure of the store or of the session check: 503 with Retry-After
// when the database is unreachable, else a logged 500.
func (p *Provider) auditError(w http.ResponseWriter, r *http.Request, err error) {
	if httpjson.Unavailable(err) {
		w.Header().Set("Retry-After", "5")
		httpjson.WriteError(w, http.StatusServiceUnavailable, "the service is temporarily unavailable")
		return
	}
	p.log.ErrorContext(r.Context(), "listing security events failed", "path", r.URL.Path, "error", err)
	httpjson.WriteError(w, http.StatusInternalServerError, "internal error")
}

// eventPage is the answer of both listings; nextCursor is null on the last page.
type eventPage struct {
	Events     []eventView `json:"events"`
	NextCursor *string     `json:"nextCursor"`
}

// eventView is one security event: at in RFC 3339 UTC; userId, clientId and ip null when
// the event has none; details an object of the type's own fields.
type eventView struct {
	ID        string          `json:"id"`
	At        string          `json:"at"`
	Type      string          `json:"type"`
	UserID    *string         `json:"userId"`
	ClientID  *string         `json:"clientId"`
	IP        *string         `json:"ip"`
	UserAgent string          `json:"userAgent"`
	Method    string          `json:"method"`
	Outcome   string          `json:"outcome"`
	Details   json.RawMessage `json:"details"`
}

func newEventView(e *storage.SecurityEvent) eventView {
	v := eventView{ID: e.ID, At: e.At.UTC().Format(time.RFC3339), Type: e.Type, UserAgent: e.UserAgent,
		Method: e.Method, Outcome: e.Outcome, Details: e.Details, UserID: nonEmpty(e.UserID), ClientID: nonEmpty(e.ClientID)}
	if e.IP.IsValid() {
		v.IP = nonEmpty(e.IP.String())
	}
	if len(v.Details) == 0 {
		v.Details = json.RawMessage("{}")
	}
	return v
}

// nonEmpty is nil for "", else a pointer to s.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// eventCursor is the opaque cursor's content, base64url-encoded (as GET /api/admin/audit's).
type eventCursor struct {
	At time.Time `json:"t"`
	ID string    `json:"k"`
}

func encodeEventCursor(c storage.SecurityEventCursor) string {
	b, _ := json.Marshal(eventCursor{At: c.At.UTC(), ID: c.ID}) // cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeEventCursor reads a cursor; "" is the start. It reports false for anything a
// listing did not return.
func decodeEventCursor(s string) (storage.SecurityEventCursor, bool) {
	if s == "" {
		return storage.SecurityEventCursor{}, true
	}
	var c eventCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.At.IsZero() || c.ID == "" || len(c.ID) > 255 {
		return storage.SecurityEventCursor{}, false
	}
	return storage.SecurityEventCursor{At: c.At.UTC(), ID: c.ID}, true
}
