package publicauth

import (
	"errors"
	"net/http"
)

// handlers serves the JSON endpoints under /api/public/*: each decodes, calls the Service and
// encodes. Routes registers them.
type handlers struct {
	s *Service
}

type registerRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Name     string `json:"name"`
}

type loginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// register serves POST /api/public/register: 201 with the registration response; 400 for a
// refused field, 409 when the email is taken, 415 for a body that is not JSON.
func (h *handlers) register(w http.ResponseWriter, r *http.Request) {
	var req registerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	u, err := h.s.Register(r.Context(), req.Email, req.Password, req.Name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, registerResponse{
		Success:          true,
		Message:          "account created",
		IsAccountLinking: false,
		LoginMethods:     u.LoginMethods(),
		User: registeredUserView{
			ID:        u.ID,
			Email:     u.Email,
			Name:      u.Name,
			Role:      u.Role,
			CreatedAt: formatTime(u.CreatedAt),
		},
	})
}

// login serves POST /api/public/login: 200 {success, user, loginMethods} and a new
// `public-session` cookie, replacing the session the request carried, if any. A wrong email
// or password is 401 with one body for both; a disabled account 403; a missing field 400.
func (h *handlers) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if err := decodeJSON(w, r, &req); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	switch {
	case req.Email == "":
		h.s.writeError(w, r, &InputError{Field: "email", Reason: "is required"})
		return
	case req.Password == "":
		h.s.writeError(w, r, &InputError{Field: "password", Reason: "is required"})
		return
	}
	u, err := h.s.Authenticate(r.Context(), req.Email, req.Password)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.completeLogin(w, r, u, MethodPassword)
}

// completeLogin ends an authentication by method: it replaces the request's public session
// with a new one for u and answers with the login response.
func (h *handlers) completeLogin(w http.ResponseWriter, r *http.Request, u *User, method string) {
	if _, err := h.s.ReplaceSession(r.Context(), w, r, u, SessionPublic, method); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	view := newUserView(u)
	writeJSON(w, http.StatusOK, loginResponse{Success: true, User: view, LoginMethods: view.LoginMethods})
}

// session serves GET /api/public/session: 200 {isValid: true, user} for a valid
// `public-session` cookie, else 401 {isValid: false, error, message}.
func (h *handlers) session(w http.ResponseWriter, r *http.Request) {
	_, u, err := h.s.CurrentSession(r, SessionPublic)
	if errors.Is(err, ErrSessionNotFound) {
		status, message := Describe(err)
		writeJSON(w, status, invalidSessionResponse{IsValid: false, Error: http.StatusText(status), Message: message})
		return
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionResponse{IsValid: true, User: newUserView(u)})
}

// logout serves POST /api/public/logout: it revokes the public session server-side, clears
// the cookie and answers 200 {success: true}, with or without a session.
func (h *handlers) logout(w http.ResponseWriter, r *http.Request) {
	if err := h.s.EndSession(r.Context(), w, r, SessionPublic); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, logoutResponse{Success: true})
}
