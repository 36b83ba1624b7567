package provider

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// The hosted pages: login, registration and consent. Each works without JavaScript, carries
// a CSRF token, and when it belongs to a paused authorization request (the `request`
// parameter) resumes that request once done.

// pageContext loads what a hosted page shows about a paused request: its client's name and
// login_hint. An empty token means a page opened directly, outside any OAuth flow.
func (p *Provider) pageContext(r *http.Request, token string) (row *storage.AuthRequest, client *storage.Client, hint string, err error) {
	if token == "" {
		return nil, nil, "", nil
	}
	row, err = p.store.AuthRequestByIDHash(r.Context(), hashToken(token), p.now())
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, "", errRequestExpired
	} else if err != nil {
		return nil, nil, "", err
	}
	client, err = p.store.ClientByID(r.Context(), row.ClientID)
	if err != nil {
		return nil, nil, "", err
	}
	form, _ := url.ParseQuery(row.Form)
	return row, client, form.Get("login_hint"), nil
}

func (p *Provider) pageFailure(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errRequestExpired) {
		p.pausedRequestError(w, r, nil, err)
		return
	}
	p.log.ErrorContext(r.Context(), "hosted page failed", "error", err)
	if httpjson.Unavailable(err) {
		w.Header().Set("Retry-After", "5")
		p.pages.error(w, r, http.StatusServiceUnavailable, "Temporarily unavailable", "The service is temporarily unavailable. Please try again in a moment.")
		return
	}
	p.pages.error(w, r, http.StatusInternalServerError, "Something went wrong", "Please try again in a moment.")
}

// formPage serves the GET of a hosted form (login, register or forgot-password): the email
// query parameter, else login_hint, prefills the email.
func (p *Provider) formPage(page string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get(requestParam)
		_, client, hint, err := p.pageContext(r, token)
		if err != nil {
			p.pageFailure(w, r, err)
			return
		}
		email := r.URL.Query().Get("email")
		if email == "" {
			email = hint
		}
		p.renderForm(w, r, http.StatusOK, page, token, client, map[string]any{"Email": email})
	}
}

// formLink is the path of a hosted form page prefilled with email, within the paused
// request token names when there is one.
func formLink(page, token, email string) string {
	q := url.Values{"email": {email}}
	if token != "" {
		q.Set(requestParam, token)
	}
	return page + "?" + q.Encode()
}

// submittedForm is a hosted form POST that passed the CSRF check, with the paused request it
// belongs to (nil outside an OAuth flow).
type submittedForm struct {
	token  string
	row    *storage.AuthRequest
	client *storage.Client
}

// checkForm loads the paused request of a form POST and verifies its CSRF token; on failure
// it has answered and returns false.
func (p *Provider) checkForm(w http.ResponseWriter, r *http.Request) (submittedForm, bool) {
	f := submittedForm{token: r.PostFormValue(requestParam)}
	var err error
	if f.row, f.client, _, err = p.pageContext(r, f.token); err != nil {
		p.pageFailure(w, r, err)
		return f, false
	}
	if !p.csrf.verify(r) {
		p.pages.error(w, r, http.StatusForbidden, "Form expired", "The form expired. Go back, reload the page and try again.")
		return f, false
	}
	return f, true
}

// loginSubmit checks the password, asks for the PIN when the gate is on for the user, then
// starts the public session and resumes the paused request (303, so the browser follows
// with a GET).
func (p *Provider) loginSubmit(w http.ResponseWriter, r *http.Request) {
	f, ok := p.checkForm(w, r)
	if !ok {
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	err := p.auth.CheckRate(r, limitLogin)
	var user *publicauth.User
	if err == nil {
		user, err = p.auth.Authenticate(r.Context(), email, r.PostFormValue("password"))
	}
	if err != nil {
		p.formFailed(w, r, "login", f, map[string]any{"Email": email}, err)
		return
	}
	p.passFirstFactor(w, r, user, publicauth.MethodPassword, flowDestination(f.token), f.token)
}

// flowDestination is where a hosted login goes once complete: the paused request token
// names, by reference, or the signed-in page outside any flow.
func flowDestination(token string) publicauth.Destination {
	if token == "" {
		return publicauth.Destination{}
	}
	return publicauth.Destination{PausedRequest: hashToken(token)}
}

// registerSubmit registers as the JSON API does. A new account (which gets a verification
// mail) and a password added to the signed-in social-only account of the email are then
// logged in as loginSubmit does; a password that a mailed link must confirm first gets a
// page saying to check the mail.
func (p *Provider) registerSubmit(w http.ResponseWriter, r *http.Request) {
	f, ok := p.checkForm(w, r)
	if !ok {
		return
	}
	email, name := strings.TrimSpace(r.PostFormValue("email")), strings.TrimSpace(r.PostFormValue("name"))
	err := p.auth.CheckRate(r, limitRegister)
	var signedIn *publicauth.User
	if err == nil {
		signedIn, err = p.auth.SignedIn(r)
	}
	var reg publicauth.Registration
	if err == nil {
		reg, err = p.auth.Register(r.Context(), email, r.PostFormValue("password"), name, signedIn)
	}
	if err != nil {
		data := map[string]any{"Email": email, "Name": name}
		if errors.Is(err, publicauth.ErrEmailTaken) {
			// A way forward for someone who forgot they had an account.
			data["SignInURL"], data["ResetURL"] = formLink("/login", f.token, email), formLink("/forgot-password", f.token, email)
		}
		p.formFailed(w, r, "register", f, data, err)
		return
	}
	if reg.AccountLinking && !reg.PasswordAdded {
		p.notice(w, r, http.StatusOK, "Check your email",
			"An account with "+reg.User.Email+" already exists and signs in with a social login. We sent "+
				"that address a link to confirm adding your password to it. It works once, for "+
				publicauth.MailData{ExpiresIn: p.cfg.PublicAuth.PasswordResetLifespan}.ExpiresInWords()+".", "", "")
		return
	}
	p.passFirstFactor(w, r, reg.User, publicauth.MethodPassword, flowDestination(f.token), f.token)
}

// completeLogin starts the public session and binds this login to the paused request (so
// prompt=login and max_age see a fresh authentication), then resumes it. The login re-keys
// the request under a new token, which only this browser gets: the login may have come from
// a stored reference (a mailed link, a PIN challenge), which cannot give the old token back,
// and a token seen before the login no longer drives the flow after it.
func (p *Provider) completeLogin(w http.ResponseWriter, r *http.Request, user *publicauth.User, method string, row *storage.AuthRequest) {
	ctx := r.Context()
	token, err := randomToken(p.random)
	if err != nil {
		p.pageFailure(w, r, err)
		return
	}
	session, err := p.auth.ReplaceSession(ctx, w, r, user, publicauth.SessionPublic, method)
	if err != nil {
		p.pageFailure(w, r, err)
		return
	}
	if err := p.store.CompleteAuthRequestLogin(ctx, row.IDHash, hashToken(token), user.ID, session.AuthTime); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			err = errRequestExpired
		}
		p.pageFailure(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, resumePath(token), http.StatusSeeOther)
}

