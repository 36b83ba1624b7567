package provider

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/ui"
)

// requestParam names the query parameter that carries a paused authorization request's
// token between /api/oauth/authorize and the hosted pages.
const requestParam = ui.RequestParam

// flow is what the authorization endpoint knows about one authorization request beyond its
// parameters.
type flow struct {
	// requestedAt is when the request first arrived (whole seconds, UTC).
	requestedAt time.Time
	// token identifies the paused request (empty until the request is paused).
	token string
	// paused is the stored request when the flow resumes after a login or consent page.
	paused *storage.AuthRequest
}

// authorize is the authorization endpoint (RFC 6749 §3.1, OpenID Connect Core §3.1.2.1),
// GET or POST. It validates the request, then either answers at once (a session that
// satisfies prompt, max_age and id_token_hint, and consent already given), or pauses the
// request for the login or consent page.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	ar, err := p.parseAuthorizeRequest(r.Context(), r)
	if err != nil {
		p.authorizeError(w, r, ar, err)
		return
	}
	p.decide(w, r, ar, flow{requestedAt: secondUTC(p.now())})
}

// resumeAuthorize continues a paused authorization request after the hosted pages.
func (p *Provider) resumeAuthorize(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get(requestParam)
	row, ar, err := p.pausedRequest(r, token)
	if errors.Is(err, errDevicePaused) {
		// A login for a device approval resumes on the device pages.
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, p.mount+ui.DevicePath+"/confirm?"+url.Values{requestParam: {token}}.Encode(), http.StatusSeeOther)
		return
	}
	if err != nil {
		p.pausedRequestError(w, r, ar, err)
		return
	}
	p.decide(w, r, ar, flow{requestedAt: row.RequestedAt.UTC(), token: token, paused: row})
}

// pausedRequest loads a paused request and parses it again through fosite, so a client or
// redirect URI changed in the meantime is checked anew.
func (p *Provider) pausedRequest(r *http.Request, token string) (*storage.AuthRequest, fosite.AuthorizeRequester, error) {
	if token == "" {
		return nil, nil, publicauth.ErrRequestExpired
	}
	row, err := p.pausedRow(r.Context(), hashToken(token))
	if err != nil {
		return nil, nil, err
	}
	if isDevicePaused(row.Form) {
		return row, nil, errDevicePaused
	}
	// The form of a pushed request replays without its request_uri (spent when the request
	// arrived) and without a PAR check (passed then).
	ar, err := p.newAuthorizeRequest(r.Context(), replayAuthorizeRequest(r, row.Form))
	return row, ar, err
}

func (p *Provider) pausedRequestError(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, err error) {
	if errors.Is(err, errDevicePaused) {
		err = publicauth.ErrRequestExpired // a device approval is decided on its own page
	}
	if errors.Is(err, publicauth.ErrRequestExpired) {
		p.ui.Error(w, r, err)
		return
	}
	p.authorizeError(w, r, ar, err)
}

// newAuthorizeRequest parses and validates an authorization request with fosite, then adds
// Gatehouse's own rules: PKCE with S256 only, required unless configured otherwise.
func (p *Provider) newAuthorizeRequest(ctx context.Context, r *http.Request) (fosite.AuthorizeRequester, error) {
	var resourceErr error
	parsed := r // the request fosite parses
	// fosite reads the requested audience from r.Form, which it parses the same way.
	if err := r.ParseMultipartForm(1 << 20); err == nil || errors.Is(err, http.ErrNotMultipart) {
		if r.Form.Get("request") != "" {
			// The object's parameters alone; r keeps the query's, for an error about the
			// object to reach the client (withoutRequestObject).
			parsed = r.Clone(ctx)
			parsed.Form, parsed.PostForm = requestObjectForm(r.Form, outsideRequestObject), url.Values{}
		}
		resourceErr = mergeResources(parsed.Form)
	}
	var ar fosite.AuthorizeRequester
	err := oversizedRequest(r.Form, false)
	if err == nil {
		err = p.checkRequestObject(parsed.Form)
	}
	if err == nil {
		ar, err = p.oauth.NewAuthorizeRequest(ctx, parsed)
		var rfc *fosite.RFC6749Error
		switch {
		case err == nil:
			if err = requestObjectClient(ar); err == nil {
				settleRequestObject(ar.GetRequestForm())
			}
		case parsed.Form.Get("request") != "" && !errors.As(err, &rfc):
			// fosite returns some failures of a request object's claims unwrapped.
			err = fosite.ErrInvalidRequestObject.WithHint("The request object's claims are not valid.").WithWrap(err).WithDebug(err.Error())
		}
	}
	if err != nil {
		if ar == nil || requestObjectError(err) {
			// A request object or request_uri, or an oversized parameter, is refused before
			// the redirect URI is checked. Parse the request again without a request object:
			// when client and redirect URI are valid, the error can be redirected to the
			// client, as OpenID Connect Core §6 expects (without an oversized state:
			// authorizeError).
			if plain := p.withoutRequestObject(ctx, r); plain != nil && plain.IsRedirectURIValid() {
				return plain, err
			}
		}
		return ar, err
	}
	// What a request object carried, and the whole form as it would be stored.
	if err := oversizedStoredForm(ar.GetRequestForm(), parsed != r); err != nil {
		return ar, err
	}
	if resourceErr != nil {
		return ar, resourceErr
	}
	if err := checkClaimsParameter(ar); err != nil {
		return ar, err
	}
	return ar, p.checkPKCE(ar)
}

