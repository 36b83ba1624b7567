package provider

import (
	"net/http"
	"slices"
	"strings"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
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
	use, ar, err := p.oauth.IntrospectToken(ctx, r.PostForm.Get("token"), fosite.TokenUse(r.PostForm.Get("token_type_hint")), newSession())
	if httpjson.Unavailable(err) {
		p.introspectionError(w, r, err)
		return
	}
	session, _ := sessionOf(ar)
	if err != nil || session == nil || p.expired(session, use) || !mayIntrospect(caller, ar) {
		httpjson.Write(w, http.StatusOK, map[string]bool{"active": false})
		return
	}
	httpjson.Write(w, http.StatusOK, p.introspection(use, ar, session))
}

// introspectionError answers a request the endpoint refused, in the RFC 6749 shape.
func (p *Provider) introspectionError(w http.ResponseWriter, r *http.Request, err error) {
	err = asTemporarilyUnavailable(err)
	p.logServerError(r, "introspection failed", err)
	p.oauth.WriteAccessError(r.Context(), w, nil, err)
}

// mayIntrospect reports whether caller may see the token of grant ar: its own, or, for a
// resource server, one whose audience names it.
func mayIntrospect(caller fosite.Client, ar fosite.Requester) bool {
	if ar.GetClient().GetID() == caller.GetID() {
		return true
	}
	c, ok := caller.(*storage.Client)
	return ok && c.ResourceServer && slices.Contains(tokenAudience(ar), c.ID)
}

// introspection is the RFC 7662 answer for an active token. username (the user's email) is
// there only when the email scope was granted: the client could not learn it otherwise.
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
	if use == fosite.AccessToken {
		resp["token_type"] = "Bearer"
	}
	if iat := ar.GetRequestedAt(); !iat.IsZero() {
		resp["iat"] = iat.Unix()
	}
	if exp := session.GetExpiresAt(use); !exp.IsZero() {
		resp["exp"] = exp.Unix()
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
