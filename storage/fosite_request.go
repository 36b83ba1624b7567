package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/ory/fosite"
)

// codeRetention is how long a row keyed by an authorization code (the code itself, its PKCE
// and OpenID Connect rows) is kept when the session carries no authorization-code expiry.
// fosite always sets one; the fallback only bounds garbage collection.
const codeRetention = time.Hour

// newRequestColumns serializes r for the row keyed by signature. tokenType picks the
// session expiry that becomes expires_at: fosite.AuthorizeCode for codes, PKCE and OpenID
// Connect rows, fosite.AccessToken or fosite.RefreshToken for tokens. When the session has
// no expiry of that type, code rows expire codeRetention after the request and token rows
// never expire (fosite leaves a refresh token without expiry when its lifespan is -1).
func newRequestColumns(signature string, r fosite.Requester, tokenType fosite.TokenType) (requestColumns, error) {
	if r == nil {
		return requestColumns{}, errors.New("storage: nil request")
	}
	client := r.GetClient()
	if client == nil {
		return requestColumns{}, errors.New("storage: request has no client")
	}
	session := r.GetSession()
	data, err := json.Marshal(session)
	if err != nil {
		return requestColumns{}, fmt.Errorf("storage: marshal session: %w", err)
	}
	var subject string
	var expiresAt *time.Time
	if session != nil {
		subject = session.GetSubject()
		if exp := session.GetExpiresAt(tokenType); !exp.IsZero() {
			e := utc(exp)
			expiresAt = &e
		}
	}
	requestedAt := r.GetRequestedAt()
	if expiresAt == nil && tokenType == fosite.AuthorizeCode {
		e := utc(requestedAt.Add(codeRetention))
		expiresAt = &e
	}
	return requestColumns{
		Signature:         signature,
		RequestID:         r.GetID(),
		RequestedAt:       utc(requestedAt),
		ClientID:          client.GetID(),
		Subject:           subject,
		RequestedScopes:   stringList(r.GetRequestedScopes()),
		GrantedScopes:     stringList(r.GetGrantedScopes()),
		RequestedAudience: stringList(r.GetRequestedAudience()),
		GrantedAudience:   stringList(r.GetGrantedAudience()),
		Form:              r.GetRequestForm().Encode(),
		SessionData:       string(data),
		ExpiresAt:         expiresAt,
	}, nil
}

// toRequest rebuilds the fosite request stored in c. The stored session is unmarshalled
// into session, the prototype fosite passes in (fosite relies on that object being filled
// in place), and the client is loaded with GetClient. A nil session is allowed: fosite's
// revocation handler passes none, needing only the request's id and client; the request
// then has no session.
func (s *Store) toRequest(ctx context.Context, c *requestColumns, session fosite.Session) (*fosite.Request, error) {
	if session != nil {
		if err := json.Unmarshal([]byte(c.SessionData), session); err != nil {
			return nil, fmt.Errorf("storage: unmarshal session: %w", err)
		}
	}
	form, err := url.ParseQuery(c.Form)
	if err != nil {
		return nil, fmt.Errorf("storage: parse stored form: %w", err)
	}
	client, err := s.GetClient(ctx, c.ClientID)
	if err != nil {
		return nil, err
	}
	return &fosite.Request{
		ID:                c.RequestID,
		RequestedAt:       timeUTC(c.RequestedAt),
		Client:            client,
		RequestedScope:    fosite.Arguments(c.RequestedScopes),
		GrantedScope:      fosite.Arguments(c.GrantedScopes),
		Form:              form,
		Session:           session,
		RequestedAudience: fosite.Arguments(c.RequestedAudience),
		GrantedAudience:   fosite.Arguments(c.GrantedAudience),
	}, nil
}

// takeRequestRow loads the row of a request table (codes, tokens, PKCE and OpenID Connect
// rows) whose key is signature, mapping a missing row to fosite.ErrNotFound as fosite's
// storage interfaces require; what names the table in errors.
func takeRequestRow[M any](ctx context.Context, s *Store, what, signature string) (*M, error) {
	return takeRow[M](ctx, s, what, "signature", signature)
}

// takeRow is takeRequestRow by any unique column.
func takeRow[M any](ctx context.Context, s *Store, what, column, key string) (*M, error) {
	var m M
	if err := s.conn(ctx).Take(&m, column+" = ?", key).Error; err != nil {
		if isNotFound(err) {
			return nil, fosite.ErrNotFound
		}
		return nil, fmt.Errorf("storage: get %s: %w", what, err)
	}
	return &m, nil
}

// deactivate marks the active row of M with that signature inactive, setting the columns
// of set (active among them), as one conditional update: of two concurrent callers exactly
// one succeeds. When no row changed it returns inactive (fosite's error for a used code or
// a rotated token) for a row that exists but is inactive, and fosite.ErrNotFound for a
// missing one; known says the row exists (this request read it), which spares the query
// that tells the two apart. what names the operation in errors.
func deactivate[M any](ctx context.Context, s *Store, what, signature string, inactive error, known bool, set map[string]any) error {
	db := s.conn(ctx)
	res := db.Model(new(M)).Where("signature = ? AND active = ?", signature, true).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("storage: %s: %w", what, res.Error)
	}
	if res.RowsAffected > 0 {
		return nil
	}
	if known {
		return inactive
	}
	var n int64
	if err := db.Model(new(M)).Where("signature = ?", signature).Count(&n).Error; err != nil {
		return fmt.Errorf("storage: %s: %w", what, err)
	}
	if n == 0 {
		return fosite.ErrNotFound
	}
	return inactive
}
