package storage

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/gatehouse-id/gatehouse/internal/aftercommit"
)

// errNoTransaction is returned by Commit and Rollback on a context BeginTX did not return.
var errNoTransaction = errors.New("storage: no transaction in context")

// txKey is the context key of the transaction BeginTX starts.
type txKey struct{}

// txState is what BeginTX stores on the context.
type txState struct {
	// store is the Store that began the transaction; another Store ignores it.
	store *Store
	// root is the outermost transaction, shared with the savepoints nested in it.
	root *txRoot
	// savepoint names the savepoint of a nested BeginTX; empty for the outermost one.
	savepoint string
	depth     int
	// pending are the authorization codes created in this transaction (or savepoint) and
	// not written yet: fosite stores a code, then its OpenID Connect and PKCE data, one call
	// after another, and all three go into the one INSERT written before the next statement,
	// the commit or the savepoint's release (see CreateAuthorizeCodeSession).
	pending []*authorizationCodeModel
	// sessionClient is the RecordSessionClient of this transaction not written yet, nil when
	// none is (see RecordSessionClient): on Postgres it and a pending code are written
	// together at Commit, as one statement, when nothing else runs in the transaction.
	sessionClient *sessionClientRecord
}

// sessionClientRecord is a deferred RecordSessionClient: client clientID was issued a code in
// the browser session sid.
type sessionClientRecord struct{ sid, clientID string }

// txRoot is the database transaction of a BeginTX. It is begun lazily, by the first
// statement that needs it: a transaction whose only write is the INSERT of its pending
// codes (an authorization) commits as that one statement on the pool, atomic by itself,
// without the BEGIN and COMMIT round trips.
type txRoot struct {
	tx *gorm.DB // nil until begun
}

// begin returns the database transaction of st, beginning it on first use.
func (st *txState) begin(ctx context.Context) (*gorm.DB, error) {
	if st.root.tx == nil {
		tx := st.store.db.WithContext(ctx).Begin()
		if tx.Error != nil {
			return nil, fmt.Errorf("storage: begin transaction: %w", unavailable(tx.Error))
		}
		st.root.tx = tx
	}
	return st.root.tx.WithContext(ctx), nil
}

// flush writes the pending codes of st in one INSERT, inside the transaction, then the
// deferred session client, if any.
func (st *txState) flush(ctx context.Context) error {
	if len(st.pending) == 0 && st.sessionClient == nil {
		return nil
	}
	tx, err := st.begin(ctx)
	if err != nil {
		return err
	}
	if rows := st.pending; len(rows) > 0 {
		st.pending = nil
		if err := tx.Create(rows).Error; err != nil {
			return fmt.Errorf("storage: create authorization code: %w", err)
		}
	}
	if rec := st.sessionClient; rec != nil {
		st.sessionClient = nil
		return st.store.recordSessionClient(tx, rec.sid, rec.clientID)
	}
	return nil
}

func (s *Store) txFrom(ctx context.Context) *txState {
	st, _ := ctx.Value(txKey{}).(*txState)
	if st == nil || st.store != s {
		return nil
	}
	return st
}

