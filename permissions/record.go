package permissions

import (
	"slices"
	"time"
)

// Status values of a permission record (SSO interface §3).
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusRevoked  = "revoked"
)

// Role values of a permission record (SSO interface §3).
const (
	RoleNone  = "none"
	RoleUser  = "user"
	RoleAdmin = "admin"
)

// Statuses and Roles list the valid values, in the order error messages name them.
var (
	statuses = []string{StatusPending, StatusApproved, StatusRevoked}
	roles    = []string{RoleNone, RoleUser, RoleAdmin}
)

// Record is the permission a user holds for one client application (SSO interface §2,
// "Permission record"). There is at most one per (UserID, ClientID).
//
// The JSON tags fix the form in which the audit log stores snapshots of a record.
type Record struct {
	UserID   string `json:"userId"`
	ClientID string `json:"clientId"`
	// AppName is the client's display name, set by the service from the client when it
	// returns a record; the store does not keep it.
	AppName string `json:"appName"`
	// HasAccess is Status == approved and Role != none, kept in step by every change.
	HasAccess bool   `json:"hasAccess"`
	Status    string `json:"status"`
	Role      string `json:"role"`
	// RequestedAt is when the user last asked for access; nil when the record was created
	// by a PUT without a request.
	RequestedAt *time.Time `json:"requestedAt"`
	// GrantedAt and GrantedBy are stamped by each approval: the admin's user id, or
	// "client:<clientId>" for a client-managed approval. A revocation keeps them (they
	// tell who granted what was revoked); a new access request clears them.
	GrantedAt *time.Time `json:"grantedAt"`
	GrantedBy string     `json:"grantedBy"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

// clone returns a copy of r that shares nothing with it.
func (r *Record) clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.RequestedAt = clonedTime(r.RequestedAt)
	c.GrantedAt = clonedTime(r.GrantedAt)
	return &c
}

func clonedTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// Actor kinds: who made a change.
const (
	ActorAdmin  = "admin"
	ActorClient = "client"
	ActorUser   = "user"
)

// Actor is who changes a record: an admin (ID is the admin's user id), a client application
// with a client token (ID is the client id) or the user asking for access (ID is the user id).
type Actor struct {
	Kind string
	ID   string
}

// ClientGrantPrefix begins the Record.GrantedBy of a client-managed approval:
// "client:<clientId>". Any other GrantedBy is an admin's user id.
const ClientGrantPrefix = "client:"

// grantedBy is what an approval by a stamps into Record.GrantedBy: the admin's user id, or
// ClientGrantPrefix and the client id.
func (a Actor) grantedBy() string {
	if a.Kind == ActorClient {
		return ClientGrantPrefix + a.ID
	}
	return a.ID
}

// Audit actions: what a change was.
const (
	ActionRequestAccess = "request-access"
	ActionUpdate        = "update"
	ActionRevoke        = "revoke"
)

// AuditEntry records one change of a record: who made it, which record, the record before
// (nil when the change created it) and after, and when. It is written in the transaction
// of the change.
type AuditEntry struct {
	// ID is a random UUID; entries are ordered by (At, ID).
	ID       string
	UserID   string
	ClientID string
	Actor    Actor
	Action   string
	Before   *Record
	After    *Record
	At       time.Time
}

// validStatus and validRole check a value of the request body.
func validStatus(s string) bool { return slices.Contains(statuses, s) }
func validRole(r string) bool   { return slices.Contains(roles, r) }

// newRecord is the empty record of (userID, clientID) created at now, before a change
// applies to it.
func newRecord(userID, clientID string, now time.Time) *Record {
	return &Record{UserID: userID, ClientID: clientID, Status: StatusPending, Role: RoleNone, CreatedAt: now}
}

// applyPut sets status and role as given (SSO interface §3: any state may be set by a PUT),
// derives HasAccess and, on approval, stamps GrantedAt and GrantedBy.
func applyPut(r *Record, status, role string, by Actor, now time.Time) {
	r.Status, r.Role = status, role
	if status == StatusApproved {
		r.GrantedAt, r.GrantedBy = &now, by.grantedBy()
	}
	r.HasAccess = r.Status == StatusApproved && r.Role != RoleNone
	r.UpdatedAt = now
}

// applyRevoke leaves r revoked with role none and no access (both DELETE routes).
func applyRevoke(r *Record, now time.Time) {
	r.Status, r.Role, r.HasAccess = StatusRevoked, RoleNone, false
	r.UpdatedAt = now
}

// RequestOutcome is what an access request did.
type RequestOutcome int

const (
	// RequestCreated: a new pending request (no record before, or a revoked one): 201.
	RequestCreated RequestOutcome = iota + 1
	// RequestPending: the request was already pending; nothing changed: 200.
	RequestPending
)

// applyRequest moves r to a new pending request, or reports that it need not change. It
// returns ErrAlreadyApproved for an approved record (409).
func applyRequest(r *Record, now time.Time) (RequestOutcome, error) {
	switch r.Status {
	case StatusApproved:
		return 0, ErrAlreadyApproved
	case StatusPending:
		if r.RequestedAt != nil {
			return RequestPending, nil
		}
	}
	// New, revoked, or pending without a request (set by a PUT): a fresh request.
	r.Status, r.Role, r.HasAccess = StatusPending, RoleNone, false
	r.RequestedAt = &now
	r.GrantedAt, r.GrantedBy = nil, ""
	r.UpdatedAt = now
	return RequestCreated, nil
}
