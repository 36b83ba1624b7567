package social_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/publicauth"
)

// memStore is an in-memory publicauth.Store and publicauth.IdentityStore: what the social
// login reaches through publicauth (users by email and identity, sessions, links). Emails
// are unique by publicauth.EmailKey, as the real store's unique index keeps them.
//
// Transactions are honest: InTx gives the context its own deep copy of the state (a nested
// InTx a copy of its parent's); success hands the copy to the parent, or publishes it, and
// an error or panic drops it. Outermost transactions run one at a time (txMu).
type memStore struct {
	txMu sync.Mutex // held from an outermost begin to its commit or rollback

	mu        sync.Mutex // guards committed
	committed *memState
}

// memState is everything memStore keeps.
type memState struct {
	users        map[string]*publicauth.User // by id
	identities   map[[2]string]string        // (provider, subject) → user id
	sessions     map[string]*publicauth.Session
	grantsRevoke map[string]int // user id → RevokeUserGrants calls
	oneTime      map[[2]string]*publicauth.OneTimeToken
	pins         map[string]*publicauth.PINChallenge
	redirectURIs map[string]bool
	mails        map[string]*publicauth.QueuedMail // the mail outbox, by id
}

func newMemStore() *memStore {
	return &memStore{committed: &memState{
		users: map[string]*publicauth.User{}, identities: map[[2]string]string{}, sessions: map[string]*publicauth.Session{},
		grantsRevoke: map[string]int{}, oneTime: map[[2]string]*publicauth.OneTimeToken{}, pins: map[string]*publicauth.PINChallenge{},
		redirectURIs: map[string]bool{}, mails: map[string]*publicauth.QueuedMail{},
	}}
}

func copyUser(u *publicauth.User) *publicauth.User {
	c := *u
	c.SocialProviders = slices.Clone(u.SocialProviders)
	return &c
}

func (s *memState) clone() *memState {
	c := &memState{
		users: map[string]*publicauth.User{}, identities: map[[2]string]string{}, sessions: map[string]*publicauth.Session{},
		grantsRevoke: map[string]int{}, oneTime: map[[2]string]*publicauth.OneTimeToken{}, pins: map[string]*publicauth.PINChallenge{},
		redirectURIs: map[string]bool{}, mails: map[string]*publicauth.QueuedMail{},
	}
	for k, v := range s.mails {
		cv := *v
		c.mails[k] = &cv
	}
	for k, v := range s.users {
		c.users[k] = copyUser(v)
	}
	for k, v := range s.identities {
		c.identities[k] = v
	}
	for k, v := range s.sessions {
		cv := *v
		c.sessions[k] = &cv
	}
	for k, v := range s.grantsRevoke {
		c.grantsRevoke[k] = v
	}
	for k, v := range s.oneTime {
		cv := *v
		c.oneTime[k] = &cv
	}
	for k, v := range s.pins {
		cv := *v
		c.pins[k] = &cv
	}
	for k, v := range s.redirectURIs {
		c.redirectURIs[k] = v
	}
	return c
}

// userByEmail finds the user whose email has the key of email.
func (s *memState) userByEmail(email string) (*publicauth.User, bool) {
	key, err := publicauth.EmailKey(email)
	if err != nil {
		return nil, false
	}
	for _, u := range s.users {
		if k, err := publicauth.EmailKey(u.Email); err == nil && k == key {
			return u, true
		}
	}
	return nil, false
}

type txKey struct{}

// memTx is an open transaction: its copy of the state, its parent (nil when outermost).
type memTx struct {
	state  *memState
	parent *memTx
	done   bool
}

