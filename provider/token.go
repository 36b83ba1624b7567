package provider

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// token is the token endpoint (RFC 6749 §3.2): authorization_code (with PKCE),
// refresh_token (rotated, reuse revokes the family) and client_credentials. The
// `audience` and RFC 8707 `resource` parameters ask for the token's aud: with
// client_credentials among the client's registered audiences, otherwise among the grant's,
// which narrows the grant to them from then on. A DPoP proof binds the tokens to the
// client's key (tokenDPoP).
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	ctx, _ := p.watchGrant(r.Context())
	ctx = withIssuedAccessToken(ctx)
	session := newSession()
	var resourceErr error
	// fosite parses the body the same way next and reads the audience from r.PostForm.
	if err := r.ParseMultipartForm(1 << 20); err == nil || errors.Is(err, http.ErrNotMultipart) {
		resourceErr = mergeResources(r.PostForm)
	}
	if r.PostForm.Get("grant_type") == "refresh_token" {
		ctx = storage.WithReuseGrace(ctx) // Config.RefreshReuseGrace applies here only
	}
	ar, err := p.oauth.NewAccessRequest(ctx, r, session)
	if err == nil {
		err = resourceErr
	}
	if err == nil && !ar.GetGrantTypes().ExactOne("client_credentials") {
		err = narrowAudience(ar)
	}
	if err != nil {
		p.accessError(w, r, ar, err)
		return
	}
	if ar.GetGrantTypes().ExactOne("client_credentials") {
		// A client token acts for the client itself: sub is the client id. fosite has
		// checked each requested scope against the client's registered scopes.
		for _, scope := range ar.GetRequestedScopes() {
			if scope != "openid" && scope != "offline_access" {
				ar.GrantScope(scope)
			}
		}
		for _, aud := range ar.GetRequestedAudience() {
			ar.GrantAudience(aud)
		}
		session.Subject, session.ClientID = ar.GetClient().GetID(), ar.GetClient().GetID()
	}
	// fosite put the grant's stored session on ar (for a code or refresh token).
	granted, _ := ar.GetSession().(*Session)
	if granted == nil {
		granted = session
	}
	ctx, dpopBound, err := p.tokenDPoP(ctx, w, r, ar, granted)
	if err != nil {
		p.accessError(w, r, ar, err)
		return
	}
	if ctx, err = p.withTokenClaims(ctx, ar, granted); err != nil {
		p.accessError(w, r, ar, err)
		return
	}
	resp, err := p.oauth.NewAccessResponse(ctx, ar)
	if err != nil {
		p.accessError(w, r, ar, err)
		return
	}
	resp.SetTokenType("Bearer") // fosite writes "bearer"; the SSO interface shows "Bearer"
	if dpopBound {
		resp.SetTokenType("DPoP") // RFC 9449 §5.1
	}
	_ = p.events.Emit(ctx, tokenIssued(ar, session, resp)) // delivered only: the trail does not record TokenIssued
	p.oauth.WriteAccessResponse(ctx, w, ar, resp)
}

// accessError writes a token endpoint error. A storage race that fosite reports as a
// server error — two concurrent exchanges of one code, or one refresh token rotated twice
// at once — is the client's invalid grant, not our fault.
func (p *Provider) accessError(w http.ResponseWriter, r *http.Request, ar fosite.AccessRequester, err error) {
	err = asTemporarilyUnavailable(err)
	if errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) || errors.Is(err, fosite.ErrInactiveToken) {
		err = fosite.ErrInvalidGrant.WithHint("The authorization grant has already been used.").WithWrap(err)
	}
	// fosite answers invalid_request when no handler takes the grant type (e.g. password);
	// RFC 6749 §5.2 names that unsupported_grant_type.
	if gt := r.PostForm.Get("grant_type"); errors.Is(err, fosite.ErrInvalidRequest) && gt != "" && !slices.Contains(grantTypesSupported, gt) {
		err = fosite.ErrUnsupportedGrantType.WithWrap(err)
	}
	p.logServerError(r, "token request failed", err)
	setRetryAfter(w, err)
	p.oauth.WriteAccessError(r.Context(), w, ar, err)
}

// revoke is the revocation endpoint (RFC 7009). A client may revoke only its own tokens
// (revocationHandler); revoking a refresh token also revokes the access tokens of its
// grant. An unknown token is answered 200, as §2.2 requires.
func (p *Provider) revoke(w http.ResponseWriter, r *http.Request) {
	ctx, watch := p.watchGrant(r.Context())
	err := asTemporarilyUnavailable(p.oauth.NewRevocationRequest(ctx, r))
	if err != nil {
		// fosite's revocation writer answers 200 to every error but invalid_request and
		// invalid_client, which would tell a client that another client's token (§2.1), or
		// one the database could not revoke (§2.2.1), is revoked.
		p.logServerError(r, "revocation failed", err)
		setRetryAfter(w, err)
		p.oauth.WriteAccessError(r.Context(), w, nil, err)
		return
	}
	if e := watch.tokenRevoked(); e != nil {
		// fosite's revocation has committed: the record is its own statement, and the
		// token stays revoked if it fails.
		if err := p.events.Emit(ctx, e); err != nil {
			p.log.ErrorContext(ctx, "recording a token revocation failed", "error", err)
		}
	}
	p.oauth.WriteRevocationResponse(r.Context(), w, nil)
}

