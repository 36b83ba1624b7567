package provider

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// logout is OpenID Connect RP-Initiated Logout 1.0 (GET or POST). The browser's session
// always ends. The user is sent back to post_logout_redirect_uri only when id_token_hint is
// an ID token this provider signed and the URI is registered, exactly, for the client the
// token was issued to; `state` is then echoed. Otherwise a logged-out page is shown.
func (p *Provider) logout(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		p.pages.error(w, r, http.StatusBadRequest, "Invalid logout request", "The logout request could not be read.")
		return
	}
	target := p.postLogoutRedirect(r)
	if err := p.auth.EndSession(ctx, w, r, publicauth.SessionPublic); err != nil {
		p.log.ErrorContext(ctx, "ending the session at logout failed", "error", err)
	}
	if target == nil {
		p.pages.render(w, r, http.StatusOK, "logged_out", nil)
		return
	}
	if state := r.Form.Get("state"); state != "" {
		q := target.Query()
		q.Set("state", state)
		target.RawQuery = q.Encode()
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target.String(), http.StatusSeeOther)
}

// postLogoutRedirect returns the validated post-logout redirect URI, or nil.
func (p *Provider) postLogoutRedirect(r *http.Request) *url.URL {
	hint, target := r.Form.Get("id_token_hint"), r.Form.Get("post_logout_redirect_uri")
	if hint == "" || target == "" {
		return nil
	}
	claims, err := p.verifyIDTokenHint(hint)
	if err != nil {
		p.log.InfoContext(r.Context(), "logout with an invalid id_token_hint", "error", err)
		return nil
	}
	audiences := claimStrings(claims["aud"])
	clientID := r.Form.Get("client_id")
	if clientID == "" {
		clientID, _ = claims["azp"].(string)
	}
	if clientID == "" && len(audiences) > 0 {
		clientID = audiences[0]
	}
	if !slices.Contains(audiences, clientID) {
		return nil
	}
	client, err := p.store.ClientByID(r.Context(), clientID)
	if err != nil || !slices.Contains(client.PostLogoutRedirectURIs, target) {
		return nil
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil
	}
	return u
}

// claimStrings reads a JWT claim that may be a string or an array of strings.
func claimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
