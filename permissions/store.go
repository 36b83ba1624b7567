package permissions

import (
	"context"
	"net/http"
	"time"
)

// Store persists permission records and their audit log, and revokes tokens, in one
// database so that one transaction covers a change, its audit entry and the revocation.
type Store interface {
	// InTx runs fn in one transaction carried by the context fn receives; every other
	// method called with that context joins it. fn's error rolls it back and is returned.
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
	// Permission returns the record of (userID, clientID) with AppName filled from the
	// client, or ErrNoRecord. Inside a transaction it locks the record until the
	// transaction ends, so concurrent changes of one pair run one after the other.
	Permission(ctx context.Context, userID, clientID string) (*Record, error)
	// SavePermission inserts r when created is true, else updates the record of
	// (r.UserID, r.ClientID) to r (AppName is not stored). An insert that finds the record
	// already there returns ErrRecordExists and leaves the transaction usable; an insert
	// for an unknown client returns ErrUnknownClient. The user is not checked (UserExists
	// is): a record refers to its account by id, which may live outside Gatehouse.
	SavePermission(ctx context.Context, r *Record, created bool) error
	// AddAuditEntry appends e to the audit log.
	AddAuditEntry(ctx context.Context, e *AuditEntry) error
	// ListPermissions returns up to limit records of clientID (only those with status, when
	// status is not empty), ordered by (CreatedAt, UserID), starting after the cursor
	// position (zero Cursor: from the start).
	ListPermissions(ctx context.Context, clientID, status string, after Cursor, limit int) ([]*Record, error)
	// ListAuditEntries returns up to limit entries matching f, ordered by (At, ID), starting
	// after the cursor position (zero Cursor: from the start).
	ListAuditEntries(ctx context.Context, f AuditFilter, after Cursor, limit int) ([]*AuditEntry, error)
	// RevokeTokensOf revokes the access and refresh tokens subject holds for clientID.
	RevokeTokensOf(ctx context.Context, subject, clientID string) error
}

// Cursor is a position in a listing: the sort key of the last item of the previous page.
// For records Key is the user id, for audit entries the entry id.
type Cursor struct {
	At  time.Time
	Key string
}

// IsZero reports whether c is the start of a listing.
func (c Cursor) IsZero() bool { return c.At.IsZero() && c.Key == "" }

// AuditFilter selects audit entries; an empty field matches every value.
type AuditFilter struct {
	UserID   string
	ClientID string
}

// Tokens validates the access token a request presents in its Authorization header (the
// Bearer scheme, or DPoP with its proof): a token that is unknown, malformed, expired or
// revoked, or a proof that fails, is refused with an error matching ErrInvalidToken (a
// *TokenError when the answer needs headers of its own). Any other error is a failure of
// the token store.
type Tokens interface {
	Validate(r *http.Request) (TokenInfo, error)
}

// Admins is the admin check of the admin routes: it returns the user id of the admin r
// comes from (an `admin-session`, or a `public-session` whose user has role admin), or
// ErrNoSession when r carries no valid session and ErrNotAdmin when its user is no admin.
type Admins interface {
	Admin(r *http.Request) (adminUserID string, err error)
}

// Directory knows the users and client applications the records refer to.
type Directory interface {
	// UserExists returns nil when a user has that id, else ErrUnknownUser.
	UserExists(ctx context.Context, userID string) error
	// AppName returns the display name of the client, or ErrUnknownClient.
	AppName(ctx context.Context, clientID string) (string, error)
}
