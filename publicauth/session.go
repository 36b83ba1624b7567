package publicauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
)

// tokenBytes is the entropy of a session token, link token and PIN challenge id: 256 bits.
const tokenBytes = 32

// StartSession logs u in: it stores a new session of the given kind (SessionPublic or
// SessionAdmin) that authenticated by method (MethodPassword, …) and sets its cookie on w
// (`public-session`: SameSite=Lax; `admin-session`: SameSite=Strict; both HttpOnly, Path=/,
// Max-Age = the kind's lifespan, Secure unless Config.InsecureCookies). The cookie carries a
// random 256-bit token signed with HMAC-SHA-256; the store keeps only its SHA-256. AuthTime
// is now, and Methods records method completed now, with a PIN beside a password or
// magic-link login of a user behind the PIN gate (the gate let the login reach here only
// through the PIN). Call it before anything is written to the response body.
//
// It returns ErrAccountDisabled for a user who is not active and ErrNotAdmin for an admin
// session of a user whose role is not RoleAdmin.
func (s *Service) StartSession(ctx context.Context, w http.ResponseWriter, u *User, kind, method string) (*Session, error) {
	c, err := s.cookie(kind)
	if err != nil {
		return nil, err
	}
	if method == "" {
		return nil, errors.New("publicauth: start session: empty login method")
	}
	if u.Status != StatusActive {
		return nil, ErrAccountDisabled
	}
	if kind == SessionAdmin && u.Role != RoleAdmin {
		return nil, ErrNotAdmin
	}
	token, err := s.newToken()
	if err != nil {
		return nil, err
	}
	value, err := c.encode(token)
	if err != nil {
		return nil, fmt.Errorf("publicauth: %w", err)
	}
	sid, err := s.newToken()
	if err != nil {
		return nil, err
	}
	now := s.now()
	sess := &Session{
		IDHash:    hashToken(token),
		SID:       sid,
		UserID:    u.ID,
		Kind:      kind,
		Method:    method,
		AuthTime:  now,
		Methods:   []acr.Method{{Name: method, At: now}},
		CreatedAt: now,
		ExpiresAt: now.Add(c.lifespan),
	}
	if (method == MethodPassword || method == MethodMagicLink) && s.PINRequired(u) {
		sess.Methods = append(sess.Methods, acr.Method{Name: acr.PIN, At: now})
	}
	// The session and its login.succeeded record commit together.
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.CreateSession(ctx, sess); err != nil {
			return fmt.Errorf("publicauth: create session: %w", err)
		}
		return s.events.Emit(ctx, &events.LoginSucceeded{UserID: u.ID, Method: method, SessionKind: kind, PIN: s.PINRequired(u)})
	})
	if err != nil {
		return nil, err
	}
	c.set(w, value, s.secureCookies)
	return sess, nil
}

// AddSessionMethod records on sess, a session CurrentSession returned, that its user has
// just completed m (a second factor, or a first factor again for max_age or
// prompt=login): a step-up keeps the session, its cookie and its sid, and only adds to
// what it knows. m.At is set to now when zero. It returns the session as stored, with
// every method (concurrent additions included), or ErrSessionNotFound when it has ended.
func (s *Service) AddSessionMethod(ctx context.Context, sess *Session, m acr.Method) (*Session, error) {
	if m.Name == "" {
		return nil, errors.New("publicauth: add session method: empty method")
	}
	now := s.now()
	if m.At.IsZero() {
		m.At = now
	}
	updated, err := s.store.AddSessionMethod(ctx, sess.IDHash, m, now)
	if errors.Is(err, ErrSessionNotFound) {
		return nil, ErrSessionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("publicauth: add session method: %w", err)
	}
	return updated, nil
}

// ReplaceSession deletes the session of the given kind that r already carries, if any, and
// starts a new one for u, so logging in again leaves no stale session behind. Every login
// (the JSON API's and the provider's hosted pages) goes through it.
func (s *Service) ReplaceSession(ctx context.Context, w http.ResponseWriter, r *http.Request, u *User, kind, method string) (*Session, error) {
	c, err := s.cookie(kind)
	if err != nil {
		return nil, err
	}
	if err := s.deleteRequestSession(ctx, r, c); err != nil {
		return nil, err
	}
	return s.StartSession(ctx, w, u, kind, method)
}

