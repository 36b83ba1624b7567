package provider

import (
	"context"
	"errors"
	"net/http"

	"github.com/gatehouse-id/gatehouse/permissions"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// newPermissions builds the permission service over the provider's store, its token
// validation, the public authentication admin check and its users and clients.
func (p *Provider) newPermissions() (*permissions.Service, error) {
	seams := permissionSeams{p: p}
	return permissions.New(permissions.Config{KeepTokensOnRevoke: p.cfg.Permissions.KeepTokensOnRevoke, BaseURL: p.cfg.Issuer},
		p.store, seams, seams, seams,
		permissions.WithClock(p.now), permissions.WithRandom(p.random), permissions.WithLogger(p.log), permissions.WithEvents(p.events))
}

// permissionSeams adapts the provider to what package permissions declares: Tokens, Admins
// and Directory.
type permissionSeams struct {
	p *Provider
}

var (
	_ permissions.Tokens    = permissionSeams{}
	_ permissions.Admins    = permissionSeams{}
	_ permissions.Directory = permissionSeams{}
)

// Validate checks bearer with Provider.VerifyAccessToken.
func (s permissionSeams) Validate(ctx context.Context, bearer string) (permissions.TokenInfo, error) {
	at, err := s.p.VerifyAccessToken(ctx, bearer)
	if errors.Is(err, ErrInvalidToken) {
		return permissions.TokenInfo{}, permissions.ErrInvalidToken
	}
	if err != nil {
		return permissions.TokenInfo{}, err
	}
	return permissions.TokenInfo{
		Subject:   at.Subject,
		ClientID:  at.ClientID,
		Scopes:    at.Scopes,
		UserBound: at.UserBound,
	}, nil
}

// Admin is publicauth's admin check with permissions' errors.
func (s permissionSeams) Admin(r *http.Request) (string, error) {
	u, err := s.p.auth.Admin(r)
	switch {
	case errors.Is(err, publicauth.ErrSessionNotFound):
		return "", permissions.ErrNoSession
	case errors.Is(err, publicauth.ErrNotAdmin):
		return "", permissions.ErrNotAdmin
	case err != nil:
		return "", err
	}
	return u.ID, nil
}

// UserExists looks the account up in the Accounts store.
func (s permissionSeams) UserExists(ctx context.Context, userID string) error {
	_, err := s.p.auth.UserByID(ctx, userID)
	if errors.Is(err, publicauth.ErrUserNotFound) {
		return permissions.ErrUnknownUser
	}
	return err
}

// AppName is the client's display name.
func (s permissionSeams) AppName(ctx context.Context, clientID string) (string, error) {
	c, err := s.p.store.ClientByID(ctx, clientID)
	if errors.Is(err, storage.ErrNotFound) {
		return "", permissions.ErrUnknownClient
	}
	if err != nil {
		return "", err
	}
	return c.Name, nil
}