// BeginTX starts a transaction and returns a context carrying it; every method of s called
// with that context (or one derived from it) runs inside the transaction until Commit or
// Rollback. It implements fosite's storage.Transactional.
//
// The database transaction begins with the first statement run in it, and a transaction
// whose only statement would be the INSERT of the authorization codes created in it runs
// that INSERT alone at Commit, with no BEGIN or COMMIT: one statement is atomic by itself.
// On SQLite the transaction takes the write lock as it begins (BEGIN IMMEDIATE), so
// concurrent writers queue rather than fail. On Postgres it runs at READ COMMITTED; the conditional
// updates of codes and refresh tokens make concurrent use safe.
//
// BeginTX on a context that already carries a transaction of s does not start a second one:
// it sets a savepoint and returns a context marked as nested. Commit of a nested context
// releases the savepoint (its writes become part of the outer transaction, committed or
// rolled back with it); Rollback of a nested context undoes only the writes made since
// the nested BeginTX. Only the outermost Commit makes anything durable.
//
// Work deferred on the returned context with package internal/aftercommit (every event
// package events emits) runs only once the outermost transaction has committed, and is
// dropped with a rollback, of the whole transaction or of the savepoint it was deferred in.
//
// A method that answers a constraint violation with a sentinel (ErrConflict,
// publicauth.ErrEmailTaken, …) leaves the transaction usable. Any other database error
// inside a transaction may leave it aborted (Postgres): roll it back.
func (s *Store) BeginTX(ctx context.Context) (context.Context, error) {
	if parent := s.txFrom(ctx); parent != nil {
		if err := parent.flush(ctx); err != nil {
			return ctx, err
		}
		tx, err := parent.begin(ctx)
		if err != nil {
			return ctx, err
		}
		name := fmt.Sprintf("gatehouse_sp_%d", parent.depth+1)
		if err := tx.SavePoint(name).Error; err != nil {
			return ctx, fmt.Errorf("storage: begin nested transaction: %w", err)
		}
		return context.WithValue(aftercommit.Begin(ctx), txKey{}, &txState{
			store: s, root: parent.root, savepoint: name, depth: parent.depth + 1,
		}), nil
	}
	// The database transaction begins with the first statement (txRoot). Deferred work
	// runs with ctx, which carries no transaction.
	return context.WithValue(aftercommit.Begin(ctx), txKey{}, &txState{store: s, root: &txRoot{}}), nil
}

// Commit commits the transaction BeginTX put into ctx (or releases its savepoint, for a
// nested one). Without a transaction in ctx it returns an error. Once the outermost
// transaction committed, Commit runs the work deferred in it (aftercommit.Do); when the
// commit fails, that work is dropped.
func (s *Store) Commit(ctx context.Context) error {
	st := s.txFrom(ctx)
	if st == nil {
		return errNoTransaction
	}
	if st.savepoint == "" && st.root.tx == nil && (st.sessionClient == nil || len(st.pending) <= 1) {
		// Nothing ran in the transaction: what it wrote (its codes, or a code and the record
		// of the session it was issued in) is one statement on the pool, atomic by itself.
		codes, rec := st.pending, st.sessionClient
		st.pending, st.sessionClient = nil, nil
		var err error
		switch {
		case rec != nil:
			err = s.issueInSession(ctx, rec, codes)
		case len(codes) > 0:
			if err = s.db.WithContext(ctx).Create(codes).Error; err != nil {
				err = fmt.Errorf("storage: create authorization code: %w", unavailable(err))
			}
		}
		if err != nil {
			aftercommit.Discard(ctx)
			return err
		}
		aftercommit.Commit(ctx)
		return nil
	}
	if err := st.flush(ctx); err != nil {
		// What the transaction wrote before cannot commit without what failed: undo it,
		// which also gives the connection back (Commit's caller does not roll back).
		if rbErr := s.Rollback(ctx); rbErr != nil {
			s.log.WarnContext(ctx, "storage: rollback after a failed commit failed", "error", rbErr)
		}
		return err
	}
	if st.savepoint != "" {
		if err := st.root.tx.WithContext(ctx).Exec("RELEASE SAVEPOINT " + st.savepoint).Error; err != nil {
			aftercommit.Discard(ctx)
			return fmt.Errorf("storage: release savepoint: %w", err)
		}
		aftercommit.Commit(ctx)
		return nil
	}
	if err := st.root.tx.Commit().Error; err != nil {
		aftercommit.Discard(ctx)
		return fmt.Errorf("storage: commit: %w", unavailable(err))
	}
	aftercommit.Commit(ctx)
	return nil
}

// Rollback rolls back the transaction BeginTX put into ctx (or, for a nested one, back to
// its savepoint), dropping the work deferred in it. Without a transaction in ctx it returns
// an error.
func (s *Store) Rollback(ctx context.Context) error {
	st := s.txFrom(ctx)
	if st == nil {
		return errNoTransaction
	}
	aftercommit.Discard(ctx)
	st.pending, st.sessionClient = nil, nil
	if st.savepoint != "" {
		if err := st.root.tx.WithContext(ctx).RollbackTo(st.savepoint).Error; err != nil {
			return fmt.Errorf("storage: rollback to savepoint: %w", err)
		}
		return nil
	}
	if st.root.tx == nil {
		return nil // nothing ran
	}
	tx := st.root.tx
	st.root.tx = nil // a second Rollback (after a failed Commit rolled back) has nothing to do
	if err := tx.Rollback().Error; err != nil {
		return fmt.Errorf("storage: rollback: %w", unavailable(err))
	}
	return nil
}

