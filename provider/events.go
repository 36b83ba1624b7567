package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// Event is an event the provider emits: one of the pointer types aliased below, each
// documenting when it fires (package events has the rules of delivery).
type Event = events.Event

// EventMeta is what every event carries: when, and from which client address and user agent.
type EventMeta = events.Meta

// The events the provider emits, re-exported from package events so that an embedder needs
// only this package; a sink type-switches on their pointers (case *provider.LoginFailed).
type (
	// LoginSucceeded: a session started (every factor passed).
	LoginSucceeded = events.LoginSucceeded
	// LoginFailed: a password, PIN or magic-link login was refused.
	LoginFailed = events.LoginFailed
	// UserRegistered: an account was created (registration, first upstream login, operator).
	UserRegistered = events.UserRegistered
	// EmailVerified: an account's address became verified.
	EmailVerified = events.EmailVerified
	// PasswordReset: a user set a new password through a reset link.
	PasswordReset = events.PasswordReset
	// PasswordAdded: a social-only account got a password.
	PasswordAdded = events.PasswordAdded
	// TokenIssued: the token endpoint issued tokens.
	TokenIssued = events.TokenIssued
	// TokenRevoked: a client revoked a token at the revocation endpoint.
	TokenRevoked = events.TokenRevoked
	// FamilyRevoked: Gatehouse revoked a grant (reuse) or every grant of a user.
	FamilyRevoked = events.FamilyRevoked
	// ConsentGranted: a user allowed a client on the consent page.
	ConsentGranted = events.ConsentGranted
	// ConsentWithdrawn: a user's consents were withdrawn.
	ConsentWithdrawn = events.ConsentWithdrawn
	// PermissionChanged: a permission record was created or changed.
	PermissionChanged = events.PermissionChanged
	// IdentityLinked: an upstream identity was linked to an existing account.
	IdentityLinked = events.IdentityLinked
	// ClientChanged: an operator created, changed, rekeyed or deleted a client.
	ClientChanged = events.ClientChanged
	// KeyAdded: a signing key was added, by hand or on schedule.
	KeyAdded = events.KeyAdded
)

// WithEvents makes the provider call sink with every event it emits: logins, registrations,
// verifications, password changes, linked identities, tokens issued and revoked, families
// of tokens revoked, consents, permission changes, client changes and signing keys added
// (see Event). The audit trail records them whether or not there is a sink (README
// "Audit trail"). sink runs once the change has committed,
// never while a database transaction is open, and never for a change that rolled back. It
// runs synchronously on the goroutine of the request that made the change, with that
// request's context, so it should return quickly; a panic in it is recovered and logged,
// and the request goes on. A nil sink, or no WithEvents, emits nothing.
func WithEvents(sink func(ctx context.Context, e Event)) Option {
	return func(o *options) error { o.events = sink; return nil }
}

// emitter is the Emitter of the provider's events: it records each in store's audit trail
// (storage.Store.RecordSecurityEvent), in the transaction of its change, and delivers it
// to the sink WithEvents gave, if any. It keeps no state, so every part of the provider
// may build its own.
func (o options) emitter(store *storage.Store) *events.Emitter {
	return events.NewEmitter(o.events, o.logger, o.now, events.WithRecorder(store.RecordSecurityEvent))
}

// eventRequest records r's client address and user agent on ctx for the events emitted
// (and the permission audit entries written) while serving it.
func (p *Provider) eventRequest(ctx context.Context, r *http.Request) context.Context {
	return events.WithRequest(ctx, publicauth.ClientIP(r, p.cfg.PublicAuth.TrustedProxies), r.UserAgent())
}

// tokenIssued is the TokenIssued of a token response.
func tokenIssued(ar fosite.AccessRequester, session *Session, resp fosite.AccessResponder) *events.TokenIssued {
	return &events.TokenIssued{
		GrantType:    ar.GetGrantTypes()[0],
		ClientID:     ar.GetClient().GetID(),
		Subject:      session.Subject,
		UserBound:    session.UserBound,
		Scopes:       ar.GetGrantedScopes(),
		Audience:     ar.GetGrantedAudience(),
		TokenID:      jwtID(resp.GetAccessToken()),
		GrantID:      ar.GetID(),
		RefreshToken: resp.GetExtra("refresh_token") != nil,
		IDToken:      resp.GetExtra("id_token") != nil,
	}
}