// checkPKCE applies Gatehouse's PKCE rules to an authorization request: S256 only,
// required unless Config.AllowConfidentialWithoutPKCE lets a confidential client omit it.
func (p *Provider) checkPKCE(ar fosite.AuthorizeRequester) error {
	form := ar.GetRequestForm()
	challenge, method := form.Get("code_challenge"), form.Get("code_challenge_method")
	switch {
	case challenge == "" && (ar.GetClient().IsPublic() || !p.cfg.AllowConfidentialWithoutPKCE):
		return fosite.ErrInvalidRequest.WithHint("Clients must use PKCE: send code_challenge with code_challenge_method S256.")
	case challenge != "" && method != "S256":
		return fosite.ErrInvalidRequest.WithHint("code_challenge_method must be S256.")
	case !validDPoPJKT(form.Get("dpop_jkt")):
		return fosite.ErrInvalidRequest.WithHint("dpop_jkt must be a JWK SHA-256 thumbprint, base64url-encoded.")
	}
	return nil
}

// requestObjectError reports an error about a request object or request_uri, which the
// client should hear of at its redirect URI when the rest of the request is valid.
func requestObjectError(err error) bool {
	for _, e := range []error{fosite.ErrRequestNotSupported, fosite.ErrRequestURINotSupported,
		fosite.ErrInvalidRequestObject, fosite.ErrInvalidRequestURI} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (p *Provider) withoutRequestObject(ctx context.Context, r *http.Request) fosite.AuthorizeRequester {
	form := url.Values{}
	for k, v := range r.Form {
		if k != "request" && k != "request_uri" {
			form[k] = v
		}
	}
	plain := r.Clone(ctx)
	plain.Form, plain.PostForm = form, url.Values{}
	ar, err := p.oauth.NewAuthorizeRequest(ctx, plain)
	if err != nil && (ar == nil || !ar.IsRedirectURIValid()) {
		return nil
	}
	return ar
}

// decide finishes an authorization request or pauses it for a page.
func (p *Provider) decide(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, f flow) {
	ctx := r.Context()
	form := ar.GetRequestForm()
	prompts := fosite.RemoveEmpty(strings.Split(form.Get("prompt"), " "))
	promptNone := slices.Contains(prompts, "none")

	session, user, err := p.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil && !errors.Is(err, publicauth.ErrSessionNotFound) {
		p.authorizeError(w, r, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	var authTime time.Time
	fresh := false // the user logged in during this very request
	switch {
	case user == nil:
	case f.paused != nil && f.paused.UserID == user.ID && f.paused.AuthTime != nil:
		authTime, fresh = *f.paused.AuthTime, true
	default:
		authTime = session.AuthTime
	}

	needLogin := user == nil
	if user != nil && !fresh {
		if slices.Contains(prompts, "login") || slices.Contains(prompts, "select_account") {
			needLogin = true
		}
		if maxAge, err := strconv.ParseInt(form.Get("max_age"), 10, 64); err == nil && maxAge >= 0 &&
			p.now().Sub(authTime) > time.Duration(maxAge)*time.Second {
			needLogin = true
		}
		if hint := form.Get("id_token_hint"); hint != "" {
			sub, err := p.idTokenHintSubject(hint)
			if err != nil {
				p.authorizeError(w, r, ar, fosite.ErrInvalidRequest.WithHint("id_token_hint is not an ID token issued by this provider.").WithWrap(err))
				return
			}
			if sub != user.ID {
				needLogin = true
			}
		}
	}
	if user != nil {
		switch wanted := requestedSubject(form); {
		case wanted == "" || wanted == user.ID:
		case fresh:
			p.authorizeError(w, r, ar, fosite.ErrAccessDenied.WithHint("The user who signed in is not the subject the claims parameter asks for."))
			return
		default:
			needLogin = true
		}
	}
	if needLogin {
		if promptNone {
			p.authorizeError(w, r, ar, fosite.ErrLoginRequired.WithHint("The user is not logged in."))
			return
		}
		p.pause(w, r, ar, f, p.loginPage(form))
		return
	}

	client, ok := ar.GetClient().(*storage.Client)
	if !ok {
		p.authorizeError(w, r, ar, fosite.ErrServerError.WithDebug("unexpected client type"))
		return
	}
	if !client.FirstParty {
		consented, err := p.hasConsent(ctx, user.ID, client.ID, ar.GetRequestedScopes())
		if err != nil {
			p.authorizeError(w, r, ar, fosite.ErrServerError.WithWrap(err))
			return
		}
		if !consented || slices.Contains(prompts, "consent") {
			if promptNone {
				p.authorizeError(w, r, ar, fosite.ErrConsentRequired.WithHint("The user has not consented to this client."))
				return
			}
			p.pause(w, r, ar, f, p.mount+"/consent")
			return
		}
	}
	p.issue(w, r, ar, user, authTime, session.Method, session.SID, f)
}

// pause stores the request (once) and sends the browser to a hosted page, page its path
// (under the mount path).
func (p *Provider) pause(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, f flow, page string) {
	token := f.token
	if token == "" {
		var err error
		if token, err = randomToken(p.random); err != nil {
			p.authorizeError(w, r, ar, fosite.ErrServerError.WithWrap(err))
			return
		}
		if err := p.limitStoredRequest(r.Context(), r, storedPaused, ar.GetClient().GetID(), true); err != nil {
			p.ui.Error(w, r, err) // 429 with Retry-After
			return
		}
		row := &storage.AuthRequest{
			IDHash:      hashToken(token),
			ClientID:    ar.GetClient().GetID(),
			Form:        ar.GetRequestForm().Encode(),
			RequestedAt: f.requestedAt,
			ExpiresAt:   p.now().UTC().Add(p.cfg.LoginRequestLifespan),
		}
		if err := p.store.CreateAuthRequest(r.Context(), row); err != nil {
			p.authorizeError(w, r, ar, fosite.ErrServerError.WithWrap(err))
			return
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, page+"?"+url.Values{requestParam: {token}}.Encode(), http.StatusSeeOther)
}

// issue grants the requested scopes and writes the authorization response (with `iss`,
// RFC 9207).
func (p *Provider) issue(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, user *publicauth.User, authTime time.Time, method, sid string, f flow) {
	ctx := r.Context()
	for _, scope := range ar.GetRequestedScopes() {
		ar.GrantScope(scope)
	}
	for _, aud := range ar.GetRequestedAudience() {
		ar.GrantAudience(aud)
	}
	session := p.userSession(ctx, user, ar, authTime, f.requestedAt, method)
	session.setBrowserSessionID(sid) // the ID token's sid (backchannel.go)
	resp, err := p.newAuthorizeResponse(ctx, ar, session, f.token)
	if err != nil {
		p.authorizeError(w, r, ar, err)
		return
	}
	resp.AddParameter("iss", p.cfg.Issuer)
	if ar.GetResponseMode() == fosite.ResponseModeFormPost {
		// fosite's own form_post page has no security headers and an inline script.
		for name := range resp.GetHeader() {
			w.Header().Set(name, resp.GetHeader().Get(name))
		}
		p.ui.FormPost(w, ar.GetRedirectURI().String(), resp.GetParameters())
		return
	}
	p.oauth.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// newAuthorizeResponse issues the code in one transaction: fosite's handlers store the code,
// the OpenID Connect session and the PKCE challenge one by one, the client is recorded as
// one to notify when the browser session ends, and the paused request (if any) is deleted
// with them, so a failure leaves no half-issued code behind. Nothing is
// signed here, so the transaction stays short.
func (p *Provider) newAuthorizeResponse(ctx context.Context, ar fosite.AuthorizeRequester, session *Session, pausedToken string) (fosite.AuthorizeResponder, error) {
	var resp fosite.AuthorizeResponder
	err := p.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if resp, err = p.oauth.NewAuthorizeResponse(ctx, ar, session); err != nil {
			return err
		}
		if err := p.recordSessionClient(ctx, session, ar); err != nil {
			return err
		}
		if pausedToken != "" {
			return p.store.DeleteAuthRequest(ctx, hashToken(pausedToken))
		}
		return nil
	})
	if err != nil {
		return nil, sessionEndedAsLoginRequired(err)
	}
	return resp, nil
}

// userSession builds the fosite session of a user grant: the ID token claims the granted
// scopes and the `claims` parameter allow (idTokenClaims), auth_time from the real login, and the
// request time for max_age/prompt.
func (p *Provider) userSession(ctx context.Context, user *publicauth.User, ar fosite.AuthorizeRequester, authTime, requestedAt time.Time, method string) *Session {
	s := newSession()
	s.Subject, s.Username = user.ID, user.Email
	s.ClientID, s.UserBound = ar.GetClient().GetID(), true
	s.CodeDPoPJKT = ar.GetRequestForm().Get("dpop_jkt") // the code is redeemed only with this key (RFC 9449 §10)
	c := s.Claims
	c.Subject = user.ID
	c.Issuer = p.cfg.Issuer
	c.AuthTime = secondUTC(authTime)
	c.RequestedAt = secondUTC(requestedAt)
	c.Extra = map[string]any{"azp": ar.GetClient().GetID()}
	p.idTokenClaims(ctx, s, user, ar)
	if amr := amrFor(method); amr != "" {
		c.AuthenticationMethodsReferences = []string{amr}
	}
	if ar.GetRequestForm().Get("acr_values") != "" {
		// Every Gatehouse login is one authentication factor: ACR level "1". Without this,
		// fosite would write "0" for any request carrying acr_values.
		c.AuthenticationContextClassReference = acrSingleFactor
	}
	return s
}

const acrSingleFactor = "1"

// amrFor maps a login method to its RFC 8176 amr value.
func amrFor(method string) string {
	switch method {
	case publicauth.MethodPassword:
		return "pwd"
	}
	return ""
}

// hasConsent reports whether the user already granted the client every scope in scopes.
func (p *Provider) hasConsent(ctx context.Context, userID, clientID string, scopes []string) (bool, error) {
	c, err := p.store.ConsentFor(ctx, userID, clientID)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	for _, s := range scopes {
		if !slices.Contains(c.Scopes, s) {
			return false, nil
		}
	}
	return true, nil
}

// idTokenHintSubject verifies that hint is an ID token this provider signed (an expired one
// is accepted, as OpenID Connect Core §3.1.2.1 allows) and returns its subject.
func (p *Provider) idTokenHintSubject(hint string) (string, error) {
	claims, err := p.verifyIDTokenHint(hint)
	if err != nil {
		return "", err
	}
	sub, _ := claims["sub"].(string)
	return sub, nil
}

// authorizeError answers a failed authorization request. Without a verified redirect URI
// (unknown client, unregistered redirect_uri) it shows an error page and never redirects;
// so it does for a self-registered client while the browser has no session (untrustedRedirect).
// Otherwise it redirects (or form-posts) error, error_description, state and iss.
func (p *Provider) authorizeError(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, err error) {
	err = asTemporarilyUnavailable(err)
	p.logServerError(r, "authorization request failed", err)
	rfc := fosite.ErrorToRFC6749Error(err)
	description := sanitizeDescription(rfc.GetDescription())
	if ar == nil || !ar.IsRedirectURIValid() || p.untrustedRedirect(r, ar) {
		status := rfc.CodeField
		if status < 400 || status == http.StatusUnauthorized {
			// An unknown client is fosite's 401 invalid_client, but a page has no
			// WWW-Authenticate challenge to offer: it is a bad request.
			status = http.StatusBadRequest
		}
		p.ui.Error(w, r, &ui.RequestError{Status: status, Description: description})
		return
	}
	params := url.Values{"error": {rfc.ErrorField}, "iss": {p.cfg.Issuer}}
	if description != "" {
		params.Set("error_description", description)
	}
	if state := ar.GetState(); state != "" && len(state) <= maxStateBytes {
		// An oversized state, refused, is not echoed back to the client either.
		params.Set("state", state)
	}
	redirect := *ar.GetRedirectURI()
	if ar.GetResponseMode() == fosite.ResponseModeFormPost {
		p.ui.FormPost(w, redirect.String(), params)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	q := redirect.Query()
	for k, v := range params {
		q[k] = v
	}
	redirect.RawQuery, redirect.Fragment = q.Encode(), ""
	w.Header().Set("Location", redirect.String())
	w.WriteHeader(http.StatusSeeOther)
}

// untrustedRedirect reports whether an error of ar must not be redirected to its
// (registered) redirect URI: the client registered itself, and the browser has no
// session. With open registration anyone can register any URI, and an authorization
// request that fails at once would make the endpoint an open redirector (RFC 9700
// §4.11.2); once the user has signed in, the redirect is theirs to expect. Clients the
// operator created are trusted. A session that cannot be read counts as none.
func (p *Provider) untrustedRedirect(r *http.Request, ar fosite.AuthorizeRequester) bool {
	client, ok := ar.GetClient().(*storage.Client)
	if !ok || !client.DynamicallyRegistered() {
		return false
	}
	user, err := p.auth.SignedIn(r)
	return err != nil || user == nil
}

// sanitizeDescription keeps error_description within RFC 6749's character set: no double
// quote and no backslash.
func sanitizeDescription(s string) string {
	return strings.NewReplacer(`"`, "'", `\`, "").Replace(s)
}
