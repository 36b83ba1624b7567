package provider

import (
	"context"
	"errors"
	"net/http"
	"strings"

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

// Validate checks the access token of r as a token for Gatehouse's own resources
// (verifyOwnRequest): a bearer token, or a DPoP-bound one with its proof for the route's
// URL under the issuer, whose audience names Gatehouse or its client. A token refused in
// the DPoP scheme, a refused proof and a bound token presented as Bearer are a
// *permissions.TokenError carrying DPoP's challenge (RFC 9449 §7.1); any other refused
// token (one issued for another API among them) is permissions.ErrInvalidToken.
func (s permissionSeams) Validate(r *http.Request) (permissions.TokenInfo, error) {
	at, err := s.p.verifyOwnRequest(r)
	switch {
	case errors.Is(err, ErrNoAccessToken):
		return permissions.TokenInfo{}, permissions.ErrNoCredentials
	case errors.Is(err, ErrUnavailable):
		return permissions.TokenInfo{}, err
	case err != nil:
		a := s.p.refusal(r, err)
		if strings.HasPrefix(a.header.Get("WWW-Authenticate"), "DPoP ") {
			return permissions.TokenInfo{}, &permissions.TokenError{Header: a.header, Message: a.description}
		}
		return permissions.TokenInfo{}, permissions.ErrInvalidToken
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