// jwtID returns the jti of a JWT the provider has just signed, read without verifying it;
// "" when it has none.
func jwtID(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		ID string `json:"jti"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.ID
}

// grantWatch is what the fosite store saw, while fosite served one token or revocation
// request, of the grant behind the code or token presented (eventStore records it).
type grantWatch struct {
	// found is the grant of an active token, and kind that token's (events.Kind…).
	found fosite.Requester
	kind  string
	// spent is the grant of a code or refresh token presented again after its use, and
	// reason the events.Reason… of revoking that grant.
	spent  fosite.Requester
	reason string
}

type grantWatchKey struct{}

// watchGrant returns a context on which eventStore records what it sees into the returned
// grantWatch; without a sink it returns ctx and nil.
func (p *Provider) watchGrant(ctx context.Context) (context.Context, *grantWatch) {
	if p.events == nil {
		return ctx, nil
	}
	w := &grantWatch{}
	return context.WithValue(ctx, grantWatchKey{}, w), w
}

// eventStore is the store fosite uses when events are on: the provider's store, watching
// the lookups of the token and revocation endpoints (watchGrant) and emitting FamilyRevoked
// when fosite revokes the grant of a spent code or refresh token. It embeds *storage.Store,
// so fosite still finds every interface the store implements (transactions among them).
type eventStore struct {
	*storage.Store
	events *events.Emitter
}

// GetRefreshTokenSession records an active token's grant, or a spent one's.
func (s eventStore) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	w, session := watching(ctx, session)
	r, err := s.Store.GetRefreshTokenSession(ctx, signature, session)
	w.see(r, err, events.KindRefreshToken, fosite.ErrInactiveToken, events.ReasonRefreshTokenReuse)
	return r, err
}

// GetAuthorizeCodeSession records a spent code's grant.
func (s eventStore) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	w, session := watching(ctx, session)
	r, err := s.Store.GetAuthorizeCodeSession(ctx, signature, session)
	w.see(r, err, "", fosite.ErrInvalidatedAuthorizeCode, events.ReasonCodeReuse)
	return r, err
}

// RevokeRefreshToken emits FamilyRevoked when the grant revoked is the spent one the request
// presented: fosite revokes it on reuse. Inside fosite's transaction the event waits for the
// commit.
func (s eventStore) RevokeRefreshToken(ctx context.Context, requestID string) error {
	err := s.Store.RevokeRefreshToken(ctx, requestID)
	if w, _ := ctx.Value(grantWatchKey{}).(*grantWatch); err == nil && w != nil && w.spent != nil && w.spent.GetID() == requestID {
		// Recorded in fosite's transaction: the revocation and its record commit together.
		err = s.events.Emit(ctx, &events.FamilyRevoked{Reason: w.reason, Subject: subjectOf(w.spent),
			ClientID: w.spent.GetClient().GetID(), GrantID: requestID})
	}
	return err
}

// watching returns the grantWatch ctx carries (nil without one) and the session to load
// into: a fresh one when fosite passed none (revocation), so the subject can be read.
func watching(ctx context.Context, session fosite.Session) (*grantWatch, fosite.Session) {
	w, _ := ctx.Value(grantWatchKey{}).(*grantWatch)
	if w != nil && session == nil {
		session = newSession()
	}
	return w, session
}

// see records r, which a lookup returned with err: as found (of kind) when active, as spent
// (for reason) when err is the store's answer for a used code or token.
func (w *grantWatch) see(r fosite.Requester, err error, kind string, spentErr error, reason string) {
	switch {
	case w == nil || r == nil:
	case err == nil && kind != "":
		w.found, w.kind = r, kind
	case spentErr != nil && err != nil && errors.Is(err, spentErr):
		w.spent, w.reason = r, reason
	}
}

// tokenRevoked is the TokenRevoked of the grant w found, nil when it found none.
func (w *grantWatch) tokenRevoked() *events.TokenRevoked {
	if w == nil || w.found == nil {
		return nil
	}
	return &events.TokenRevoked{Kind: w.kind, ClientID: w.found.GetClient().GetID(),
		Subject: subjectOf(w.found), GrantID: w.found.GetID()}
}

// subjectOf is the subject of r's session, "" without one.
func subjectOf(r fosite.Requester) string {
	if s := r.GetSession(); s != nil {
		return s.GetSubject()
	}
	return ""
}

// fositeStore is the store fosite runs on: the provider's own, watched by eventStore when
// there is a sink.
func (p *Provider) fositeStore() fositeStore {
	if p.events == nil {
		return p.store
	}
	return eventStore{Store: p.store, events: p.events}
}
