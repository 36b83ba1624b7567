package permissions

import "slices"

// ScopeManagePermissions is the scope a client token needs to read and write permission
// records of its own client (SSO interface §5).
const ScopeManagePermissions = "manage_permissions"

// TokenInfo is what a valid bearer token says about its holder.
type TokenInfo struct {
	// Subject is the user id of a user-bound token, the client id of a client token.
	Subject string
	// ClientID is the client the token was issued to.
	ClientID string
	Scopes   []string
	// UserBound is true for tokens issued on behalf of a user (authorization_code and
	// refresh_token grants), false for client tokens (client_credentials). A user-bound
	// token never acts as its client, whatever scopes it carries.
	UserBound bool
}

// caller is who sends a request: the holder of a valid bearer token, or an admin (by
// session). At most one is set.
type caller struct {
	token   *TokenInfo
	adminID string
}

// operation is what a request asks to do.
type operation int

const (
	opRead          operation = iota + 1 // GET a record
	opClientWrite                        // client-managed PUT and DELETE
	opRequestAccess                      // POST request-access
	opAdmin                              // admin PUT and DELETE, admin listings
)

// authorize is the one place that decides whether c may do op on the record of
// (userID, clientID) (SSO interface §4 items 15–20, §5; DESIGN §4). It returns nil, or the
// error the request is refused with:
//
//   - read: a user-bound token of the same client whose subject is the user; a client
//     token of the same client with manage_permissions; an admin.
//   - client-managed write: a client token of the same client with manage_permissions.
//   - request-access: a user-bound token whose client is clientID and subject is userID.
//   - admin routes: an admin.
//
// A token of another client is ErrClientMismatch, whatever else is wrong with it.
func authorize(op operation, c caller, userID, clientID string) error {
	if op == opAdmin {
		if c.adminID == "" {
			return ErrNoSession
		}
		return nil
	}
	if c.token == nil {
		if op == opRead && c.adminID != "" {
			return nil
		}
		return ErrNoCredentials
	}
	t := c.token
	if t.ClientID != clientID {
		return ErrClientMismatch
	}
	switch {
	case op == opRequestAccess && !t.UserBound:
		return ErrUserTokenRequired
	case op == opClientWrite && t.UserBound:
		return ErrClientTokenRequired
	case t.UserBound && t.Subject != userID:
		return ErrSubjectMismatch
	case !t.UserBound && !slices.Contains(t.Scopes, ScopeManagePermissions):
		return ErrScopeMissing
	}
	return nil
}

// actor is who c acts as in a change it is allowed to make.
func (c caller) actor() Actor {
	switch {
	case c.adminID != "":
		return Actor{Kind: ActorAdmin, ID: c.adminID}
	case c.token.UserBound:
		return Actor{Kind: ActorUser, ID: c.token.Subject}
	default:
		return Actor{Kind: ActorClient, ID: c.token.ClientID}
	}
}