func (p *Provider) consentPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get(requestParam)
	row, client, _, err := p.pageContext(r, token)
	if err == nil && row == nil {
		err = errRequestExpired
	}
	if err != nil {
		p.pageFailure(w, r, err)
		return
	}
	_, user, err := p.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		// The session ended (or never was): log in first, then come back here.
		http.Redirect(w, r, "/login?"+url.Values{requestParam: {token}}.Encode(), http.StatusSeeOther)
		return
	}
	form, _ := url.ParseQuery(row.Form)
	p.renderForm(w, r, http.StatusOK, "consent", token, client, map[string]any{
		"UserEmail": user.Email,
		"Scopes":    describeScopes(strings.Fields(form.Get("scope"))),
	})
}

// consentSubmit records the user's decision. Allow remembers the scopes for this user and
// client and finishes the authorization; deny sends access_denied to the client.
func (p *Provider) consentSubmit(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	token := r.PostFormValue(requestParam)
	if !p.csrf.verify(r) {
		p.pages.error(w, r, http.StatusForbidden, "Form expired", "The form expired. Go back, reload the page and try again.")
		return
	}
	row, ar, err := p.pausedRequest(r, token)
	if err != nil {
		p.pausedRequestError(w, r, ar, err)
		return
	}
	session, user, err := p.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		http.Redirect(w, r, "/login?"+url.Values{requestParam: {token}}.Encode(), http.StatusSeeOther)
		return
	}
	f := flow{requestedAt: row.RequestedAt.UTC(), token: token, paused: row}
	if r.PostFormValue("decision") != "allow" {
		if err := p.store.DeleteAuthRequest(ctx, row.IDHash); err != nil {
			p.log.WarnContext(ctx, "deleting a denied authorization request failed", "error", err)
		}
		p.authorizeError(w, r, ar, fosite.ErrAccessDenied.WithHint("The user denied the request."))
		return
	}
	granted := slices.Clone([]string(ar.GetRequestedScopes())) // appended to below; fosite keeps its own
	if prev, err := p.store.ConsentFor(ctx, user.ID, row.ClientID); err == nil {
		for _, s := range prev.Scopes {
			if !slices.Contains(granted, s) {
				granted = append(granted, s)
			}
		}
	}
	if err := p.store.SaveConsent(ctx, &storage.Consent{
		UserID: user.ID, ClientID: row.ClientID, Scopes: granted, GrantedAt: p.now().UTC(),
	}); err != nil {
		p.authorizeError(w, r, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	authTime := session.AuthTime
	if row.UserID == user.ID && row.AuthTime != nil {
		authTime = *row.AuthTime
	}
	p.issue(w, r, ar, user, authTime, session.Method, f)
}

// renderForm renders a hosted form page with its CSRF token and request context.
func (p *Provider) renderForm(w http.ResponseWriter, r *http.Request, status int, page, token string, client *storage.Client, data map[string]any) {
	csrf, err := p.csrf.token(w, r)
	if err != nil {
		p.pageFailure(w, r, err)
		return
	}
	data["CSRF"], data["Request"] = csrf, token
	if page == "login" {
		p.socialLoginData(r, token, data)
	}
	if client != nil {
		name := client.Name
		if name == "" {
			name = client.ID
		}
		data["ClientName"] = name
	}
	p.pages.render(w, r, status, page, data)
}

// describeScopes turns scope names into what the consent page says.
func describeScopes(scopes []string) []string {
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		switch s {
		case "openid":
			out = append(out, "Know who you are")
		case "profile":
			out = append(out, "See your name")
		case "email":
			out = append(out, "See your email address")
		case "offline_access":
			out = append(out, "Stay signed in when you are away")
		case "manage_permissions":
			out = append(out, "Manage your access permissions")
		default:
			out = append(out, "Use scope "+s)
		}
	}
	return out
}
