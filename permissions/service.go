package permissions

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/internal/sameorigin"
)

// Config configures a Service.
type Config struct {
	// KeepTokensOnRevoke leaves the user's tokens alone when a DELETE revokes a permission.
	// Default false: in the transaction of the revocation, the user's access tokens for
	// that client are deleted and their refresh tokens deactivated, so the application
	// must send the user through login again (and then reads the revoked record).
	KeepTokensOnRevoke bool
	// BaseURL is the deployment's absolute http(s) URL (the issuer). A PUT, POST or DELETE
	// carrying a cookie (an admin session) is refused when its Origin, or lacking it
	// Sec-Fetch-Site, names another origin (package internal/sameorigin). Required.
	BaseURL string
}

// Page sizes of the listings.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// maxChangeAttempts bounds the retries of a change whose insert lost a race with another
// transaction's insert of the same record; the retry finds that record and locks it.
const maxChangeAttempts = 3

// Option supplies a collaborator of a Service.
type Option func(*options)

type options struct {
	clock  func() time.Time
	random io.Reader
	logger *slog.Logger
	events *events.Emitter
}

// WithClock makes the service read the time from clock. Nil, or no WithClock, is time.Now.
func WithClock(clock func() time.Time) Option { return func(o *options) { o.clock = clock } }

// WithRandom makes the service draw audit entry ids from random. Nil, or no WithRandom, is
// crypto/rand.Reader.
func WithRandom(random io.Reader) Option { return func(o *options) { o.random = random } }

// WithLogger makes the service log internal errors behind a 500 answer to logger. Nil, or
// no WithLogger, is slog.Default().
func WithLogger(logger *slog.Logger) Option { return func(o *options) { o.logger = logger } }

// WithEvents makes the service emit a PermissionChanged for every change of a record (and
// a FamilyRevoked when a revocation revokes the user's tokens for the client), delivered
// once the change has committed. A nil em, or no WithEvents, emits nothing.
func WithEvents(em *events.Emitter) Option { return func(o *options) { o.events = em } }

// Service reads and changes permission records. It is safe for concurrent use.
type Service struct {
	cfg    Config
	store  Store
	tokens Tokens
	admins Admins
	dir    Directory
	// sameOrigin guards the routes (Routes).
	sameOrigin sameorigin.Guard
	clock      func() time.Time
	random     io.Reader
	logger     *slog.Logger
	events     *events.Emitter
}

