package permissions_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authz "github.com/gatehouse-id/gatehouse/internal/bearer"
	"github.com/gatehouse-id/gatehouse/permissions"
)

// memStore is one in-memory "database" behind every interface the permissions package
// declares: the records and audit log (Store), the users and applications (Directory), the
// bearer tokens (Tokens) and the admin sessions (Admins). Sharing one state is what makes
// RevokeTokensOf really invalidate the tokens Validate accepts, as in the real database.
//
// InTx is honest: a transaction works on a deep copy of the committed state carried by the
// context, and only a nil error from fn publishes that copy; transactions run one at a
// time (txMu), which is the record lock the real store takes, made coarser.
type memStore struct {
	txMu sync.Mutex // held for the whole of one outermost transaction

	mu        sync.Mutex // guards committed, failAudit and raceInsert
	committed *memState

	// failAudit, when set, is what AddAuditEntry returns (a database failure mid-change).
	failAudit error
	// raceInsert, when set, makes the next insert of a record lose a race: the record is
	// committed as if by another transaction and the insert returns ErrRecordExists.
	raceInsert *permissions.Record
}

// memState is everything memStore keeps; clone gives a transaction its own copy.
type memState struct {
	users    map[string]memUser // by id
	apps     map[string]string  // client id → display name
	records  map[[2]string]*permissions.Record
	audit    []*permissions.AuditEntry
	tokens   map[string]permissions.TokenInfo // bearer → what it says
	sessions map[string]string                // admin-session cookie value → user id
}

type memUser struct{ admin bool }

func newMemStore() *memStore {
	return &memStore{committed: &memState{
		users: map[string]memUser{}, apps: map[string]string{}, records: map[[2]string]*permissions.Record{},
		tokens: map[string]permissions.TokenInfo{}, sessions: map[string]string{},
	}}
}

func (s *memState) clone() *memState {
	c := &memState{
		users: map[string]memUser{}, apps: map[string]string{}, records: map[[2]string]*permissions.Record{},
		audit: make([]*permissions.AuditEntry, 0, len(s.audit)), tokens: map[string]permissions.TokenInfo{},
		sessions: map[string]string{},
	}
	for k, v := range s.users {
		c.users[k] = v
	}
	for k, v := range s.apps {
		c.apps[k] = v
	}
	for k, v := range s.records {
		c.records[k] = copyRecord(v)
	}
	for _, e := range s.audit {
		ce := *e
		ce.Before, ce.After = copyRecord(e.Before), copyRecord(e.After)
		c.audit = append(c.audit, &ce)
	}
	for k, v := range s.tokens {
		v.Scopes = slices.Clone(v.Scopes)
		c.tokens[k] = v
	}
	for k, v := range s.sessions {
		c.sessions[k] = v
	}
	return c
}

// copyRecord is a deep copy: the store never shares a record with its callers.
func copyRecord(r *permissions.Record) *permissions.Record {
	if r == nil {
		return nil
	}
	c := *r
	if r.RequestedAt != nil {
		t := *r.RequestedAt
		c.RequestedAt = &t
	}
	if r.GrantedAt != nil {
		t := *r.GrantedAt
		c.GrantedAt = &t
	}
	return &c
}

type txKey struct{}

// tx is a transaction in progress: its own copy of the state.
type tx struct{ state *memState }

// read runs fn on the state ctx sees: its transaction's copy, else the committed state.
func (s *memStore) read(ctx context.Context, fn func(st *memState) error) error {
	if t, ok := ctx.Value(txKey{}).(*tx); ok {
		return fn(t.state)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(s.committed)
}

// write runs fn on ctx's transaction, or on a transaction of its own.
func (s *memStore) write(ctx context.Context, fn func(st *memState) error) error {
	return s.InTx(ctx, func(ctx context.Context) error { return s.read(ctx, fn) })
}

// seed commits fn's change of the state at once, outside any transaction (test setup, and
// the "other transaction" of raceInsert). Like a commit it replaces the state whole.
func (s *memStore) seed(fn func(st *memState)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.committed.clone()
	fn(next)
	s.committed = next
}

// setFailures sets failAudit and raceInsert.
func (s *memStore) setFailures(failAudit error, raceInsert *permissions.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failAudit, s.raceInsert = failAudit, raceInsert
}

// snapshot is the committed state. Commits replace it whole, so the caller may read it
// while the service goes on.
func (s *memStore) snapshot() *memState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// InTx implements permissions.Store.
func (s *memStore) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(*tx); ok {
		return fn(ctx) // nested: joins the outer transaction
	}
	s.txMu.Lock()
	defer s.txMu.Unlock()
	s.mu.Lock()
	t := &tx{state: s.committed.clone()}
	s.mu.Unlock()
	if err := fn(context.WithValue(ctx, txKey{}, t)); err != nil {
		return err // the copy is dropped: rolled back
	}
	s.mu.Lock()
	s.committed = t.state
	s.mu.Unlock()
	return nil
}

// Permission implements permissions.Store.
func (s *memStore) Permission(ctx context.Context, userID, clientID string) (*permissions.Record, error) {
	var r *permissions.Record
	err := s.read(ctx, func(st *memState) error {
		found, ok := st.records[[2]string{userID, clientID}]
		if !ok {
			return permissions.ErrNoRecord
		}
		r = copyRecord(found)
		r.AppName = st.apps[clientID]
		return nil
	})
	return r, err
}

