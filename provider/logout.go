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
	// confirmTarget is set when target belongs to a self-registered client: anyone can
	// register any URI that way, so the browser goes there at once only from its own
	// session's logout, else after the user confirms (RFC 9700 §4.11.2).
	confirmTarget bool
	// hintSubject and hintSID are the subject and sid of id_token_hint when it is an
	// unexpired ID token this provider signed and agrees with client_id; else "". An
	// expired hint still names the client to return to, but only a fresh one ends a session
	// unasked: every relying party the user ever signed in to keeps old ID tokens, and any
	// of them could otherwise sign the user out with a link.
	hintSubject, hintSID string
	// form holds the parameters the confirmation page carries to its POST.
	form url.Values
}

// logout is the end_session_endpoint (GET or POST). With an unexpired id_token_hint, the
// session its sid names ends at once, whether or not the request carries the browser's
// cookie: a relying party's back-end logout (oauth2-proxy's --backend-logout-url) calls
// from its server with the hint alone, as Keycloak allows. A browser signed in as anyone but
// the hint's fresh subject confirms on a hosted page, so a cross-site link or form cannot
// sign them out (its POST comes back through uiHost.Logout). The user is then sent to
// post_logout_redirect_uri, with `state`, when logoutRequest validated it, else shown the
// logged-out page, which says whether a session ended. A self-registered client's URI is
// followed at once only when the browser's own session ended here; otherwise the user
// confirms first.
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
		p.ui.LogoutConfirmation(w, r, ui.LogoutView{UserEmail: user.Email, ReturnHost: lr.returnHost(), Fields: lr.form})
		return
	}
	if user == nil && lr.target != nil && lr.confirmTarget {
		// The hint's session ends now, as it would without a target; only the redirect waits.
		p.ui.LogoutConfirmation(w, r, ui.LogoutView{SignedOut: p.endHintSession(ctx, lr), ReturnHost: lr.returnHost(), Fields: lr.form})
		return
	}
	p.endSessionAndLeave(w, r, lr, user != nil)
}

// endSessionAndLeave ends the browser's session (signedIn: r carries a live one) and the
// session lr's hint names, then redirects to lr's target with state, or shows the
// logged-out page, saying whether a session ended.
func (p *Provider) endSessionAndLeave(w http.ResponseWriter, r *http.Request, lr logoutRequest, signedIn bool) {
	ctx := r.Context()
	if err := p.auth.EndSession(ctx, w, r, publicauth.SessionPublic); err != nil {
		p.log.ErrorContext(ctx, "ending the session at logout failed", "error", err)
		signedIn = false
	}
	ended := p.endHintSession(ctx, lr) || signedIn
	if lr.target == nil {
		p.ui.LoggedOut(w, r, ended)
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

// endHintSession ends the live session lr's fresh id_token_hint names by its sid (with its
// back-channel logout messages and tokens, as any session end) and reports whether it
// ended one. A failure is logged and ends nothing.
func (p *Provider) endHintSession(ctx context.Context, lr logoutRequest) bool {
	if lr.hintSID == "" {
		return false
	}
	ended, err := p.store.EndSessionBySID(ctx, lr.hintSID, lr.hintSubject, p.now())
	if err != nil {
		p.log.ErrorContext(ctx, "ending the id_token_hint's session at logout failed", "error", err)
		return false
	}
	return ended
}

// returnHost is the host the browser goes to after the logout, "" for none.
func (lr logoutRequest) returnHost() string {
	if lr.target == nil {
		return ""
	}
	return lr.target.Host
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
			lr.hintSID, _ = claims["sid"].(string)
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
	lr.confirmTarget = client.DynamicallyRegistered()
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