// do runs fn, a change, on ctx's transaction, or as a transaction of its own.
func (s *memStore) do(ctx context.Context, fn func(st *memState) error) error {
	if t, ok := ctx.Value(txKey{}).(*memTx); ok && !t.done {
		return fn(t.state)
	}
	s.txMu.Lock()
	defer s.txMu.Unlock()
	s.mu.Lock()
	next := s.committed.clone()
	s.mu.Unlock()
	if err := fn(next); err != nil {
		return err
	}
	s.mu.Lock()
	s.committed = next
	s.mu.Unlock()
	return nil
}

// view runs fn, which must not change anything, on the state ctx sees.
func (s *memStore) view(ctx context.Context, fn func(st *memState) error) error {
	if t, ok := ctx.Value(txKey{}).(*memTx); ok && !t.done {
		return fn(t.state)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(s.committed)
}

// seed commits fn's change at once (test setup).
func (s *memStore) seed(fn func(st *memState)) {
	_ = s.do(context.Background(), func(st *memState) error { fn(st); return nil })
}

// snapshot is the committed state; commits replace it whole.
func (s *memStore) snapshot() *memState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// InTx implements publicauth.Transactional: fn's writes are kept only when it returns nil.
func (s *memStore) InTx(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	tctx := s.begin(ctx)
	defer func() {
		if p := recover(); p != nil {
			s.rollback(tctx)
			panic(p)
		}
	}()
	if err := fn(tctx); err != nil {
		s.rollback(tctx)
		return err
	}
	return s.commit(tctx)
}

// begin starts a transaction, nested in ctx's when it has one.
func (s *memStore) begin(ctx context.Context) context.Context {
	if parent, ok := ctx.Value(txKey{}).(*memTx); ok && !parent.done {
		return context.WithValue(ctx, txKey{}, &memTx{state: parent.state.clone(), parent: parent})
	}
	s.txMu.Lock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return context.WithValue(ctx, txKey{}, &memTx{state: s.committed.clone()})
}

// commit keeps the transaction's writes: in its parent, or published.
func (s *memStore) commit(ctx context.Context) error {
	t, ok := ctx.Value(txKey{}).(*memTx)
	if !ok || t.done {
		return errors.New("memstore: commit without a transaction")
	}
	t.done = true
	if t.parent != nil {
		t.parent.state = t.state
		return nil
	}
	s.mu.Lock()
	s.committed = t.state
	s.mu.Unlock()
	s.txMu.Unlock()
	return nil
}

// rollback drops the transaction's writes; after commit it does nothing.
func (s *memStore) rollback(ctx context.Context) {
	t, ok := ctx.Value(txKey{}).(*memTx)
	if !ok || t.done {
		return
	}
	t.done = true
	if t.parent == nil {
		s.txMu.Unlock()
	}
}

// CreateUser implements publicauth.UserStore.
func (s *memStore) CreateUser(ctx context.Context, u *publicauth.User) error {
	return s.do(ctx, func(st *memState) error { return st.insertUser(u) })
}

func (st *memState) insertUser(u *publicauth.User) error {
	if _, taken := st.userByEmail(u.Email); taken {
		return publicauth.ErrEmailTaken
	}
	st.users[u.ID] = copyUser(u)
	return nil
}

// UserByID implements publicauth.UserStore.
func (s *memStore) UserByID(ctx context.Context, id string) (*publicauth.User, error) {
	var out *publicauth.User
	err := s.view(ctx, func(st *memState) error {
		u, ok := st.users[id]
		if !ok {
			return publicauth.ErrUserNotFound
		}
		out = copyUser(u)
		return nil
	})
	return out, err
}

// UserByEmail implements publicauth.UserStore.
func (s *memStore) UserByEmail(ctx context.Context, email string) (*publicauth.User, error) {
	var out *publicauth.User
	err := s.view(ctx, func(st *memState) error {
		u, ok := st.userByEmail(email)
		if !ok {
			return publicauth.ErrUserNotFound
		}
		out = copyUser(u)
		return nil
	})
	return out, err
}

// ChangeUser implements publicauth.UserStore.
func (s *memStore) ChangeUser(ctx context.Context, id string, c publicauth.UserChange) (*publicauth.User, error) {
	var out *publicauth.User
	err := s.do(ctx, func(st *memState) error {
		u, ok := st.users[id]
		if !ok {
			return publicauth.ErrUserNotFound
		}
		if c.PasswordHash != nil {
			u.PasswordHash = *c.PasswordHash
		}
		if c.EmailVerified != nil {
			u.EmailVerified = *c.EmailVerified
		}
		if c.RequirePIN != nil {
			u.RequirePIN = *c.RequirePIN
		}
		if c.Status != nil {
			u.Status = *c.Status
		}
		u.UpdatedAt = time.Now().UTC()
		out = copyUser(u)
		return nil
	})
	return out, err
}

// DeleteUser implements publicauth.UserStore: the user goes with what refers to it, as the
// foreign keys of package storage cascade.
func (s *memStore) DeleteUser(ctx context.Context, id string) error {
	return s.do(ctx, func(st *memState) error {
		if _, ok := st.users[id]; !ok {
			return publicauth.ErrUserNotFound
		}
		delete(st.users, id)
		maps.DeleteFunc(st.identities, func(_ [2]string, userID string) bool { return userID == id })
		maps.DeleteFunc(st.sessions, func(_ string, sess *publicauth.Session) bool { return sess.UserID == id })
		maps.DeleteFunc(st.oneTime, func(_ [2]string, t *publicauth.OneTimeToken) bool { return t.UserID == id })
		maps.DeleteFunc(st.pins, func(_ string, c *publicauth.PINChallenge) bool { return c.UserID == id })
		return nil
	})
}

// RevokeUserGrants implements publicauth.GrantStore: it counts the revocations.
func (s *memStore) RevokeUserGrants(ctx context.Context, userID string) error {
	return s.do(ctx, func(st *memState) error { st.grantsRevoke[userID]++; return nil })
}

// CreateSession implements publicauth.SessionStore.
func (s *memStore) CreateSession(ctx context.Context, sess *publicauth.Session) error {
	return s.do(ctx, func(st *memState) error {
		c := *sess
		st.sessions[sess.IDHash] = &c
		return nil
	})
}

// SessionByIDHash implements publicauth.SessionStore.
func (s *memStore) SessionByIDHash(ctx context.Context, idHash string, now time.Time) (*publicauth.Session, *publicauth.User, error) {
	var sess *publicauth.Session
	var u *publicauth.User
	err := s.view(ctx, func(st *memState) error {
		found, ok := st.sessions[idHash]
		if !ok || !found.ExpiresAt.After(now) {
			return publicauth.ErrSessionNotFound
		}
		c := *found
		sess, u = &c, copyUser(st.users[found.UserID])
		return nil
	})
	return sess, u, err
}

// AddSessionMethod implements publicauth.SessionStore.
func (s *memStore) AddSessionMethod(ctx context.Context, idHash string, m acr.Method, now time.Time) (*publicauth.Session, error) {
	var sess *publicauth.Session
	err := s.do(ctx, func(st *memState) error {
		found, ok := st.sessions[idHash]
		if !ok || !found.ExpiresAt.After(now) {
			return publicauth.ErrSessionNotFound
		}
		found.Methods = acr.Append(found.Methods, m)
		c := *found
		sess = &c
		return nil
	})
	return sess, err
}

// DeleteSession implements publicauth.SessionStore.
func (s *memStore) DeleteSession(ctx context.Context, idHash string) error {
	return s.do(ctx, func(st *memState) error { delete(st.sessions, idHash); return nil })
}

// DeleteUserSessions implements publicauth.SessionStore.
func (s *memStore) DeleteUserSessions(ctx context.Context, userID string) error {
	return s.do(ctx, func(st *memState) error {
		for k, v := range st.sessions {
			if v.UserID == userID {
				delete(st.sessions, k)
			}
		}
		return nil
	})
}

// CreateOneTimeToken implements publicauth.TokenStore.
func (s *memStore) CreateOneTimeToken(ctx context.Context, t *publicauth.OneTimeToken, supersede bool) error {
	return s.do(ctx, func(st *memState) error {
		if supersede {
			for _, o := range st.oneTime {
				if o.UserID == t.UserID && o.Purpose == t.Purpose && o.UsedAt == nil {
					now := t.CreatedAt
					o.UsedAt = &now
				}
			}
		}
		c := *t
		st.oneTime[[2]string{t.IDHash, t.Purpose}] = &c
		return nil
	})
}

// usable returns the token while it is unused and unexpired at now.
func (st *memState) usable(idHash, purpose string, now time.Time) (*publicauth.OneTimeToken, error) {
	t, ok := st.oneTime[[2]string{idHash, purpose}]
	if !ok || t.UsedAt != nil || !t.ExpiresAt.After(now) {
		return nil, publicauth.ErrInvalidToken
	}
	return t, nil
}

// ConsumeOneTimeToken implements publicauth.TokenStore.
func (s *memStore) ConsumeOneTimeToken(ctx context.Context, idHash, purpose string, now time.Time) (*publicauth.OneTimeToken, error) {
	var out *publicauth.OneTimeToken
	err := s.do(ctx, func(st *memState) error {
		t, err := st.usable(idHash, purpose, now)
		if err != nil {
			return err
		}
		t.UsedAt = &now
		c := *t
		out = &c
		return nil
	})
	return out, err
}

// UsableOneTimeToken implements publicauth.TokenStore.
func (s *memStore) UsableOneTimeToken(ctx context.Context, idHash, purpose string, now time.Time) (*publicauth.OneTimeToken, error) {
	var out *publicauth.OneTimeToken
	err := s.view(ctx, func(st *memState) error {
		t, err := st.usable(idHash, purpose, now)
		if err == nil {
			c := *t
			out = &c
		}
		return err
	})
	return out, err
}

// CreatePINChallenge implements publicauth.PINStore.
func (s *memStore) CreatePINChallenge(ctx context.Context, c *publicauth.PINChallenge) error {
	return s.do(ctx, func(st *memState) error {
		cc := *c
		st.pins[c.ID] = &cc
		return nil
	})
}

// ReservePINAttempt implements publicauth.PINStore.
func (s *memStore) ReservePINAttempt(ctx context.Context, id string, maxAttempts int, now time.Time) (*publicauth.PINChallenge, error) {
	var out *publicauth.PINChallenge
	err := s.do(ctx, func(st *memState) error {
		c, ok := st.pins[id]
		if !ok || c.UsedAt != nil || !c.ExpiresAt.After(now) || c.Attempts >= maxAttempts {
			return publicauth.ErrChallengeInvalid
		}
		c.Attempts++
		cc := *c
		out = &cc
		return nil
	})
	return out, err
}

// ConsumePINChallenge implements publicauth.PINStore.
func (s *memStore) ConsumePINChallenge(ctx context.Context, id string, now time.Time) error {
	return s.do(ctx, func(st *memState) error {
		c, ok := st.pins[id]
		if !ok || c.UsedAt != nil || !c.ExpiresAt.After(now) {
			return publicauth.ErrChallengeInvalid
		}
		c.UsedAt = &now
		return nil
	})
}

// IsRegisteredRedirectURI implements publicauth.RedirectURIs.
func (s *memStore) IsRegisteredRedirectURI(ctx context.Context, uri string) (bool, error) {
	var ok bool
	err := s.view(ctx, func(st *memState) error { ok = st.redirectURIs[uri]; return nil })
	return ok, err
}

// UserByIdentity implements publicauth.IdentityStore.
func (s *memStore) UserByIdentity(ctx context.Context, provider, subject string) (*publicauth.User, error) {
	var out *publicauth.User
	err := s.view(ctx, func(st *memState) error {
		id, ok := st.identities[[2]string{provider, subject}]
		if !ok {
			return publicauth.ErrIdentityNotFound
		}
		out = copyUser(st.users[id])
		return nil
	})
	return out, err
}

// CreateUserWithIdentity implements publicauth.IdentityStore: both or neither.
func (s *memStore) CreateUserWithIdentity(ctx context.Context, u *publicauth.User, id publicauth.Identity) error {
	return s.do(ctx, func(st *memState) error {
		if _, taken := st.identities[[2]string{id.Provider, id.Subject}]; taken {
			return publicauth.ErrIdentityTaken
		}
		if err := st.insertUser(u); err != nil {
			return err
		}
		st.identities[[2]string{id.Provider, id.Subject}] = u.ID
		return nil
	})
}

// LinkIdentity implements publicauth.IdentityStore.
func (s *memStore) LinkIdentity(ctx context.Context, userID string, id publicauth.Identity) (*publicauth.User, error) {
	var out *publicauth.User
	err := s.do(ctx, func(st *memState) error {
		u, ok := st.users[userID]
		if !ok {
			return publicauth.ErrUserNotFound
		}
		if _, taken := st.identities[[2]string{id.Provider, id.Subject}]; taken {
			return publicauth.ErrIdentityTaken
		}
		st.identities[[2]string{id.Provider, id.Subject}] = userID
		if !slices.Contains(u.SocialProviders, id.Provider) {
			u.SocialProviders = append(u.SocialProviders, id.Provider)
			slices.Sort(u.SocialProviders)
		}
		out = copyUser(u)
		return nil
	})
	return out, err
}

// The mail outbox keeps a mail's next attempt in its PurgeAt field: nothing here purges.

// EnqueueMail implements publicauth.MailOutbox.
func (s *memStore) EnqueueMail(ctx context.Context, m *publicauth.QueuedMail) error {
	return s.do(ctx, func(st *memState) error {
		c := *m
		c.PurgeAt = m.CreatedAt // due at once
		st.mails[m.ID] = &c
		return nil
	})
}

// ClaimMail implements publicauth.MailOutbox; the outermost transactions run one at a
// time, so no two claims return the same mail.
func (s *memStore) ClaimMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]publicauth.QueuedMail, error) {
	var out []publicauth.QueuedMail
	err := s.do(ctx, func(st *memState) error {
		for _, m := range st.mails {
			if len(out) < limit && m.FailedAt == nil && !m.PurgeAt.After(now) {
				m.PurgeAt, m.Attempts = now.Add(lease), m.Attempts+1
				out = append(out, *m)
			}
		}
		return nil
	})
	return out, err
}

// MailDelivered implements publicauth.MailOutbox.
func (s *memStore) MailDelivered(ctx context.Context, id string) error {
	return s.do(ctx, func(st *memState) error { delete(st.mails, id); return nil })
}

// MailFailed implements publicauth.MailOutbox.
func (s *memStore) MailFailed(ctx context.Context, id, reason string, next time.Time, giveUp bool, now time.Time) error {
	return s.do(ctx, func(st *memState) error {
		if m, ok := st.mails[id]; ok {
			m.LastError, m.PurgeAt = reason, next
			if giveUp {
				m.FailedAt, m.Sealed = &now, nil
			}
		}
		return nil
	})
}

// MailQueueState implements publicauth.MailOutbox.
func (s *memStore) MailQueueState(ctx context.Context, now time.Time) (publicauth.MailQueue, error) {
	var q publicauth.MailQueue
	err := s.view(ctx, func(st *memState) error {
		for _, m := range st.mails {
			switch {
			case m.FailedAt != nil:
				q.GivenUp++
			case !m.PurgeAt.After(now):
				q.Queued++
				q.Due++
			default:
				q.Queued++
			}
		}
		return nil
	})
	return q, err
}