// InTx runs fn in one transaction carried by the context fn receives: a new one, or a
// savepoint inside the transaction ctx already carries. It commits when fn returns nil and
// returns the commit's error if that fails; it rolls back when fn returns an error, which
// InTx returns unchanged, or panics, which InTx re-raises after the rollback. Domain packages
// declare it in their store interfaces; fosite uses BeginTX, Commit and Rollback directly.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	txCtx, err := s.BeginTX(ctx)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if done {
			return
		}
		// fn panicked: release the transaction (and SQLite's write lock) before unwinding.
		if rbErr := s.Rollback(txCtx); rbErr != nil {
			s.log.WarnContext(ctx, "storage: rollback after a panic failed", "error", rbErr)
		}
	}()
	fnErr := fn(txCtx)
	done = true
	if fnErr != nil {
		if rbErr := s.Rollback(txCtx); rbErr != nil {
			s.log.WarnContext(ctx, "storage: rollback failed", "error", rbErr)
		}
		return fnErr
	}
	return s.Commit(txCtx)
}

// conn returns the handle a method runs its statements on: the transaction carried by ctx,
// or the pool. In a transaction it first writes the codes still pending in it, so every
// statement sees them; a failure to write them is the handle's error.
func (s *Store) conn(ctx context.Context) *gorm.DB {
	if st := s.txFrom(ctx); st != nil {
		db, err := st.begin(ctx)
		if err != nil {
			db = s.db.WithContext(ctx)
			_ = db.AddError(err)
			return db
		}
		if err := st.flush(ctx); err != nil {
			_ = db.AddError(err)
		}
		return db
	}
	return s.db.WithContext(ctx)
}

// inTx runs fn in one transaction: a new one, or a savepoint inside the transaction ctx
// already carries. fn's error rolls it back and is returned unchanged.
func (s *Store) inTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.conn(ctx).Transaction(fn)
}

// guarded runs fn for a write whose constraint violations the caller maps to sentinels.
// Inside ctx's transaction it runs in a savepoint, so that the failed statement does not
// abort the whole transaction on Postgres; without a transaction it runs on the pool.
func (s *Store) guarded(ctx context.Context, fn func(db *gorm.DB) error) error {
	if s.txFrom(ctx) != nil {
		return s.conn(ctx).Transaction(fn)
	}
	return fn(s.conn(ctx))
}

// isDuplicate reports whether err is a unique or primary-key violation (SQLite and Postgres).
func isDuplicate(err error) bool {
	return errors.Is(err, gorm.ErrDuplicatedKey)
}

// isForeignKey reports whether err is a foreign-key violation (SQLite and Postgres).
func isForeignKey(err error) bool {
	return errors.Is(err, gorm.ErrForeignKeyViolated)
}

// isNotFound reports whether err is gorm's "no row" error.
func isNotFound(err error) bool {
	return errors.Is(err, gorm.ErrRecordNotFound)
}

// claimRow runs update, a conditional update of rows of M, and in the same transaction reads
// back the row whose keyColumn is key. The condition decides who wins a race: of concurrent
// callers only those it still admits change the row; when it changed none, claimRow returns
// miss. Once changed, the row is the caller's, so the read sees its update. what names the
// operation in other errors.
func claimRow[M any](ctx context.Context, s *Store, what string, miss error, keyColumn string, key any, update func(q *gorm.DB) *gorm.DB) (*M, error) {
	var m M
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		res := update(tx.Model(new(M)))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return miss
		}
		return tx.Take(&m, keyColumn+" = ?", key).Error
	})
	switch {
	case err == nil:
		return &m, nil
	case errors.Is(err, miss):
		return nil, err
	}
	return nil, fmt.Errorf("storage: %s: %w", what, err)
}
