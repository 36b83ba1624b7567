package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// The hosted pages: login, registration and consent. Each works without JavaScript, carries
// a CSRF token, and when it belongs to a paused authorization request (the `request`
// parameter) resumes that request once done.

// pageContext loads what a hosted page shows about a paused request. An empty token means a
// page opened directly, outside any OAuth flow: no request.
func (u *UI) pageContext(r *http.Request, token string) (*PausedRequest, error) {
	if token == "" {
		return nil, nil
	}
	pr, err := u.host.PausedRequest(r.Context(), token)
	if err != nil {
		return nil, err
	}
	return &pr, nil
}

// formPage serves the GET of a hosted form (login, register or forgot-password) whose view
// with email prefilled newView makes: the email query parameter, else login_hint.
func (u *UI) formPage(page string, newView func(email string) formView) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get(RequestParam)
		pr, err := u.pageContext(r, token)
		if err != nil {
			u.Error(w, r, err)
			return
		}
		email := r.URL.Query().Get("email")
		if email == "" && pr != nil {
			email = pr.LoginHint
		}
		u.renderForm(w, r, http.StatusOK, page, token, pr, newView(email))
	}
}

// formLink is the path of the hosted form page (its path under the mount path) prefilled
// with email, within the paused request token names when there is one.
func (u *UI) formLink(page, token, email string) string {
	q := url.Values{"email": {email}}
	if token != "" {
		q.Set(RequestParam, token)
	}
	return u.mount + page + "?" + q.Encode()
}

// submittedForm is a hosted form POST that passed the CSRF check, with the paused request it
// belongs to (nil outside an OAuth flow).
type submittedForm struct {
	token  string
	paused *PausedRequest
}

// checkForm loads the paused request of a form POST and verifies its CSRF token; on failure
// it has answered and returns false.
func (u *UI) checkForm(w http.ResponseWriter, r *http.Request) (submittedForm, bool) {
	f := submittedForm{token: r.PostFormValue(RequestParam)}
	var err error
	if f.paused, err = u.pageContext(r, f.token); err != nil {
		u.Error(w, r, err)
		return f, false
	}
	if !u.csrf.verify(r) {
		u.Error(w, r, errFormExpired)
		return f, false
	}
	return f, true
}

// loginSubmit checks the password, asks for the PIN when the gate is on for the user, then
// starts the public session and resumes the paused request (303, so the browser follows
// with a GET).
func (u *UI) loginSubmit(w http.ResponseWriter, r *http.Request) {
	f, ok := u.checkForm(w, r)
	if !ok {
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	err := u.auth.CheckRate(r, limitLogin)
	var user *publicauth.User
	if err == nil {
		user, err = u.auth.Authenticate(r.Context(), email, r.PostFormValue("password"))
	}
	if err != nil {
		u.formFailed(w, r, "login", f, &LoginView{Email: email}, err)
		return
	}
	u.PassFirstFactor(w, r, user, publicauth.MethodPassword, u.host.Destination(f.token), f.token)
}

// registerSubmit registers as the JSON API does. A new account (which gets a verification
// mail) and a password added to the signed-in social-only account of the email are then
// logged in as loginSubmit does; a password that a mailed link must confirm first gets a
// page saying to check the mail.
func (u *UI) registerSubmit(w http.ResponseWriter, r *http.Request) {
	f, ok := u.checkForm(w, r)
	if !ok {
		return
	}
	email, name := strings.TrimSpace(r.PostFormValue("email")), strings.TrimSpace(r.PostFormValue("name"))
	err := u.auth.CheckRate(r, limitRegister)
	var signedIn *publicauth.User
	if err == nil {
		signedIn, err = u.auth.SignedIn(r)
	}
	var reg publicauth.Registration
	if err == nil {
		reg, err = u.auth.Register(r.Context(), email, r.PostFormValue("password"), name, signedIn)
	}
	if err != nil {
		v := &RegisterView{Email: email, Name: name}
		if errors.Is(err, publicauth.ErrEmailTaken) {
			// A way forward for someone who forgot they had an account.
			v.SignInURL = u.formLink("/login", f.token, email)
			if u.auth.Abilities().PasswordReset {
				v.ResetURL = u.formLink("/forgot-password", f.token, email)
			}
		}
		u.formFailed(w, r, "register", f, v, err)
		return
	}
	if reg.AccountLinking && !reg.PasswordAdded {
		u.notice(w, r, http.StatusOK, "Check your email",
			"An account with "+reg.User.Email+" already exists and signs in with a social login. We sent "+
				"that address a link to confirm adding your password to it. It works once, for "+
				publicauth.MailData{ExpiresIn: u.cfg.PasswordResetLifespan}.ExpiresInWords()+".", "", "")
		return
	}
	u.PassFirstFactor(w, r, reg.User, publicauth.MethodPassword, u.host.Destination(f.token), f.token)
}

func (u *UI) consentPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get(RequestParam)
	pr, err := u.pageContext(r, token)
	if err == nil && (pr == nil || pr.UserCode != "") {
		// A device approval is decided on its own page, which shows the code.
		err = publicauth.ErrRequestExpired
	}
	if err != nil {
		u.Error(w, r, err)
		return
	}
	_, user, err := u.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		// The session ended (or never was): log in first, then come back here.
		http.Redirect(w, r, u.LoginPath(token), http.StatusSeeOther)
		return
	}
	u.renderForm(w, r, http.StatusOK, "consent", token, pr, &ConsentView{UserEmail: user.Email, Scopes: u.describeScopes(pr.Scopes),
		ClientIdentity: pr.identity()})
}

