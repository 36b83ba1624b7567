package provider

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// introspect is the introspection endpoint (RFC 7662) for confidential clients. A caller
// learns about a token (access or refresh) only when the token was issued to it, or when it
// is registered as a resource server and its id is in the token's audience. Every other
// caller gets exactly {"active": false}, the answer to an unknown token (§2.2), so it cannot
// tell another client's token from garbage.
func (p *Provider) introspect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		p.oauth.WriteAccessError(ctx, w, nil, fosite.ErrInvalidRequest.WithHint("The request body could not be read.").WithWrap(err))
		return
	}
	caller, err := p.oauth.AuthenticateClient(ctx, r, r.PostForm)
	if err == nil && caller.IsPublic() {
		// A public client proves nothing with its id alone.
		err = fosite.ErrInvalidClient.WithHint("Only a confidential client may introspect tokens.")
	}
	if err == nil && r.PostForm.Get("token") == "" {
		err = fosite.ErrInvalidRequest.WithHint("The token parameter is missing.")
	}
	if err != nil {
		p.introspectionError(w, r, err)
		return
	}
	token := r.PostForm.Get("token")
	if looksLikeJWT(token) {
		p.introspectAccessToken(w, r, caller, token)
		return
	}
	// A refresh token: fosite finds its row.
	use, ar, err := p.oauth.IntrospectToken(ctx, token, fosite.RefreshToken, newSession())
	if httpjson.Unavailable(err) {
		p.introspectionError(w, r, err)
		return
	}
	session, _ := sessionOf(ar)
	if err != nil || session == nil || use != fosite.RefreshToken || p.expired(session, use) ||
		!mayIntrospect(caller, ar.GetClient().GetID(), tokenAudience(ar)) {
		httpjson.Write(w, http.StatusOK, inactive)
		return
	}
	httpjson.Write(w, http.StatusOK, p.introspection(use, ar, session))
}

// inactive is the answer for a token the caller may not know about (RFC 7662 §2.2).
var inactive = map[string]bool{"active": false}

// introspectAccessToken answers for an access token: the claims VerifyAccessToken accepted,
// read from the token itself, and username (the user's email, read fresh) when the email
// scope was granted. A DPoP-bound token is active too: its token_type is DPoP and cnf names
// its key (RFC 9449 §6.2), for the resource server to check the proof against.
func (p *Provider) introspectAccessToken(w http.ResponseWriter, r *http.Request, caller fosite.Client, token string) {
	at, _, err := p.verifier.verify(r.Context(), token)
	if errors.Is(err, ErrUnavailable) {
		p.introspectionError(w, r, fosite.ErrTemporarilyUnavailable.WithWrap(err).WithDebug(err.Error()))
		return
	}
	if err != nil || !mayIntrospect(caller, at.ClientID, at.Audience) {
		httpjson.Write(w, http.StatusOK, inactive)
		return
	}
	resp := map[string]any{
		"active":     true,
		"iss":        p.cfg.Issuer,
		"client_id":  at.ClientID,
		"aud":        audienceClaim(at.Audience),
		"sub":        at.Subject,
		"token_type": "Bearer",
		"iat":        at.IssuedAt.Unix(),
		"exp":        at.ExpiresAt.Unix(),
	}
	if len(at.Scopes) > 0 {
		resp["scope"] = strings.Join(at.Scopes, " ")
	}
	if at.DPoPThumbprint != "" {
		resp["token_type"] = "DPoP"
		resp["cnf"] = map[string]string{"jkt": at.DPoPThumbprint}
	}
	if at.UserBound && slices.Contains(at.Scopes, "email") {
		user, err := p.auth.UserByID(r.Context(), at.Subject)
		switch {
		case errors.Is(err, publicauth.ErrUserNotFound):
			httpjson.Write(w, http.StatusOK, inactive)
			return
		case err != nil:
			p.introspectionError(w, r, fosite.ErrServerError.WithWrap(err).WithDebug(err.Error()))
			return
		case user.Email != "":
			resp["username"] = user.Email
		}
	}
	httpjson.Write(w, http.StatusOK, resp)
}

// introspectionError answers a request the endpoint refused, in the RFC 6749 shape.
func (p *Provider) introspectionError(w http.ResponseWriter, r *http.Request, err error) {
	err = asTemporarilyUnavailable(err)
	p.logServerError(r, "introspection failed", err)
	setRetryAfter(w, err)
	p.oauth.WriteAccessError(r.Context(), w, nil, err)
}

// mayIntrospect reports whether caller may see a token issued to clientID for audience:
// its own, or, for a resource server, one whose audience names it.
func mayIntrospect(caller fosite.Client, clientID string, audience []string) bool {
	if clientID == caller.GetID() {
		return true
	}
	c, ok := caller.(*storage.Client)
	return ok && c.ResourceServer && slices.Contains(audience, c.ID)
}

// introspection is the RFC 7662 answer for an active refresh token. username (the user's
// email) is there only when the email scope was granted: the client could not learn it
// otherwise.
func (p *Provider) introspection(use fosite.TokenUse, ar fosite.Requester, session *Session) map[string]any {
	resp := map[string]any{
		"active":    true,
		"iss":       p.cfg.Issuer,
		"client_id": ar.GetClient().GetID(),
		"aud":       audienceClaim(tokenAudience(ar)),
	}
	if scopes := ar.GetGrantedScopes(); len(scopes) > 0 {
		resp["scope"] = strings.Join(scopes, " ")
	}
	if sub := session.GetSubject(); sub != "" {
		resp["sub"] = sub
	}
	if ar.GetGrantedScopes().Has("email") && session.GetUsername() != "" {
		resp["username"] = session.GetUsername()
	}
	if iat := ar.GetRequestedAt(); !iat.IsZero() {
		resp["iat"] = iat.Unix()
	}
	if exp := session.GetExpiresAt(use); !exp.IsZero() {
		resp["exp"] = exp.Unix()
	}
	if session.DPoPJKT != "" {
		resp["cnf"] = map[string]string{"jkt": session.DPoPJKT} // a public client's bound refresh token
	}
	return resp
}

// sessionOf returns the Gatehouse session of a request fosite loaded from storage.
func sessionOf(ar fosite.Requester) (*Session, bool) {
	if ar == nil {
		return nil, false
	}
	s, ok := ar.GetSession().(*Session)
	return s, ok
}

// expired reports whether the provider's clock has passed the expiry of session's token of
// the given use. fosite checks expiry against the wall clock; this keeps an injected clock
// authoritative too.
func (p *Provider) expired(session *Session, use fosite.TokenUse) bool {
	exp := session.GetExpiresAt(use)
	return !exp.IsZero() && !p.now().Before(exp)
}
