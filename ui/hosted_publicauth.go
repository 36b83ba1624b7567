package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// The hosted pages of public authentication beyond the password: magic links, the PIN
// gate, password reset and email verification. Like the login page they work without
// JavaScript, carry CSRF tokens, count against the same per-IP limits as the JSON API, and
// inside an OAuth flow resume the paused authorization request once the user is in.

// Endpoint names the per-IP rate limits count under: the JSON API's own for the actions it
// shares with these pages, so a client gets one budget per action whichever surface it
// uses, and two for the links that only the provider serves.
const (
	limitLogin         = publicauth.EndpointLogin
	limitRegister      = publicauth.EndpointRegister
	limitMagicLink     = publicauth.EndpointRequestMagicLink
	limitVerifyPIN     = publicauth.EndpointVerifyPIN
	limitPasswordReset = publicauth.EndpointRequestPasswordReset
	limitResetPassword = publicauth.EndpointResetPassword
	limitMagicLogin    = "magic-login"
	limitVerifyEmail   = "verify-email"
)

// signedInPath is where a login begun outside any OAuth flow ends, under the mount path.
const signedInPath = "/signed-in"

// LoginPath is the path of the login page, under the issuer's path, inside the paused
// request token names when there is one.
func (u *UI) LoginPath(token string) string {
	if token == "" {
		return u.mount + "/login"
	}
	return u.mount + "/login?" + url.Values{RequestParam: {token}}.Encode()
}

// notice renders the page that tells the user what happened and where to go next.
func (u *UI) notice(w http.ResponseWriter, r *http.Request, status int, title, message, linkURL, linkText string) {
	u.pages.render(w, r, status, "notice", &NoticeView{Page: Page{Title: title}, Message: message, LinkURL: linkURL, LinkText: linkText})
}

