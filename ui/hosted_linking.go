package ui

import (
	"net/http"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// confirmPasswordPage shows the form of a password-linking link: the owner of a social-only
// account types the password a registration with their address chose.
func (u *UI) confirmPasswordPage(w http.ResponseWriter, r *http.Request) {
	u.linkFormPage(w, r, "confirm_password")
}

// confirmPasswordSubmit adds the password once it matches the one registered; a wrong one
// shows the form again and leaves the link usable.
func (u *UI) confirmPasswordSubmit(w http.ResponseWriter, r *http.Request) {
	u.linkFormSubmit(w, r, linkForm{
		page: "confirm_password", limit: publicauth.EndpointConfirmPassword, use: u.auth.ConfirmPassword,
		expired:   errConfirmLinkExpired,
		doneTitle: "Password added",
		done: func(u *publicauth.User) string {
			return "Your password was added: " + u.Email + " can now also sign in with it."
		},
	})
}
