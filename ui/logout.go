package ui

import (
	"net/http"
)

// LogoutPath is the hosted logout confirmation form's target, under the mount path.
const LogoutPath = "/logout"

// LogoutConfirmation asks the user to confirm signing out, or, without a session
// (v.UserEmail ""), to confirm going on to v.ReturnHost. v carries what the page shows and
// the logout request's parameters (Fields), which the form carries to its POST; the CSRF
// token and the form's action are set here.
func (u *UI) LogoutConfirmation(w http.ResponseWriter, r *http.Request, v LogoutView) {
	csrf, err := u.csrf.token(w, r)
	if err != nil {
		u.Error(w, r, err)
		return
	}
	v.CSRF, v.Action = csrf, u.mount+LogoutPath
	if v.UserEmail == "" && v.Title == "" {
		v.Title = "Continue?"
	}
	u.pages.render(w, r, http.StatusOK, "logout", &v)
}

// LoggedOut shows the page of a logout that has no registered place to return to;
// signedOut says whether it ended a session, and the page says so truthfully.
func (u *UI) LoggedOut(w http.ResponseWriter, r *http.Request, signedOut bool) {
	v := &LoggedOutView{SignedOut: signedOut}
	if !signedOut {
		v.Title = "Not signed in"
	}
	u.pages.render(w, r, http.StatusOK, "logged_out", v)
}

// logoutConfirm is the confirmation page's CSRF-protected POST.
func (u *UI) logoutConfirm(w http.ResponseWriter, r *http.Request) {
	if !u.csrf.verify(r) {
		u.Error(w, r, errFormExpired)
		return
	}
	u.host.Logout(w, r, r.PostForm)
}
