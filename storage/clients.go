package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/ory/fosite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/gatehouse-id/gatehouse/internal/aftercommit"
)

func clientToModel(c *Client) *clientModel {
	return &clientModel{
		ID:                      c.ID,
		SecretHash:              c.SecretHash,
		Name:                    c.Name,
		RedirectURIs:            stringList(c.RedirectURIs),
		PostLogoutRedirectURIs:  stringList(c.PostLogoutRedirectURIs),
		GrantTypes:              stringList(c.GrantTypes),
		ResponseTypes:           stringList(c.ResponseTypes),
		Scopes:                  stringList(c.Scopes),
		Audience:                stringList(c.Audience),
		Public:                  c.Public,
		FirstParty:              c.FirstParty,
		ResourceServer:          c.ResourceServer,
		IDTokenAlg:              c.IDTokenAlg,
		RequirePAR:              c.RequirePAR,
		RequireDPoP:             c.RequireDPoP,
		TokenEndpointAuthMethod: c.TokenEndpointAuthMethod,
		JWKSURI:                 c.JWKSURI,
		JWKS:                    string(c.JWKS),
		SecretSealed:            c.SecretSealed,
		RequestObjectSigningAlg: c.RequestObjectSigningAlg,
		RegistrationTokenHash:   c.RegistrationTokenHash,
		LogoURI:                 c.LogoURI,
		PolicyURI:               c.PolicyURI,
		TOSURI:                  c.TOSURI,
		CreatedAt:               utc(c.CreatedAt),
		BackchannelLogoutURI:    c.BackchannelLogoutURI,

		BackchannelLogoutSessionRequired: c.BackchannelLogoutSessionRequired,
		UpdatedAt:                        utc(c.UpdatedAt),
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
		RequirePAR:             m.RequirePAR,
		RequireDPoP:            m.RequireDPoP,
		ClientAuthentication: ClientAuthentication{
			TokenEndpointAuthMethod: m.TokenEndpointAuthMethod,
			JWKSURI:                 m.JWKSURI,
			JWKS:                    bytesOrNil(m.JWKS),
			SecretSealed:            m.SecretSealed,
			RequestObjectSigningAlg: m.RequestObjectSigningAlg,
		},
		ClientRegistration: ClientRegistration{
			RegistrationTokenHash: m.RegistrationTokenHash,
			LogoURI:               m.LogoURI, PolicyURI: m.PolicyURI, TOSURI: m.TOSURI,
		},
		BackchannelLogoutURI:             m.BackchannelLogoutURI,
		BackchannelLogoutSessionRequired: m.BackchannelLogoutSessionRequired,
		CreatedAt:                        timeUTC(m.CreatedAt),
		UpdatedAt:                        timeUTC(m.UpdatedAt),
	}
}

// bytesOrNil is s as bytes, nil when empty, so a client without a JWKS reads back as it
// was written.
func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
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
	return s.afterClientWrite(ctx, c.ID)
}

// afterClientWrite is clientChanged for a write made as one statement (in ctx's
// transaction, if any): the notification follows it, and a failure to notify is logged, not
// returned, since the write has happened; other stores then see it within their refresh.
func (s *Store) afterClientWrite(ctx context.Context, id string) error {
	if err := s.clientChanged(ctx, s.conn(ctx), id); err != nil {
		s.log.WarnContext(ctx, "storage: client changed but other replicas were not notified; they see the change within the client cache refresh", "client_id", id, "error", err)
	}
	s.clients.invalidate(id)
	return nil
}

// ClientByID returns the client with that id, or ErrNotFound. Outside a transaction it is
// served from the store's client cache (see WithClientCacheRefresh) when fresh there; inside
// one it is read from the database, which sees the transaction's own writes. The client
// returned is the caller's own copy.
func (s *Store) ClientByID(ctx context.Context, id string) (*Client, error) {
	inTx := s.txFrom(ctx) != nil
	var gen uint64
	if !inTx && s.clients.enabled() {
		var c *Client
		if c, gen = s.clients.get(id); c != nil {
			return c, nil
		}
	}
	loaded := s.now()
	var m clientModel
	if err := s.conn(ctx).Take(&m, "id = ?", id).Error; err != nil {
		if isNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("storage: get client: %w", err)
	}
	c := m.toClient()
	if !inTx && s.clients.enabled() {
		s.clients.put(c, gen, loaded)
	}
	return c, nil
}