// New returns a Service over its collaborators; none may be nil.
func New(cfg Config, store Store, tokens Tokens, admins Admins, dir Directory, opts ...Option) (*Service, error) {
	if store == nil || tokens == nil || admins == nil || dir == nil {
		return nil, errors.New("permissions: New needs a Store, Tokens, Admins and Directory")
	}
	sameOrigin, ok := sameorigin.New(cfg.BaseURL)
	if !ok {
		return nil, fmt.Errorf("permissions: BaseURL must be an absolute http(s) URL, got %q", cfg.BaseURL)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.random == nil {
		o.random = rand.Reader
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	return &Service{cfg: cfg, store: store, tokens: tokens, admins: admins, dir: dir, sameOrigin: sameOrigin,
		clock: o.clock, random: o.random, logger: o.logger, events: o.events}, nil
}

// now is the service's time in UTC at the microsecond precision the store keeps, so what a
// change returns equals what a later read returns.
func (s *Service) now() time.Time { return s.clock().UTC().Truncate(time.Microsecond) }

// Get returns the record of (userID, clientID): ErrUnknownUser, ErrUnknownClient, or
// ErrNoRecord when there is none.
func (s *Service) Get(ctx context.Context, userID, clientID string) (*Record, error) {
	appName, err := s.lookup(ctx, userID, clientID)
	if err != nil {
		return nil, err
	}
	r, err := s.store.Permission(ctx, userID, clientID)
	if err != nil {
		return nil, err
	}
	r.AppName = appName
	return r, nil
}

// Put sets the status and role of the record of (userID, clientID), creating it when there
// is none (created is then true). An approval stamps GrantedAt and GrantedBy from by.
func (s *Service) Put(ctx context.Context, by Actor, userID, clientID, status, role string) (r *Record, created bool, err error) {
	switch {
	case status == "":
		return nil, false, &InputError{Field: "status", Reason: "is required"}
	case !validStatus(status):
		return nil, false, &InputError{Field: "status", Reason: "must be one of pending, approved, revoked"}
	case role == "":
		return nil, false, &InputError{Field: "role", Reason: "is required"}
	case !validRole(role):
		return nil, false, &InputError{Field: "role", Reason: "must be one of none, user, admin"}
	}
	return s.change(ctx, by, ActionUpdate, userID, clientID, func(r *Record, now time.Time) (bool, error) {
		applyPut(r, status, role, by, now)
		return true, nil
	})
}

// Revoke leaves the record of (userID, clientID) revoked with role none (creating it when
// there is none) and, unless Config.KeepTokensOnRevoke, revokes the user's access and
// refresh tokens for the client in the same transaction.
func (s *Service) Revoke(ctx context.Context, by Actor, userID, clientID string) (*Record, error) {
	r, _, err := s.change(ctx, by, ActionRevoke, userID, clientID, func(r *Record, now time.Time) (bool, error) {
		applyRevoke(r, now)
		return true, nil
	})
	return r, err
}

// RequestAccess records the user's request for access to clientID: a new pending record
// (RequestCreated) when there is none or it was revoked, the unchanged record
// (RequestPending) when a request is already pending, and ErrAlreadyApproved when access
// is approved.
func (s *Service) RequestAccess(ctx context.Context, userID, clientID string) (*Record, RequestOutcome, error) {
	var outcome RequestOutcome
	r, _, err := s.change(ctx, Actor{Kind: ActorUser, ID: userID}, ActionRequestAccess, userID, clientID,
		func(r *Record, now time.Time) (bool, error) {
			var err error
			outcome, err = applyRequest(r, now)
			return outcome == RequestCreated, err
		})
	return r, outcome, err
}

// lookup checks that the user and the client exist and returns the client's name.
func (s *Service) lookup(ctx context.Context, userID, clientID string) (string, error) {
	if err := s.dir.UserExists(ctx, userID); err != nil {
		return "", err
	}
	return s.dir.AppName(ctx, clientID)
}

// change applies apply to the record of (userID, clientID) in one transaction: it locks the
// record (or starts from a new one), applies the change and, when apply reports one, saves
// the record, writes the audit entry and (for a revocation, unless configured off) revokes
// the user's tokens. A lost insert race is retried.
func (s *Service) change(ctx context.Context, by Actor, action, userID, clientID string,
	apply func(r *Record, now time.Time) (changed bool, err error)) (*Record, bool, error) {
	appName, err := s.lookup(ctx, userID, clientID)
	if err != nil {
		return nil, false, err
	}
	for attempt := 1; ; attempt++ {
		var result *Record
		var created bool
		err := s.store.InTx(ctx, func(ctx context.Context) error {
			before, err := s.store.Permission(ctx, userID, clientID)
			created = errors.Is(err, ErrNoRecord)
			if err != nil && !created {
				return err
			}
			now := s.now()
			next := before.clone()
			if created {
				next = newRecord(userID, clientID, now)
			}
			changed, err := apply(next, now)
			if err != nil {
				return err
			}
			next.AppName = appName
			result = next
			if !changed {
				return nil
			}
			if err := s.store.SavePermission(ctx, next, created); err != nil {
				return err
			}
			if before != nil {
				before.AppName = appName
			}
			id, err := uuid.NewRandomFromReader(s.random)
			if err != nil {
				return fmt.Errorf("permissions: audit entry id: %w", err)
			}
			entry := &AuditEntry{ID: id.String(), UserID: userID, ClientID: clientID, Actor: by,
				Action: action, Before: before, After: next, At: now}
			if err := s.store.AddAuditEntry(ctx, entry); err != nil {
				return err
			}
			if err := s.events.Emit(ctx, changedEvent(entry)); err != nil {
				return err
			}
			if action == ActionRevoke && !s.cfg.KeepTokensOnRevoke {
				if err := s.events.Emit(ctx, &events.FamilyRevoked{Reason: events.ReasonPermissionRevoked, Subject: userID, ClientID: clientID}); err != nil {
					return err
				}
				return s.store.RevokeTokensOf(ctx, userID, clientID)
			}
			return nil
		})
		if errors.Is(err, ErrRecordExists) && attempt < maxChangeAttempts {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		return result, created, nil
	}
}

// ListApp returns one page of the records of clientID, only those with status when status
// is not empty, oldest first, and the cursor of the next page ("" after the last page).
func (s *Service) ListApp(ctx context.Context, clientID, status, cursor string, limit int) ([]*Record, string, error) {
	if status != "" && !validStatus(status) {
		return nil, "", &InputError{Field: "status", Reason: "must be one of pending, approved, revoked"}
	}
	after, err := checkPage(cursor, limit)
	if err != nil {
		return nil, "", err
	}
	appName, err := s.dir.AppName(ctx, clientID)
	if err != nil {
		return nil, "", err
	}
	records, err := s.store.ListPermissions(ctx, clientID, status, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	for _, r := range records {
		r.AppName = appName
	}
	records, next := nextPage(records, limit, func(r *Record) Cursor { return Cursor{At: r.CreatedAt, Key: r.UserID} })
	return records, next, nil
}

// ListAudit returns one page of the audit entries matching f, oldest first, and the cursor
// of the next page ("" after the last page).
func (s *Service) ListAudit(ctx context.Context, f AuditFilter, cursor string, limit int) ([]*AuditEntry, string, error) {
	after, err := checkPage(cursor, limit)
	if err != nil {
		return nil, "", err
	}
	entries, err := s.store.ListAuditEntries(ctx, f, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	entries, next := nextPage(entries, limit, func(e *AuditEntry) Cursor { return Cursor{At: e.At, Key: e.ID} })
	return entries, next, nil
}

// checkPage validates the paging parameters and decodes the cursor.
func checkPage(cursor string, limit int) (Cursor, error) {
	if limit < 1 || limit > MaxPageSize {
		return Cursor{}, &InputError{Field: "limit", Reason: fmt.Sprintf("must be between 1 and %d", MaxPageSize)}
	}
	return decodeCursor(cursor)
}

// nextPage cuts items (fetched with one more than limit) to limit and returns the cursor
// after the last item kept, or "" when nothing follows.
func nextPage[T any](items []T, limit int, key func(T) Cursor) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, encodeCursor(key(items[limit-1]))
}

// cursorJSON is the opaque cursor's content, base64url-encoded.
type cursorJSON struct {
	At  time.Time `json:"t"`
	Key string    `json:"k"`
}

func encodeCursor(c Cursor) string {
	b, _ := json.Marshal(cursorJSON{At: c.At.UTC(), Key: c.Key}) // cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	var c cursorJSON
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.At.IsZero() || c.Key == "" {
		return Cursor{}, &InputError{Field: "cursor", Reason: "is not a cursor this listing returned"}
	}
	return Cursor{At: c.At.UTC(), Key: c.Key}, nil
}

// changedEvent is the PermissionChanged of an audit entry.
func changedEvent(a *AuditEntry) *events.PermissionChanged {
	e := &events.PermissionChanged{Meta: events.Meta{At: a.At}, UserID: a.UserID, ClientID: a.ClientID, Action: a.Action,
		ActorKind: a.Actor.Kind, ActorID: a.Actor.ID, NewStatus: a.After.Status, NewRole: a.After.Role}
	if a.Before != nil {
		e.OldStatus, e.OldRole = a.Before.Status, a.Before.Role
	}
	return e
}
