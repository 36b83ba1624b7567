package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/ory/fosite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

func clientToModel(c *Client) *clientModel {
	return &clientModel{
		ID:                     c.ID,
		SecretHash:             c.SecretHash,
		Name:                   c.Name,
		RedirectURIs:           stringList(c.RedirectURIs),
		PostLogoutRedirectURIs: stringList(c.PostLogoutRedirectURIs),
		GrantTypes:             stringList(c.GrantTypes),
		ResponseTypes:          stringList(c.ResponseTypes),
		Scopes:                 stringList(c.Scopes),
		Audience:               stringList(c.Audience),
		Public:                 c.Public,
		FirstParty:             c.FirstParty,
		ResourceServer:         c.ResourceServer,
		IDTokenAlg:             c.IDTokenAlg,
		CreatedAt:              utc(c.CreatedAt),
		UpdatedAt:              utc(c.UpdatedAt),
	}
}

func (m *clientModel) toClient() *Client {
	return &Client{
		ID:                     m.ID,
		SecretHash:             m.SecretHash,
		Name:                   m.Name,
		RedirectURIs:           []string(m.RedirectURIs),
		PostLogoutRedirectURIs: []string(m.PostLogoutRedirectURIs),
		GrantTypes:             []string(m.GrantTypes),
		ResponseTypes:          []string(m.ResponseTypes),
		Scopes:                 []string(m.Scopes),
		Audience:               []string(m.Audience),
		Public:                 m.Public,
		FirstParty:             m.FirstParty,
		ResourceServer:         m.ResourceServer,
		IDTokenAlg:             m.IDTokenAlg,
		CreatedAt:              timeUTC(m.CreatedAt),
		UpdatedAt:              timeUTC(m.UpdatedAt),
	}
}

// CreateClient inserts c, setting c.CreatedAt and c.UpdatedAt to now when they are zero. It
// returns ErrConflict when a client with c.ID exists.
func (s *Store) CreateClient(ctx context.Context, c *Client) error {
	now := s.nowUTC()
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = now
	}
	err := s.guarded(ctx, func(db *gorm.DB) error { return db.Create(clientToModel(c)).Error })
	if err != nil {
		if isDuplicate(err) {
			return ErrConflict
		}
		return fmt.Errorf("storage: create client: %w", err)
	}
	return nil
}

// ClientByID returns the client with that id, or ErrNotFound. Under a context from
// WithClientMemo, a client already loaded is returned again without a query.
func (s *Store) ClientByID(ctx context.Context, id string) (*Client, error) {
	memo, _ := ctx.Value(clientMemoKey{}).(*clientMemo)
	if c := memo.get(id); c != nil {
		return c, nil
	}
	var m clientModel
	if err := s.conn(ctx).Take(&m, "id = ?", id).Error; err != nil {
		if isNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("storage: get client: %w", err)
	}
	c := m.toClient()
	memo.put(c)
	return c, nil
}

type clientMemoKey struct{}

// clientMemo remembers the clients loaded while one context lives.
type clientMemo struct {
	mu      sync.Mutex
	clients map[string]*Client
}

// WithClientMemo returns a context under which ClientByID and GetClient load each client at
// most once. fosite loads the client of a token request up to five times (authentication,
// then once per stored code, PKCE and OpenID Connect row); scoping the memo to one request
// keeps those queries away without serving a deleted or changed client any longer than the
// request itself runs.
func WithClientMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, clientMemoKey{}, &clientMemo{})
}

func (m *clientMemo) get(id string) *Client {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clients[id]
}

func (m *clientMemo) put(c *Client) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.clients == nil {
		m.clients = map[string]*Client{}
	}
	m.clients[c.ID] = c
}

// ListClients returns every client, oldest first (ties by id).
func (s *Store) ListClients(ctx context.Context) ([]*Client, error) {
	var ms []clientModel
	if err := s.conn(ctx).Order("created_at, id").Find(&ms).Error; err != nil {
		return nil, fmt.Errorf("storage: list clients: %w", err)
	}
	out := make([]*Client, 0, len(ms))
	for i := range ms {
		out = append(out, ms[i].toClient())
	}
	return out, nil
}

