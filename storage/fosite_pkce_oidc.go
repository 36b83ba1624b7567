package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"

	"github.com/ory/fosite"
)

// The PKCE challenge and the OpenID Connect request of an authorization code live on the
// code's row (migration 11): fosite stores them right after the code, in the same
// authorization request, and reads them back in the exchange that spends the code. Each
// keeps only its form; the rest of the request (client, scopes, session) is the code's.

// errNoCode is returned when PKCE or OpenID Connect data is stored for a code that does not
// exist or already has such data.
var errNoCode = errors.New("no such authorization code without that data")

// CreatePKCERequestSession stores the PKCE parameters of the request behind the code whose
// signature is given, on that code's row, which must exist (CreateAuthorizeCodeSession)
// and have none yet. It implements pkce.PKCERequestStorage.
func (s *Store) CreatePKCERequestSession(ctx context.Context, signature string, request fosite.Requester) error {
	if request == nil {
		return errors.New("storage: create pkce request: nil request")
	}
	form := request.GetRequestForm().Encode()
	if p := s.pendingCode(ctx, func(m *authorizationCodeModel) bool { return m.Request.Signature == signature }); p != nil {
		if p.PKCEForm != nil {
			return fmt.Errorf("storage: create pkce request: %w", ErrConflict)
		}
		p.PKCEForm = &form
		return nil
	}
	res := s.conn(ctx).Model(&authorizationCodeModel{}).
		Where("signature = ? AND pkce_form IS NULL", signature).Update("pkce_form", form)
	if res.Error != nil {
		return fmt.Errorf("storage: create pkce request: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("storage: create pkce request: %w", errNoCode)
	}
	return nil
}

// GetPKCERequestSession returns the PKCE request of the code, its session unmarshalled into
// session, or fosite.ErrNotFound. In a code exchange it is served from the code row the
// exchange read (WithRequestMemo).
func (s *Store) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	m, err := s.loadCode(ctx, signature)
	if err != nil {
		return nil, err
	}
	if m.PKCEForm == nil {
		return nil, fosite.ErrNotFound
	}
	return s.toRequestWithForm(ctx, &m.Request, *m.PKCEForm, session)
}

// DeletePKCERequestSession drops the PKCE request of the code; dropping an unknown one is
// not an error. Under a context from WithRequestMemo it writes nothing: the code exchange
// that reads the challenge drops it with the conditional update that spends the code
// (InvalidateAuthorizeCodeSession), so a code is either still redeemable with its challenge
// or spent.
func (s *Store) DeletePKCERequestSession(ctx context.Context, signature string) error {
	if _, ok := memoFrom(ctx).code(signature); ok {
		return nil
	}
	err := s.conn(ctx).Model(&authorizationCodeModel{}).Where("signature = ?", signature).
		Update("pkce_form", nil).Error
	if err != nil {
		return fmt.Errorf("storage: delete pkce request: %w", err)
	}
	return nil
}

// oidcKey is the key of a code's OpenID Connect request. fosite passes the authorization
// code itself (not its signature) to the OpenIDConnectRequestStorage methods; the row keeps
// the code's SHA-256 so no usable code is ever stored.
func oidcKey(authorizeCode string) string {
	sum := sha256.Sum256([]byte(authorizeCode))
	return hex.EncodeToString(sum[:])
}

// CreateOpenIDConnectSession stores the OpenID Connect request of an authorization code on
// the row of the code created for the same request (the same request id), which must exist
// and have none yet. It implements openid.OpenIDConnectRequestStorage.
func (s *Store) CreateOpenIDConnectSession(ctx context.Context, authorizeCode string, request fosite.Requester) error {
	if request == nil {
		return errors.New("storage: create openid connect session: nil request")
	}
	key, form, id := oidcKey(authorizeCode), request.GetRequestForm().Encode(), request.GetID()
	if p := s.pendingCode(ctx, func(m *authorizationCodeModel) bool { return m.Request.RequestID == id }); p != nil {
		if p.OIDCKey != nil {
			return fmt.Errorf("storage: create openid connect session: %w", ErrConflict)
		}
		p.OIDCKey, p.OIDCForm = &key, &form
		return nil
	}
	res := s.conn(ctx).Model(&authorizationCodeModel{}).
		Where("request_id = ? AND oidc_key IS NULL", id).
		Updates(map[string]any{"oidc_key": key, "oidc_form": form})
	if res.Error != nil {
		return fmt.Errorf("storage: create openid connect session: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("storage: create openid connect session: %w", errNoCode)
	}
	return nil
}

// GetOpenIDConnectSession returns the OpenID Connect request of the code, its session
// unmarshalled into requester's session, or fosite.ErrNotFound (which is
// openid.ErrNoSessionFound). In a code exchange it is served from the code row the exchange
// read (WithRequestMemo).
func (s *Store) GetOpenIDConnectSession(ctx context.Context, authorizeCode string, requester fosite.Requester) (fosite.Requester, error) {
	if requester == nil {
		return nil, errors.New("storage: get openid connect session: nil requester")
	}
	key := oidcKey(authorizeCode)
	m, ok := memoFrom(ctx).codeByOIDCKey(key)
	if !ok {
		p, err := takeRow[authorizationCodeModel](ctx, s, "openid connect session", "oidc_key", key)
		if err != nil {
			return nil, err
		}
		m = *p
	}
	if m.OIDCForm == nil {
		return nil, fosite.ErrNotFound
	}
	return s.toRequestWithForm(ctx, &m.Request, *m.OIDCForm, requester.GetSession())
}

// DeleteOpenIDConnectSession drops the OpenID Connect request of the code; dropping an
// unknown one is not an error. When this request spent the code (WithRequestMemo) it
// writes nothing: a spent code never reaches the OpenID Connect handler again, and its row
// expires with the data.
func (s *Store) DeleteOpenIDConnectSession(ctx context.Context, authorizeCode string) error {
	key := oidcKey(authorizeCode)
	memo := memoFrom(ctx)
	if m, ok := memo.codeByOIDCKey(key); ok && memo.spentHere(m.Request.Signature) {
		return nil
	}
	err := s.conn(ctx).Model(&authorizationCodeModel{}).Where("oidc_key = ?", key).
		Updates(map[string]any{"oidc_key": nil, "oidc_form": nil}).Error
	if err != nil {
		return fmt.Errorf("storage: delete openid connect session: %w", err)
	}
	return nil
}

// toRequestWithForm is toRequest with the form replaced by form (url.Values.Encode()d).
func (s *Store) toRequestWithForm(ctx context.Context, c *requestColumns, form string, session fosite.Session) (*fosite.Request, error) {
	r, err := s.toRequest(ctx, c, session)
	if err != nil {
		return nil, err
	}
	if r.Form, err = url.ParseQuery(form); err != nil {
		return nil, fmt.Errorf("storage: parse stored form: %w", err)
	}
	return r, nil
}