// finishLogin starts the session of kind for a user who passed every factor, then goes to
// dest: the paused authorization request it resumes, another internal path, a registered
// redirect URI, or the signed-in page.
func (u *UI) finishLogin(w http.ResponseWriter, r *http.Request, user *publicauth.User, kind, method string, dest publicauth.Destination) {
	ctx := r.Context()
	paused := kind == publicauth.SessionPublic && dest.PausedRequest != ""
	if paused {
		if err := u.host.CheckPausedRef(ctx, dest.PausedRequest); err != nil {
			u.Error(w, r, err)
			return
		}
	}
	session, err := u.auth.ReplaceSession(ctx, w, r, user, kind, method)
	if err != nil {
		u.Error(w, r, err)
		return
	}
	if paused {
		// The login re-keys the request under a new token, which only this browser gets: the
		// login may have come from a stored reference (a mailed link, a PIN challenge), which
		// cannot give the old token back, and a token seen before the login no longer drives
		// the flow after it.
		resume, err := u.host.ResumeLogin(ctx, dest.PausedRequest, user.ID, session.AuthTime)
		if err != nil {
			u.Error(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, resume, http.StatusSeeOther)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case dest.Resume != "":
		http.Redirect(w, r, dest.Resume, http.StatusSeeOther)
	case dest.RedirectURI != "":
		http.Redirect(w, r, dest.RedirectURI, http.StatusFound)
	default:
		u.pages.render(w, r, http.StatusOK, "signed_in", &SignedInView{UserEmail: user.Email})
	}
}

// PassFirstFactor continues a login whose first factor (password, magic link or upstream
// login) passed: to the PIN page when the PIN gate is on for the user, else straight in.
// token is the paused request's token when this browser holds it ("" otherwise): the PIN
// page's way back to the login page stays within the flow.
func (u *UI) PassFirstFactor(w http.ResponseWriter, r *http.Request, user *publicauth.User, method string, dest publicauth.Destination, token string) {
	if !u.auth.PINRequired(user) {
		u.finishLogin(w, r, user, publicauth.SessionPublic, method, dest)
		return
	}
	challenge, err := u.auth.StartPINChallenge(r.Context(), user, publicauth.SessionPublic, method, dest)
	if err != nil {
		u.Error(w, r, err)
		return
	}
	u.renderPIN(w, r, http.StatusOK, challenge.ID, token, user.Email, "")
}

// renderPIN renders the PIN page of challenge. token, the paused request the login
// resumes, only lets a user whose challenge ended sign in again within the same flow.
func (u *UI) renderPIN(w http.ResponseWriter, r *http.Request, status int, challenge, token, email, problem string) {
	u.renderForm(w, r, status, "pin", token, nil, &PINView{Form: Form{Error: problem}, Challenge: challenge, Email: email})
}

// pinSubmit checks the PIN of a challenge and, when right, finishes the login it gates.
func (u *UI) pinSubmit(w http.ResponseWriter, r *http.Request) {
	if !u.csrf.verify(r) {
		u.Error(w, r, errFormExpired)
		return
	}
	if err := u.auth.CheckRate(r, limitVerifyPIN); err != nil {
		u.Error(w, r, err)
		return
	}
	challenge, token := r.PostFormValue("challenge"), r.PostFormValue(RequestParam)
	user, ch, err := u.auth.VerifyPIN(r.Context(), challenge, strings.TrimSpace(r.PostFormValue("pin")))
	if err != nil {
		p := describe(err)
		switch {
		case errors.Is(err, publicauth.ErrPINMismatch):
			u.renderPIN(w, r, p.status, challenge, token, "", p.text)
		case errors.Is(err, publicauth.ErrChallengeInvalid):
			// Not an error to report but a step: a new login, within the same flow.
			u.notice(w, r, p.status, p.title, p.text, u.LoginPath(token), "Sign in again")
		default:
			u.Error(w, r, err)
		}
		return
	}
	u.finishLogin(w, r, user, ch.Kind, ch.Method, ch.Destination)
}

// magicLinkSubmit mails a sign-in link for the login page's second form. The answer is
// the same whether or not the account exists.
func (u *UI) magicLinkSubmit(w http.ResponseWriter, r *http.Request) {
	u.mailLinkSubmit(w, r, "login", loginView, limitMagicLink,
		func(f submittedForm, email string) error {
			dest := u.host.Destination(f.token)
			if dest.PausedRequest == "" {
				dest.Resume = u.mount + signedInPath
			}
			return u.auth.RequestMagicLink(r.Context(), publicauth.MagicLinkRequest{
				Email: email, Resume: dest.Resume, PausedRequest: dest.PausedRequest,
			})
		},
		func(email string) string {
			return "If a verified account exists for " + email + ", we sent it a sign-in link. It works once, for " +
				publicauth.MailData{ExpiresIn: u.cfg.MagicLinkLifespan}.ExpiresInWords() + "."
		})
}

// mailLinkSubmit handles a form of page (whose view newView makes) that mails a one-time link to the email it holds:
// it checks the form and the rate limit of endpoint, send mails the link, and the answer is
// a "Check your email" notice with noticeText(email). Every address, registered or not,
// gets that same answer, so it tells nothing about which addresses have accounts.
func (u *UI) mailLinkSubmit(w http.ResponseWriter, r *http.Request, page string, newView func(email string) formView, endpoint string,
	send func(f submittedForm, email string) error, noticeText func(email string) string) {
	f, ok := u.checkForm(w, r)
	if !ok {
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	err := u.auth.CheckRate(r, endpoint)
	if err == nil {
		err = send(f, email)
	}
	if err != nil {
		u.formFailed(w, r, page, f, newView(email), err)
		return
	}
	u.notice(w, r, http.StatusOK, "Check your email", noticeText(email), "", "")
}

// magicLoginPage is what the link of a magic-link mail opens (GET
// /api/public/magic-login?token=): a page with one button, spending nothing. A GET is made
// by mail scanners before the user and by a link an attacker mailed to a victim; only the
// deliberate, CSRF-checked POST of the button logs in. A bad, used or expired link says
// so at once.
func (u *UI) magicLoginPage(w http.ResponseWriter, r *http.Request) {
	if err := u.auth.CheckRate(r, limitMagicLogin); err != nil {
		u.Error(w, r, err)
		return
	}
	token := r.URL.Query().Get("token")
	if err := u.auth.CheckMagicLink(r.Context(), token); err != nil {
		u.magicLinkFailed(w, r, err)
		return
	}
	u.renderForm(w, r, http.StatusOK, "magic_login", "", nil, &LinkFormView{Token: token})
}

// magicLogin consumes the link behind the magic-login page's button (POST
// /api/public/magic-login) and logs in: the PIN page when the gate is on for the user,
// else the session and the link's destination.
func (u *UI) magicLogin(w http.ResponseWriter, r *http.Request) {
	if _, ok := u.checkForm(w, r); !ok {
		return
	}
	if err := u.auth.CheckRate(r, limitMagicLogin); err != nil {
		u.Error(w, r, err)
		return
	}
	user, dest, err := u.auth.ConsumeMagicLink(r.Context(), r.PostFormValue("token"))
	if err != nil {
		u.magicLinkFailed(w, r, err)
		return
	}
	u.PassFirstFactor(w, r, user, publicauth.MethodMagicLink, dest, "")
}

// magicLinkFailed answers a magic link that cannot log in; never with a redirect.
func (u *UI) magicLinkFailed(w http.ResponseWriter, r *http.Request, err error) {
	u.Error(w, r, linkError(err, errMagicLinkExpired))
}

// linkError is err of a mailed link, with publicauth.ErrInvalidToken replaced by expired,
// the error whose page text names the kind of link.
func linkError(err, expired error) error {
	if errors.Is(err, publicauth.ErrInvalidToken) {
		return expired
	}
	return err
}

// forgotPasswordSubmit mails a password-reset link; the same answer whatever the account.
func (u *UI) forgotPasswordSubmit(w http.ResponseWriter, r *http.Request) {
	u.mailLinkSubmit(w, r, "forgot_password", forgotPasswordView, limitPasswordReset,
		func(_ submittedForm, email string) error { return u.auth.RequestPasswordReset(r.Context(), email) },
		func(email string) string {
			return "If an account exists for " + email + ", we sent it a link to choose a new password. It works once, for " +
				publicauth.MailData{ExpiresIn: u.cfg.PasswordResetLifespan}.ExpiresInWords() + "."
		})
}

// resetPasswordPage shows the form of a password-reset link.
func (u *UI) resetPasswordPage(w http.ResponseWriter, r *http.Request) {
	u.linkFormPage(w, r, "reset_password")
}

// linkFormPage shows the form of a mailed link (a linkForm); without a token there is
// nothing to fill in, so it says so at once rather than on submit.
func (u *UI) linkFormPage(w http.ResponseWriter, r *http.Request, page string) {
	token := r.URL.Query().Get("token")
	if token == "" {
		u.Error(w, r, errLinkIncomplete)
		return
	}
	u.renderForm(w, r, http.StatusOK, page, "", nil, &LinkFormView{Token: token})
}

// resetPasswordSubmit sets the new password; every session of the user ends.
func (u *UI) resetPasswordSubmit(w http.ResponseWriter, r *http.Request) {
	u.linkFormSubmit(w, r, linkForm{
		page: "reset_password", limit: limitResetPassword, use: u.auth.ResetPassword,
		expired:   errResetLinkExpired,
		doneTitle: "Password changed",
		done: func(*publicauth.User) string {
			return "Your password was changed and every session of your account was signed out. Sign in with the new password."
		},
	})
}

// linkForm is a hosted form opened from a mailed link: the link's token and a password,
// given to use.
type linkForm struct {
	page, limit string
	use         func(ctx context.Context, token, password string) (*publicauth.User, error)
	// expired answers a bad, used or expired link (see linkError).
	expired error
	// doneTitle and done are the notice shown once use succeeded.
	doneTitle string
	done      func(*publicauth.User) string
}

// linkFormSubmit handles the POST of a linkForm: a refused password shows the form again
// (the link stays usable), a dead link the error page, success the notice.
func (u *UI) linkFormSubmit(w http.ResponseWriter, r *http.Request, lf linkForm) {
	f, ok := u.checkForm(w, r)
	if !ok {
		return
	}
	token := r.PostFormValue("token")
	err := u.auth.CheckRate(r, lf.limit)
	var user *publicauth.User
	if err == nil {
		user, err = lf.use(r.Context(), token, r.PostFormValue("password"))
	}
	if errors.Is(err, publicauth.ErrInvalidToken) {
		u.Error(w, r, lf.expired)
		return
	}
	if err != nil {
		u.formFailed(w, r, lf.page, f, &LinkFormView{Token: token}, err)
		return
	}
	u.notice(w, r, http.StatusOK, lf.doneTitle, lf.done(user), u.LoginPath(""), "Sign in")
}

// verifyEmailPage shows the form of a verification link (GET /api/public/verify-email):
// opening the link verifies nothing, so a mail scanner spends nothing.
func (u *UI) verifyEmailPage(w http.ResponseWriter, r *http.Request) {
	u.linkFormPage(w, r, "verify_email")
}

// verifyEmailSubmit verifies the address once the account's password is typed with the link
// (publicauth.Service.VerifyEmail says why); a wrong one shows the form again and leaves the
// link usable.
func (u *UI) verifyEmailSubmit(w http.ResponseWriter, r *http.Request) {
	u.linkFormSubmit(w, r, linkForm{
		page: "verify_email", limit: limitVerifyEmail, use: u.auth.VerifyEmail,
		expired:   errVerifyLinkExpired,
		doneTitle: "Email verified",
		done: func(user *publicauth.User) string {
			return "Thank you: " + user.Email + " is verified."
		},
	})
}

// signedIn shows who is signed in, for logins that began outside any OAuth flow.
func (u *UI) signedIn(w http.ResponseWriter, r *http.Request) {
	_, user, err := u.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		http.Redirect(w, r, u.LoginPath(""), http.StatusSeeOther)
		return
	}
	u.pages.render(w, r, http.StatusOK, "signed_in", &SignedInView{UserEmail: user.Email})
}