// DeleteClient deletes the client and, in the same transaction, everything issued to it:
// authorization codes, access and refresh tokens, PKCE and OpenID Connect rows, consents and
// pending authorization requests. It returns ErrNotFound when there is no such client.
func (s *Store) DeleteClient(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		for _, model := range []any{
			&authorizationCodeModel{}, &accessTokenModel{}, &refreshTokenModel{},
			&pkceRequestModel{}, &oidcSessionModel{}, &consentModel{}, &authRequestModel{},
		} {
			if err := tx.Where("client_id = ?", id).Delete(model).Error; err != nil {
				return fmt.Errorf("storage: delete client: %w", err)
			}
		}
		res := tx.Where("id = ?", id).Delete(&clientModel{})
		if res.Error != nil {
			return fmt.Errorf("storage: delete client: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// GetClient returns the client with that id as a fosite.Client (a *Client), or
// fosite.ErrNotFound. It implements fosite.ClientManager.
func (s *Store) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	c, err := s.ClientByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, fosite.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// ClientAssertionJWTValid returns fosite.ErrJTIKnown when the JWT id was recorded by
// SetClientAssertionJWT and has not expired yet, and nil otherwise (RFC 7523 section 3,
// replay protection). It implements fosite.ClientManager.
func (s *Store) ClientAssertionJWTValid(ctx context.Context, jti string) error {
	var n int64
	err := s.conn(ctx).Model(&clientAssertionJTIModel{}).
		Where("jti = ? AND expires_at > ?", jti, s.nowUTC()).
		Count(&n).Error
	if err != nil {
		return fmt.Errorf("storage: check client assertion jti: %w", err)
	}
	if n > 0 {
		return fosite.ErrJTIKnown
	}
	return nil
}

// SetClientAssertionJWT records the JWT id as used until exp. It first deletes every
// recorded id that has expired (those assertions can no longer be replayed), then inserts
// jti; when jti is still recorded it returns fosite.ErrJTIKnown. It implements
// fosite.ClientManager.
func (s *Store) SetClientAssertionJWT(ctx context.Context, jti string, exp time.Time) error {
	db := s.conn(ctx)
	if err := db.Where("expires_at <= ?", s.nowUTC()).Delete(&clientAssertionJTIModel{}).Error; err != nil {
		return fmt.Errorf("storage: delete expired client assertion jtis: %w", err)
	}
	res := db.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&clientAssertionJTIModel{JTI: jti, ExpiresAt: utc(exp)})
	if res.Error != nil {
		return fmt.Errorf("storage: record client assertion jti: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fosite.ErrJTIKnown
	}
	return nil
}

// UpdateClient writes c's settings over the stored client with c.ID: its name, redirect
// and post-logout redirect URIs, grant and response types, scopes, audience, first-party
// and resource-server flags, ID token algorithm and UpdatedAt (set to now). The id, secret
// hash, public flag and creation time are not written: SetClientSecretHash changes the
// secret, and a client never changes between public and confidential.
//
// In the same transaction it deletes every unused authorization code of the client bound to
// a redirect URI the update removes (or to none in the request, which binds it to the
// client's only URI, when any URI is removed), with its PKCE and OpenID Connect rows: the
// token endpoint compares a code's redirect_uri only with the authorization request, not
// with the client's registration, so such a code would otherwise still redeem. It returns
// ErrNotFound when there is no such client.
func (s *Store) UpdateClient(ctx context.Context, c *Client) error {
	return s.inTx(ctx, func(tx *gorm.DB) error {
		var old clientModel
		if err := tx.Take(&old, "id = ?", c.ID).Error; err != nil {
			if isNotFound(err) {
				return ErrNotFound
			}
			return fmt.Errorf("storage: update client: %w", err)
		}
		c.UpdatedAt = s.nowUTC()
		m := clientToModel(c)
		err := tx.Model(&clientModel{}).Where("id = ?", c.ID).Select(
			"name", "redirect_uris", "post_logout_redirect_uris", "grant_types", "response_types",
			"scopes", "audience", "first_party", "resource_server", "id_token_alg", "updated_at",
		).Updates(m).Error
		if err != nil {
			return fmt.Errorf("storage: update client: %w", err)
		}
		var removed []string
		for _, uri := range old.RedirectURIs {
			if !slices.Contains(c.RedirectURIs, uri) {
				removed = append(removed, uri)
			}
		}
		if len(removed) == 0 {
			return nil
		}
		return deleteCodesForRedirectURIs(tx, c.ID, removed)
	})
}

// deleteCodesForRedirectURIs deletes the unused authorization codes of the client whose
// authorization request named one of the removed redirect URIs, or named none, with their
// PKCE and OpenID Connect rows.
func deleteCodesForRedirectURIs(tx *gorm.DB, clientID string, removed []string) error {
	var codes []struct{ Signature, Form string }
	err := tx.Model(&authorizationCodeModel{}).Select("signature", "form").
		Where("client_id = ? AND active = ?", clientID, true).Scan(&codes).Error
	if err != nil {
		return fmt.Errorf("storage: find codes of removed redirect URIs: %w", err)
	}
	var stale []string
	for _, code := range codes {
		form, err := url.ParseQuery(code.Form)
		uri := form.Get("redirect_uri")
		if err != nil || uri == "" || slices.Contains(removed, uri) {
			stale = append(stale, code.Signature)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	for _, model := range []any{&authorizationCodeModel{}, &pkceRequestModel{}, &oidcSessionModel{}} {
		if err := tx.Where("signature IN ?", stale).Delete(model).Error; err != nil {
			return fmt.Errorf("storage: delete codes of removed redirect URIs: %w", err)
		}
	}
	return nil
}

// SetClientSecretHash replaces the secret hash of the confidential client with that id (and
// its UpdatedAt); the previous secret stops authenticating with this write. It returns
// ErrNotFound when there is no confidential client with that id.
func (s *Store) SetClientSecretHash(ctx context.Context, id string, hash []byte) error {
	res := s.conn(ctx).Model(&clientModel{}).Where("id = ? AND public = ?", id, false).
		Updates(map[string]any{"secret_hash": hash, "updated_at": s.nowUTC()})
	if res.Error != nil {
		return fmt.Errorf("storage: set client secret: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}
