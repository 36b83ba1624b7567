package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/ui"
)

// logoutRequest is a validated OpenID Connect RP-Initiated Logout 1.0 request.
type logoutRequest struct {
	// target is post_logout_redirect_uri when it is registered, exactly, for the client the
	// request names (by client_id, by the hint, or both in agreement); else nil.
	target *url.URL
	// hintSubject is the subject of id_token_hint when it is an unexpired ID token this
	// provider signed and agrees with client_id; else "". An expired hint still names the
	// client to return to, but only a fresh one skips the confirmation: every relying party
	// the user ever signed in to keeps old ID tokens, and any of them could otherwise sign
	// the user out with a link.
	hintSubject string
	// form holds the parameters the confirmation page carries to its POST.
	form url.Values
}

// logout is the end_session_endpoint (GET or POST). With no session there is nothing to
// confirm; with an unexpired id_token_hint whose subject is the session's user, the session
// ends at once. Otherwise the user confirms on a hosted page, so a cross-site link or form cannot
// sign them out (its POST comes back through uiHost.Logout). The user is then sent to post_logout_redirect_uri, with
// `state`, when logoutRequest validated it, else shown the logged-out page.
func (p *Provider) logout(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		p.ui.Error(w, r, fmt.Errorf("%w: %w", ui.ErrLogoutUnreadable, err))
		return
	}
	lr := p.logoutRequest(ctx, r.Form)
	user, err := p.auth.SignedIn(r)
	if err != nil {
		p.ui.Error(w, r, err)
		return
	}
	if user != nil && (lr.hintSubject == "" || lr.hintSubject != user.ID) {
		p.ui.LogoutConfirmation(w, r, user.Email, lr.form)
		return
	}
	p.endSessionAndLeave(w, r, lr)
}

// endSessionAndLeave ends the browser's session and redirects to lr's target with state, or
// shows the logged-out page.
func (p *Provider) endSessionAndLeave(w http.ResponseWriter, r *http.Request, lr logoutRequest) {
	ctx := r.Context()
	if err := p.auth.EndSession(ctx, w, r, publicauth.SessionPublic); err != nil {
		p.log.ErrorContext(ctx, "ending the session at logout failed", "error", err)
	}
	if lr.target == nil {
		p.ui.LoggedOut(w, r)
		return
	}
	target := *lr.target
	if state := lr.form.Get("state"); state != "" {
		q := target.Query()
		q.Set("state", state)
		target.RawQuery = q.Encode()
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target.String(), http.StatusSeeOther)
}

// logoutRequest validates form's id_token_hint, client_id and post_logout_redirect_uri. The
// client is client_id, or without it the hint's azp (else its first audience); when both
// are given the hint must be audienced to client_id. A hint that does not verify, or
// disagrees with client_id, gives no redirect at all.
func (p *Provider) logoutRequest(ctx context.Context, form url.Values) logoutRequest {
	hint, clientID, target := form.Get("id_token_hint"), form.Get("client_id"), form.Get("post_logout_redirect_uri")
	lr := logoutRequest{form: url.Values{}}
	for _, name := range []string{"id_token_hint", "client_id", "post_logout_redirect_uri", "state"} {
		if v := form.Get(name); v != "" {
			lr.form.Set(name, v)
		}
	}
	if hint != "" {
		claims, err := p.verifyIDTokenHint(hint)
		if err != nil {
			p.log.InfoContext(ctx, "logout with an invalid id_token_hint", "error", err)
			return lr
		}
		audiences := claimStrings(claims["aud"])
		if clientID == "" {
			clientID, _ = claims["azp"].(string)
		}
		if clientID == "" && len(audiences) > 0 {
			clientID = audiences[0]
		}
		if !slices.Contains(audiences, clientID) {
			p.log.InfoContext(ctx, "logout with an id_token_hint not issued to client_id", "client_id", clientID)
			return lr
		}
		if exp, ok := unixClaim(claims["exp"]); ok && p.now().Unix() < exp {
			lr.hintSubject, _ = claims["sub"].(string)
		}
	}
	if clientID == "" || target == "" {
		return lr
	}
	client, err := p.store.ClientByID(ctx, clientID)
	if err != nil || !slices.Contains(client.PostLogoutRedirectURIs, target) {
		return lr
	}
	if lr.target, err = url.Parse(target); err != nil {
		lr.target = nil
	}
	return lr
}

// unixClaim reads a NumericDate claim (RFC 7519 §2) as decoded from JSON.
func unixClaim(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), true
	case int64:
		return n, true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
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