// consentSubmit passes the user's decision to the provider: allow finishes the
// authorization, deny sends access_denied to the client.
func (u *UI) consentSubmit(w http.ResponseWriter, r *http.Request) {
	token := r.PostFormValue(RequestParam)
	if !u.csrf.verify(r) {
		u.Error(w, r, errFormExpired)
		return
	}
	u.host.DecideConsent(w, r, token, r.PostFormValue("decision") == "allow")
}

// renderForm renders a hosted form page with its CSRF token and request context.
func (u *UI) renderForm(w http.ResponseWriter, r *http.Request, status int, page, token string, pr *PausedRequest, v formView) {
	csrf, err := u.csrf.token(w, r)
	if err != nil {
		u.Error(w, r, err)
		return
	}
	f := v.form()
	f.CSRF, f.Request = csrf, token
	if pr != nil {
		f.ClientName = pr.ClientName
	}
	if login, ok := v.(*LoginView); ok {
		u.addSocialLogins(r, token, login)
		abilities := u.auth.Abilities()
		login.CanRegister, login.CanResetPassword = abilities.Registration, abilities.PasswordReset
	}
	u.pages.render(w, r, status, page, v)
}

// addSocialLogins adds to the login page a button per enabled social provider and, after a
// failed social login, its message.
func (u *UI) addSocialLogins(r *http.Request, token string, v *LoginView) {
	v.Social = u.social.Buttons(token)
	if v.Error == "" {
		v.Error = socialLoginMessages[r.URL.Query().Get("social_error")]
	}
}

// describeScopes turns scope names into what the consent page says: the built-in scopes'
// sentences, then the descriptions the configuration gives its custom scopes.
func (u *UI) describeScopes(scopes []string) []string {
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		switch s {
		case "openid":
			out = append(out, "Know who you are")
		case "profile":
			out = append(out, "See your name and profile")
		case "email":
			out = append(out, "See your email address")
		case "phone":
			out = append(out, "See your phone number")
		case "address":
			out = append(out, "See your postal address")
		case "offline_access":
			out = append(out, "Stay signed in when you are away")
		case "manage_permissions":
			out = append(out, "Manage your access permissions")
		default:
			if d, ok := u.cfg.ScopeDescriptions[s]; ok {
				out = append(out, d)
			} else {
				out = append(out, "Use scope "+s)
			}
		}
	}
	return out
}