// clientChanged is called inside the write that changed the client with that id: it drops
// the client from this store's cache now and once more when the write's transaction
// commits (a lookup in between may have cached the old row), and on Postgres notifies the
// stores listening (ListenClientChanges) in the same transaction, so they drop it when it
// commits. db is the handle the write ran on.
func (s *Store) clientChanged(ctx context.Context, db *gorm.DB, id string) error {
	s.clients.invalidate(id)
	aftercommit.Do(ctx, func(context.Context) { s.clients.invalidate(id) })
	if s.dialect != dialectPostgres {
		return nil
	}
	if err := db.Exec("SELECT pg_notify(?, ?)", s.clientsChannel(), id).Error; err != nil {
		return fmt.Errorf("storage: notify client change: %w", err)
	}
	return nil
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
// authorization codes, access and refresh tokens, PKCE and OpenID Connect rows, consents,
// device codes and pending and pushed authorization requests. It returns ErrNotFound when
// there is no such client.
func (s *Store) DeleteClient(ctx context.Context, id string) error {
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		for _, model := range []any{
			&authorizationCodeModel{}, &accessTokenModel{}, &refreshTokenModel{},
			&pkceRequestModel{}, &oidcSessionModel{}, &consentModel{}, &authRequestModel{},
			&deviceCodeModel{},
			&pushedRequestModel{},
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
		// The client's access tokens are stateless: a rule refuses them, also should a
		// client of the same id be registered before they expire.
		if err := s.revokeNow(tx, clientKey(id)); err != nil {
			return fmt.Errorf("storage: delete client: %w", err)
		}
		return s.clientChanged(ctx, tx, id)
	})
	s.clients.invalidate(id)
	return err
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
// and post-logout redirect URIs, grant and response types, scopes, audience, first-party,
// resource-server, require-PAR and require-DPoP flags, ID token algorithm, authentication
// method, JWKS (URI or document), request object algorithm, logo, policy and terms-of-service
// URIs and UpdatedAt (set to now). The id, registration access token hash, secret hash, sealed secret, public flag and creation time are not written:
// SetClientSecret changes the
// secret, and a client never changes between public and confidential.
//
// In the same transaction it deletes every unused authorization code of the client bound to
// a redirect URI the update removes (or to none in the request, which binds it to the
// client's only URI, when any URI is removed), with its PKCE and OpenID Connect rows: the
// token endpoint compares a code's redirect_uri only with the authorization request, not
// with the client's registration, so such a code would otherwise still redeem. It returns
// ErrNotFound when there is no such client.
func (s *Store) UpdateClient(ctx context.Context, c *Client) error {
	err := s.inTx(ctx, func(tx *gorm.DB) error {
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
			"scopes", "audience", "first_party", "resource_server", "id_token_alg", "require_par", "require_dpop", "updated_at",
			"token_endpoint_auth_method", "jwks_uri", "jwks", "request_object_signing_alg",
			"backchannel_logout_uri", "backchannel_logout_session_required",
			"logo_uri", "policy_uri", "tos_uri",
		).Updates(m).Error
		if err != nil {
			return fmt.Errorf("storage: update client: %w", err)
		}
		if err := s.clientChanged(ctx, tx, c.ID); err != nil {
			return err
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
	s.clients.invalidate(c.ID)
	return err
}

// deleteCodesForRedirectURIs deletes the unused authorization codes of the client whose
// authorization request named one of the removed redirect URIs, or named none, with their
// PKCE and OpenID Connect rows.
func deleteCodesForRedirectURIs(tx *gorm.DB, clientID string, removed []string) error {
	var codes []struct{ Signature, Form string }
	err := scan(tx.Model(&authorizationCodeModel{}).Select("signature", "form").
		Where("client_id = ? AND active = ?", clientID, true), &codes)
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
// its UpdatedAt) and drops any sealed copy of the old secret: SetClientSecret with no
// sealed copy.
func (s *Store) SetClientSecretHash(ctx context.Context, id string, hash []byte) error {
	return s.SetClientSecret(ctx, id, hash, nil)
}

// SetClientSecret replaces, in one write, the secret hash and the sealed copy of the secret
// (nil for none; a client_secret_jwt client needs one) of the confidential client with that
// id, and its UpdatedAt; the previous secret stops authenticating with this write. It
// returns ErrNotFound when there is no confidential client with that id.
func (s *Store) SetClientSecret(ctx context.Context, id string, hash, sealed []byte) error {
	res := s.conn(ctx).Model(&clientModel{}).Where("id = ? AND public = ?", id, false).
		Updates(map[string]any{"secret_hash": hash, "secret_sealed": sealed, "updated_at": s.nowUTC()})
	if res.Error != nil {
		return fmt.Errorf("storage: set client secret: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return s.afterClientWrite(ctx, id)
}