// CurrentSession returns the session of the given kind that r's cookie names, and its user,
// with its Methods (CompletedMethods).
// The cookie's signature must verify, the session must exist, be of that kind and not have
// expired by the service clock, and the user must be active (and, for SessionAdmin, still
// hold RoleAdmin); otherwise it returns ErrSessionNotFound. Other errors are store failures.
func (s *Service) CurrentSession(r *http.Request, kind string) (*Session, *User, error) {
	c, err := s.cookie(kind)
	if err != nil {
		return nil, nil, err
	}
	token, ok := c.token(r)
	if !ok {
		return nil, nil, ErrSessionNotFound
	}
	ctx := r.Context()
	now := s.now()
	sess, u, err := s.store.SessionByIDHash(ctx, hashToken(token), now)
	if errors.Is(err, ErrSessionNotFound) {
		return nil, nil, ErrSessionNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("publicauth: load session: %w", err)
	}
	if sess.Kind != kind || !sess.ExpiresAt.After(now) {
		return nil, nil, ErrSessionNotFound
	}
	if u, err = s.sessionUser(ctx, sess, u); err != nil {
		return nil, nil, err
	}
	if u.Status != StatusActive || (kind == SessionAdmin && u.Role != RoleAdmin) {
		return nil, nil, ErrSessionNotFound
	}
	sess.Methods = sess.CompletedMethods()
	return sess, u, nil
}

// sessionUser is the account of sess. Gatehouse's own store answered it with the session,
// in the same query (joined, nil when the user is gone); any other Accounts store is asked.
func (s *Service) sessionUser(ctx context.Context, sess *Session, joined *User) (*User, error) {
	if s.own {
		if joined == nil {
			return nil, ErrSessionNotFound
		}
		return joined, nil
	}
	u, err := s.users.userByID(ctx, sess.UserID)
	if errors.Is(err, ErrUserNotFound) {
		return nil, ErrSessionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("publicauth: load account of session: %w", err)
	}
	return u, nil
}

// SignedIn returns the user of r's valid `public-session` (as CurrentSession checks it), or
// nil when r carries none. An error is a store failure.
func (s *Service) SignedIn(r *http.Request) (*User, error) {
	_, u, err := s.CurrentSession(r, SessionPublic)
	if errors.Is(err, ErrSessionNotFound) {
		return nil, nil
	}
	return u, err
}

// EndSession logs out of the session of the given kind that r's cookie names: it deletes the
// stored session and sets an expired cookie on w. It is idempotent: without a cookie, or
// with one that does not verify, it only clears the cookie and returns nil. An error is a
// store failure; the cookie is cleared all the same.
func (s *Service) EndSession(ctx context.Context, w http.ResponseWriter, r *http.Request, kind string) error {
	c, err := s.cookie(kind)
	if err != nil {
		return err
	}
	c.clear(w, s.secureCookies)
	return s.deleteRequestSession(ctx, r, c)
}

// deleteRequestSession deletes the stored session r's cookie c names, if it names one; it
// leaves the cookie alone.
func (s *Service) deleteRequestSession(ctx context.Context, r *http.Request, c cookieCodec) error {
	token, ok := c.token(r)
	if !ok {
		return nil
	}
	if err := s.store.DeleteSession(ctx, hashToken(token)); err != nil {
		return fmt.Errorf("publicauth: delete session: %w", err)
	}
	return nil
}

// EndAllSessions deletes every session, public and admin, of the user, so every cookie
// issued to them stops working (after a password change, on disabling the account).
func (s *Service) EndAllSessions(ctx context.Context, userID string) error {
	if err := s.store.DeleteUserSessions(ctx, userID); err != nil {
		return fmt.Errorf("publicauth: delete sessions of user: %w", err)
	}
	return nil
}

// revokeAccess ends every session of the user and revokes every token and consent the user
// granted to clients, emitting FamilyRevoked and ConsentWithdrawn for reason. Callers run it inside the transaction of the change that asks for it
// (a password set or reset, an address verified for the first time, the account disabled),
// so the change and the revocation commit together or not at all: whoever held the account
// before the change keeps nothing that was issued to them.
func (s *Service) revokeAccess(ctx context.Context, userID, reason string) error {
	if err := s.store.RevokeUserGrants(ctx, userID); err != nil {
		return fmt.Errorf("publicauth: revoke grants of user: %w", err)
	}
	if err := s.grantsRevoked(ctx, userID, reason); err != nil {
		return err
	}
	return s.EndAllSessions(ctx, userID)
}

// newToken returns a fresh random 256-bit token, base64url without padding.
func (s *Service) newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := io.ReadFull(s.random, b); err != nil {
		return "", fmt.Errorf("publicauth: read random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hashToken is the key a session or one-time link is stored under: the hex SHA-256 of the
// token text.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
