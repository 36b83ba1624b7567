package ui

import (
	"net/http"
	"net/url"
)

// LogoutPath is the hosted logout confirmation form's target, under the mount path.
const LogoutPath = "/logout"

// LogoutConfirmation asks the signed-in user (userEmail) to confirm signing out; fields are
// the logout request's parameters, which the form carries to its POST.
func (u *UI) LogoutConfirmation(w http.ResponseWriter, r *http.Request, userEmail string, fields url.Values) {
	csrf, err := u.csrf.token(w, r)
	if err != nil {
		u.Error(w, r, err)
		return
	}
	u.pages.render(w, r, http.StatusOK, "logout", &LogoutView{CSRF: csrf, UserEmail: userEmail, Action: u.mount + LogoutPath, Fields: fields})
}

// LoggedOut shows the page of a logout that has no registered place to return to.
func (u *UI) LoggedOut(w http.ResponseWriter, r *http.Request) {
	u.pages.render(w, r, http.StatusOK, "logged_out", &LoggedOutView{})
}

// logoutConfirm is the confirmation page's CSRF-protected POST.
func (u *UI) logoutConfirm(w http.ResponseWriter, r *http.Request) {
	if !u.csrf.verify(r) {
		u.Error(w, r, errFormExpired)
		return
	}
	u.host.Logout(w, r, r.PostForm)
}
