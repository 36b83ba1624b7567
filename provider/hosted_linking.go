package provider

import (
	"errors"
	"net/http"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// confirmPasswordPage shows the form of a password-linking link: the owner of a social-only
// account types the password a registration with their address chose.
func (p *Provider) confirmPasswordPage(w http.ResponseWriter, r *http.Request) {
	p.renderForm(w, r, http.StatusOK, "confirm_password", "", nil, map[string]any{"Token": r.URL.Query().Get("token")})
}

// confirmPasswordSubmit adds the password once it matches the one registered; a wrong one
// shows the form again and leaves the link usable.
func (p *Provider) confirmPasswordSubmit(w http.ResponseWriter, r *http.Request) {
	f, ok := p.checkForm(w, r)
	if !ok {
		return
	}
	token := r.PostFormValue("token")
	err := p.auth.CheckRate(r, publicauth.EndpointConfirmPassword)
	var user *publicauth.User
	if err == nil {
		user, err = p.auth.ConfirmPassword(r.Context(), token, r.PostFormValue("password"))
	}
	if errors.Is(err, publicauth.ErrInvalidToken) {
		p.pages.error(w, r, http.StatusBadRequest, "Link expired",
			"This link is invalid, was already used or has expired. Register again to get a new one.")
		return
	}
	if err != nil {
		p.formFailed(w, r, "confirm_password", f, map[string]any{"Token": token}, err)
		return
	}
	p.notice(w, r, http.StatusOK, "Password added",
		"Your password was added: "+user.Email+" can now also sign in with it.", "/login", "Sign in")
}