// revocationHandler is the revocation endpoint's fosite handler. An access token (a JWT) is
// verified and revoked alone, by a rule on its jti, when the requesting client is the one
// it was issued to (another client's is unauthorized_client, RFC 7009 §2.1). An expired,
// revoked or foreign-signed JWT is nothing to revoke. Any other token goes to fosite's
// handler, which revokes a refresh token's whole grant: its refresh tokens and, by a rule
// on the grant, its access tokens.
type revocationHandler struct {
	access  *accessTokenVerifier
	refresh *oauth2.TokenRevocationHandler
}

var _ fosite.RevocationHandler = (*revocationHandler)(nil)

func (h *revocationHandler) RevokeToken(ctx context.Context, token string, use fosite.TokenType, client fosite.Client) error {
	if !looksLikeJWT(token) {
		return h.refresh.RevokeToken(ctx, token, use, client)
	}
	at, ref, err := h.access.verify(ctx, token)
	switch {
	case errors.Is(err, ErrUnavailable):
		return fosite.ErrTemporarilyUnavailable.WithWrap(err).WithDebug(err.Error())
	case err != nil:
		return nil
	case at.ClientID != client.GetID():
		return fosite.ErrUnauthorizedClient
	}
	if err := h.access.store.RevokeAccessTokenID(ctx, ref.JTI, at.ExpiresAt); err != nil {
		return fosite.ErrTemporarilyUnavailable.WithWrap(err).WithDebug(err.Error())
	}
	if w, _ := ctx.Value(grantWatchKey{}).(*grantWatch); w != nil {
		session := newSession()
		session.Subject = at.Subject
		w.found, w.kind = &fosite.Request{ID: ref.GrantID, Client: client, Session: session}, events.KindAccessToken
	}
	return nil
}

// userinfo is the UserInfo endpoint (OpenID Connect Core §5.3): GET or POST, the access
// token in the Authorization header or (POST) the form body. It answers the claims the
// token's scopes allow, read fresh from the Accounts store: sub; the standard claims of each
// granted scope (`profile`, `email`, `phone`, `address`: releaseStandardClaims), filtered by
// the `userinfo` member of the grant's `claims` parameter (claimUserinfoRequest); the other
// Account.Claims with `profile`; and the claims of WithClaims (an error there is a logged
// 500).
func (p *Provider) userinfo(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	at, err := p.verifyOwnRequest(r)
	if err != nil {
		writeRefusal(w, p.refusal(r, err))
		return
	}
	if !at.UserBound {
		p.bearerError(w, r, http.StatusUnauthorized, "invalid_token", "The access token was not issued for a user.", "")
		return
	}
	scopes := fosite.Arguments(at.Scopes)
	if !scopes.Has("openid") {
		p.bearerError(w, r, http.StatusForbidden, "insufficient_scope", "The access token does not carry the openid scope.", "openid")
		return
	}
	user, err := p.auth.UserByID(ctx, at.Subject)
	if err == nil && user.Status != publicauth.StatusActive {
		err = publicauth.ErrAccountDisabled
	}
	if err != nil {
		p.bearerError(w, r, http.StatusUnauthorized, "invalid_token", "The user of this access token no longer exists.", "")
		return
	}
	claims := map[string]any{}
	releaseStandardClaims(claims, user, scopes, userinfoRequest(at), true)
	p.accountClaims(ctx, claims, user, scopes)
	err = p.customClaims(ctx, claims, ClaimsRequest{
		Token: ClaimsUserinfo, ClientID: at.ClientID, Subject: at.Subject, Scopes: at.Scopes, Account: accountOf(user),
	})
	if err != nil {
		p.log.ErrorContext(ctx, "userinfo failed", "error", err)
		httpjson.WriteError(w, http.StatusInternalServerError, "internal error")
		return
	}
	claims["sub"] = user.ID
	httpjson.Write(w, http.StatusOK, claims)
}

// logServerError logs a fosite error of status 500 or more with its hidden parts: the debug
// text and the wrapped cause, which never reach the client.
func (p *Provider) logServerError(r *http.Request, msg string, err error) {
	rfc := fosite.ErrorToRFC6749Error(err)
	if rfc.CodeField < 500 {
		return
	}
	attrs := []any{"error", rfc.ErrorField, "debug", rfc.DebugField}
	if cause := rfc.Unwrap(); cause != nil {
		attrs = append(attrs, "cause", cause.Error())
	}
	p.log.ErrorContext(r.Context(), msg, attrs...)
}