// SavePermission implements permissions.Store.
func (s *memStore) SavePermission(ctx context.Context, r *permissions.Record, created bool) error {
	key := [2]string{r.UserID, r.ClientID}
	s.mu.Lock()
	winner := s.raceInsert
	lose := created && winner != nil && winner.UserID == r.UserID && winner.ClientID == r.ClientID
	if lose {
		s.raceInsert = nil
	}
	s.mu.Unlock()
	if lose {
		s.seed(func(st *memState) { st.records[key] = copyRecord(winner) })
		return permissions.ErrRecordExists
	}
	return s.read(ctx, func(st *memState) error {
		_, exists := st.records[key]
		switch {
		case created && exists:
			return permissions.ErrRecordExists
		case !created && !exists:
			return permissions.ErrNoRecord
		}
		if _, ok := st.users[r.UserID]; !ok {
			return permissions.ErrUnknownUser
		}
		if _, ok := st.apps[r.ClientID]; !ok {
			return permissions.ErrUnknownClient
		}
		stored := copyRecord(r)
		stored.AppName = ""
		st.records[key] = stored
		return nil
	})
}

// AddAuditEntry implements permissions.Store.
func (s *memStore) AddAuditEntry(ctx context.Context, e *permissions.AuditEntry) error {
	s.mu.Lock()
	fail := s.failAudit
	s.mu.Unlock()
	if fail != nil {
		return fail
	}
	return s.read(ctx, func(st *memState) error {
		c := *e
		c.Before, c.After = copyRecord(e.Before), copyRecord(e.After)
		st.audit = append(st.audit, &c)
		return nil
	})
}

// cursorCompare orders (at, key) against the cursor position c, as the listings sort.
func cursorCompare(at time.Time, key string, c permissions.Cursor) int {
	if n := at.Compare(c.At); n != 0 {
		return n
	}
	return strings.Compare(key, c.Key)
}

// ListPermissions implements permissions.Store.
func (s *memStore) ListPermissions(ctx context.Context, clientID, status string, from permissions.Cursor, limit int) ([]*permissions.Record, error) {
	var out []*permissions.Record
	err := s.read(ctx, func(st *memState) error {
		for _, r := range st.records {
			if r.ClientID != clientID || (status != "" && r.Status != status) {
				continue
			}
			if !from.IsZero() && cursorCompare(r.CreatedAt, r.UserID, from) <= 0 {
				continue
			}
			c := copyRecord(r)
			c.AppName = st.apps[clientID]
			out = append(out, c)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b *permissions.Record) int {
		return cursorCompare(a.CreatedAt, a.UserID, permissions.Cursor{At: b.CreatedAt, Key: b.UserID})
	})
	return out[:min(limit, len(out))], err
}

// ListAuditEntries implements permissions.Store.
func (s *memStore) ListAuditEntries(ctx context.Context, f permissions.AuditFilter, from permissions.Cursor, limit int) ([]*permissions.AuditEntry, error) {
	var out []*permissions.AuditEntry
	err := s.read(ctx, func(st *memState) error {
		for _, e := range st.audit {
			if (f.UserID != "" && e.UserID != f.UserID) || (f.ClientID != "" && e.ClientID != f.ClientID) {
				continue
			}
			if !from.IsZero() && cursorCompare(e.At, e.ID, from) <= 0 {
				continue
			}
			c := *e
			c.Before, c.After = copyRecord(e.Before), copyRecord(e.After)
			out = append(out, &c)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b *permissions.AuditEntry) int {
		return cursorCompare(a.At, a.ID, permissions.Cursor{At: b.At, Key: b.ID})
	})
	return out[:min(limit, len(out))], err
}

// RevokeTokensOf implements permissions.Store: the user-bound tokens of subject at clientID
// stop validating once the transaction commits.
func (s *memStore) RevokeTokensOf(ctx context.Context, subject, clientID string) error {
	return s.write(ctx, func(st *memState) error {
		for bearer, info := range st.tokens {
			if info.UserBound && info.Subject == subject && info.ClientID == clientID {
				delete(st.tokens, bearer)
			}
		}
		return nil
	})
}

// UserExists implements permissions.Directory.
func (s *memStore) UserExists(ctx context.Context, userID string) error {
	return s.read(ctx, func(st *memState) error {
		if _, ok := st.users[userID]; !ok {
			return permissions.ErrUnknownUser
		}
		return nil
	})
}

// AppName implements permissions.Directory.
func (s *memStore) AppName(ctx context.Context, clientID string) (string, error) {
	var name string
	err := s.read(ctx, func(st *memState) error {
		var ok bool
		if name, ok = st.apps[clientID]; !ok {
			return permissions.ErrUnknownClient
		}
		return nil
	})
	return name, err
}

// Validate implements permissions.Tokens over the bearer tokens of the committed state.
func (s *memStore) Validate(r *http.Request) (permissions.TokenInfo, error) {
	var info permissions.TokenInfo
	cred, _ := authz.FromHeader(r)
	err := s.read(r.Context(), func(st *memState) error {
		var ok bool
		if info, ok = st.tokens[cred.Token]; !ok || cred.Scheme != authz.SchemeBearer {
			return permissions.ErrInvalidToken
		}
		return nil
	})
	return info, err
}

// adminCookie names the fake's session cookie.
const adminCookie = "admin-session"

// memAdmins implements permissions.Admins over the sessions of a memStore.
type memAdmins struct{ s *memStore }

func (a memAdmins) Admin(r *http.Request) (string, error) {
	ck, err := r.Cookie(adminCookie)
	if err != nil || strings.TrimSpace(ck.Value) == "" {
		return "", permissions.ErrNoSession
	}
	var id string
	err = a.s.read(r.Context(), func(st *memState) error {
		uid, ok := st.sessions[ck.Value]
		if !ok {
			return permissions.ErrNoSession
		}
		if !st.users[uid].admin {
			return permissions.ErrNotAdmin
		}
		id = uid
		return nil
	})
	return id, err
}
