package storage

import (
	"context"
	"fmt"

	"github.com/ory/fosite"
)

// CreateAuthorizeCodeSession stores the authorization request behind the code whose
// signature is given, as an active code. It implements oauth2.AuthorizeCodeStorage.
//
// Inside a transaction the row is not written at once: the code's OpenID Connect and PKCE
// data, which fosite stores next under the same request, join it, and the one INSERT goes
// out before the transaction's next statement, its commit or its savepoint's release (a
// rollback drops it). Outside a transaction the row is inserted at once and the others
// update it.
func (s *Store) CreateAuthorizeCodeSession(ctx context.Context, signature string, request fosite.Requester) error {
	cols, err := newRequestColumns(signature, request, fosite.AuthorizeCode)
	if err != nil {
		return err
	}
	m := &authorizationCodeModel{Request: cols, Active: true, SID: browserSessionID(request)}
	if st := s.txFrom(ctx); st != nil {
		for _, p := range st.pending {
			if p.Request.Signature == signature {
				return fmt.Errorf("storage: create authorization code: %w", ErrConflict)
			}
		}
		st.pending = append(st.pending, m)
		return nil
	}
	if err := s.conn(ctx).Create(m).Error; err != nil {
		return fmt.Errorf("storage: create authorization code: %w", err)
	}
	return nil
}

// pendingCode returns the code created in ctx's transaction and not yet written that
// matches, or nil.
func (s *Store) pendingCode(ctx context.Context, match func(*authorizationCodeModel) bool) *authorizationCodeModel {
	st := s.txFrom(ctx)
	if st == nil {
		return nil
	}
	for _, p := range st.pending {
		if match(p) {
			return p
		}
	}
	return nil
}

// loadCode returns the row of the code with that signature: from the request memo when
// this request read it already, otherwise from the database (remembering it). A missing
// row is fosite.ErrNotFound.
func (s *Store) loadCode(ctx context.Context, signature string) (*authorizationCodeModel, error) {
	memo := memoFrom(ctx)
	if m, ok := memo.code(signature); ok {
		return &m, nil
	}
	m, err := takeRequestRow[authorizationCodeModel](ctx, s, "authorization code", signature)
	if err != nil {
		return nil, err
	}
	memo.putCode(*m)
	return m, nil
}

// GetAuthorizeCodeSession returns the authorization request of the code, its session
// unmarshalled into session. A used (invalidated) code returns the request together with
// fosite.ErrInvalidatedAuthorizeCode, so fosite can revoke the tokens issued for it; an
// unknown code returns fosite.ErrNotFound. Expiry is fosite's to check.
func (s *Store) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	m, err := s.loadCode(ctx, signature)
	if err != nil {
		return nil, err
	}
	r, err := s.toRequest(ctx, &m.Request, session)
	if err != nil {
		return nil, err
	}
	if !m.Active {
		return r, fosite.ErrInvalidatedAuthorizeCode
	}
	return r, nil
}

// InvalidateAuthorizeCodeSession marks the code used and drops its PKCE challenge, which
// has served; the row stays until it expires so a second use is recognised. It is one
// conditional update on the code being active, so of two concurrent exchanges exactly one
// succeeds: the other gets fosite.ErrInvalidatedAuthorizeCode. An unknown code returns
// fosite.ErrNotFound.
func (s *Store) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	_, known := memoFrom(ctx).code(signature)
	err := deactivate[authorizationCodeModel](ctx, s, "invalidate authorization code", signature,
		fosite.ErrInvalidatedAuthorizeCode, known, map[string]any{"active": false, "pkce_form": nil})
	if err == nil {
		memoFrom(ctx).spendCode(signature)
	}
	return err
}
