package publicauth

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
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

// register serves POST /api/public/register with the registration response: 201 for a new
// account (and a verification mail); for the email of a social-only account
// (isAccountLinking) 200 once the password is added (the request carries that account's
// `public-session`, which adding the password ends: the caller logs in again) or 202 when
// a mailed link must confirm it first; the 202 shows only the
// email and name the caller sent, no id, role or login methods of the account. 400 for a refused
// field, 409 when the email is taken, 415 for a body that is not JSON, 429 over the per-IP
// limit or the per-account mail limit. 404 when the Accounts store cannot register
// (no AccountRegistrar), 403 when Config.Registration is closed, or with the hook's
// message when the hook of RegistrationHook refused the account.
func (h *handlers) register(w http.ResponseWriter, r *http.Request) {
	if err := h.s.RegistrationOffered(); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if err := h.s.CheckRate(r, EndpointRegister); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	var req registerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	signedIn, err := h.s.SignedIn(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	reg, err := h.s.Register(r.Context(), req.Email, req.Password, req.Name, signedIn)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	switch {
	case reg.PasswordAdded:
		httpjson.Write(w, http.StatusOK, newRegisterResponse(reg.User, passwordAddedMessage, true))
	case reg.AccountLinking:
		// The caller has not proved the address yet: show nothing of the account beyond
		// what they sent (its id, role and other login methods are the owner's business).
		httpjson.Write(w, http.StatusAccepted, registerResponse{
			Success: true, Message: confirmPasswordMessage, IsAccountLinking: true, LoginMethods: []string{},
			User: registeredUserView{Email: strings.TrimSpace(req.Email), Name: strings.TrimSpace(req.Name)},
		})
	default:
		httpjson.Write(w, http.StatusCreated, newRegisterResponse(reg.User, "account created", false))
	}
}

// newRegisterResponse is the registration response for u.
func newRegisterResponse(u *User, message string, accountLinking bool) registerResponse {
	return registerResponse{
		Success:          true,
		Message:          message,
		IsAccountLinking: accountLinking,
		LoginMethods:     u.LoginMethods(),
		User: registeredUserView{
			ID:        u.ID,
			Email:     u.Email,
			Name:      u.Name,
			Role:      u.Role,
			CreatedAt: formatTime(u.CreatedAt),
		},
	}
}

// confirmPassword serves POST /api/public/confirm-password {token, password}: the owner of
// a social-only account confirms, with the token of the mailed link and the password typed
// again, the password a registration asked to add. 200 with the registration response
// (isAccountLinking true, loginMethods with the password); 401 when the password is not
// the one registered (the link stays usable); 400 for a bad, used or expired link.
func (h *handlers) confirmPassword(w http.ResponseWriter, r *http.Request) {
	var req resetPasswordRequest
	if !h.decodeLimited(w, r, EndpointConfirmPassword, &req) {
		return
	}
	if err := required("token", req.Token); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	u, err := h.s.ConfirmPassword(r.Context(), req.Token, req.Password)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, newRegisterResponse(u, passwordAddedMessage, true))
}

// login serves POST /api/public/login: 200 {success, user, loginMethods} and a new
// `public-session` cookie, replacing the session the request carried, if any; for a user
// behind the PIN gate 200 {success, pinRequired: true, challengeId} and no cookie. A wrong
// email or password is 401 with one body for both; a disabled account 403; a missing field
// 400; too many attempts (per IP, or failed logins of the account) 429.
func (h *handlers) login(w http.ResponseWriter, r *http.Request) {
	u, ok := h.authenticate(w, r, EndpointLogin)
	if !ok {
		return
	}
	if h.s.PINRequired(u) {
		h.startPIN(w, r, u, SessionPublic)
		return
	}
	h.completeLogin(w, r, u, SessionPublic, MethodPassword)
}

// authenticate checks the per-IP limit of endpoint, decodes {email, password} and checks
// them. On failure it has answered and returns false.
func (h *handlers) authenticate(w http.ResponseWriter, r *http.Request, endpoint string) (*User, bool) {
	if err := h.s.CheckRate(r, endpoint); err != nil {
		h.s.writeError(w, r, err)
		return nil, false
	}
	var req loginRequest
	if err := decodeJSON(w, r, &req); err != nil {
		h.s.writeError(w, r, err)
		return nil, false
	}
	if err := required("email", req.Email, "password", req.Password); err != nil {
		h.s.writeError(w, r, err)
		return nil, false
	}
	u, err := h.s.Authenticate(r.Context(), req.Email, req.Password)
	if err != nil {
		h.s.writeError(w, r, err)
		return nil, false
	}
	return u, true
}

// required returns an *InputError for the first of the (field, value) pairs whose value is
// empty.
func required(fieldValues ...string) error {
	for i := 0; i+1 < len(fieldValues); i += 2 {
		if fieldValues[i+1] == "" {
			return &InputError{Field: fieldValues[i], Reason: "is required"}
		}
	}
	return nil
}

// startPIN mails a PIN for a password login of u into a session of kind and answers
// {success, pinRequired: true, challengeId} without a cookie.
func (h *handlers) startPIN(w http.ResponseWriter, r *http.Request, u *User, kind string) {
	c, err := h.s.StartPINChallenge(r.Context(), u, kind, MethodPassword, Destination{})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, pinRequiredResponse{Success: true, PINRequired: true, ChallengeID: c.ID})
}

// completeLogin ends an authentication by method: it replaces the request's session of kind
// with a new one for u and answers with the login response ({success, user} for an admin
// session, {success, user, loginMethods} for a public one).
func (h *handlers) completeLogin(w http.ResponseWriter, r *http.Request, u *User, kind, method string) {
	if _, err := h.s.ReplaceSession(r.Context(), w, r, u, kind, method); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	view := newUserView(u)
	if kind == SessionAdmin {
		httpjson.Write(w, http.StatusOK, adminLoginResponse{Success: true, User: view})
		return
	}
	httpjson.Write(w, http.StatusOK, loginResponse{Success: true, User: view, LoginMethods: view.LoginMethods})
}

type verifyPINRequest struct {
	ChallengeID string `json:"challengeId"`
	PIN         string `json:"pin"`
}

// verifyPIN serves POST /api/public/verify-pin: on the right PIN 200 {success, user,
// loginMethods} and the session cookie of the challenge's kind (`public-session` or
// `admin-session`); 400 for a missing field; 401 for a wrong PIN, and for a dead challenge
// (log in again); 429 over the per-IP limit.
func (h *handlers) verifyPIN(w http.ResponseWriter, r *http.Request) {
	if err := h.s.CheckRate(r, EndpointVerifyPIN); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	var req verifyPINRequest
	if err := decodeJSON(w, r, &req); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if err := required("challengeId", req.ChallengeID, "pin", req.PIN); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	u, c, err := h.s.VerifyPIN(r.Context(), req.ChallengeID, req.PIN)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if _, err := h.s.ReplaceSession(r.Context(), w, r, u, c.Kind, c.Method); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	view := newUserView(u)
	httpjson.Write(w, http.StatusOK, loginResponse{Success: true, User: view, LoginMethods: view.LoginMethods})
}

type magicLinkRequest struct {
	Email       string `json:"email"`
	RedirectURI string `json:"redirect_uri"`
}

type emailRequest struct {
	Email string `json:"email"`
}

// resetPasswordRequest is the body of reset-password and confirm-password: a mailed link's
// token and a password.
type resetPasswordRequest struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}

// requestMagicLink serves POST /api/public/request-magic-link {email, redirect_uri}: 200 with
// the same body whatever the account; 400 for a missing or foreign redirect_uri (checked
// before any account lookup) or a malformed email; 429 over the per-IP limit.
func (h *handlers) requestMagicLink(w http.ResponseWriter, r *http.Request) {
	var req magicLinkRequest
	if !h.decodeLimited(w, r, EndpointRequestMagicLink, &req) {
		return
	}
	err := h.s.RequestMagicLink(r.Context(), MagicLinkRequest{Email: req.Email, RedirectURI: req.RedirectURI})
	h.answerMessage(w, r, err, magicLinkSentMessage)
}

// resendVerification serves POST /api/public/resend-verification {email}: 200 with the same
// body whatever the account; 400 for a malformed email; 429 over the per-IP limit; 404 when
// the Accounts store records no verification (no EmailVerifier).
func (h *handlers) resendVerification(w http.ResponseWriter, r *http.Request) {
	var req emailRequest
	if !h.decodeLimited(w, r, EndpointResendVerification, &req) {
		return
	}
	h.answerMessage(w, r, h.s.ResendVerification(r.Context(), req.Email), verificationSentMessage)
}

// requestPasswordReset serves POST /api/public/request-password-reset {email}: 200 with the
// same body whatever the account; 400 for a malformed email; 429 over the per-IP limit; 404
// when the Accounts store cannot set passwords (no PasswordSetter).
func (h *handlers) requestPasswordReset(w http.ResponseWriter, r *http.Request) {
	var req emailRequest
	if !h.decodeLimited(w, r, EndpointRequestPasswordReset, &req) {
		return
	}
	h.answerMessage(w, r, h.s.RequestPasswordReset(r.Context(), req.Email), resetSentMessage)
}

// resetPassword serves POST /api/public/reset-password {token, password}: 200 {success,
// message} once the password is set and every session of the user ended; 400 for a missing
// field, a refused password (the message says why) or a bad, used or expired token; 429 over
// the per-IP limit; 404 when the Accounts store cannot set passwords (no PasswordSetter).
func (h *handlers) resetPassword(w http.ResponseWriter, r *http.Request) {
	var req resetPasswordRequest
	if !h.decodeLimited(w, r, EndpointResetPassword, &req) {
		return
	}
	if err := required("token", req.Token); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	_, err := h.s.ResetPassword(r.Context(), req.Token, req.Password)
	h.answerMessage(w, r, err, passwordResetMessage)
}

// decodeLimited checks the per-IP limit of endpoint and decodes the JSON body into dst. On
// failure it has answered and returns false.
func (h *handlers) decodeLimited(w http.ResponseWriter, r *http.Request, endpoint string, dst any) bool {
	if err := h.s.CheckRate(r, endpoint); err != nil {
		h.s.writeError(w, r, err)
		return false
	}
	if err := decodeJSON(w, r, dst); err != nil {
		h.s.writeError(w, r, err)
		return false
	}
	return true
}

// answerMessage answers err, or 200 {success: true, message} when err is nil.
func (h *handlers) answerMessage(w http.ResponseWriter, r *http.Request, err error, message string) {
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, messageResponse{Success: true, Message: message})
}

// adminLogin serves POST /api/admin/login {email, password}: for a user whose role is admin
// 200 {success, user} and an `admin-session` cookie (SameSite=Strict), or, behind the PIN
// gate, the pinRequired answer with a challenge of kind admin. A wrong email or password is
// 401 as for the public login; the right password of a non-admin 403; 429 over the limits.
func (h *handlers) adminLogin(w http.ResponseWriter, r *http.Request) {
	u, ok := h.authenticate(w, r, EndpointAdminLogin)
	if !ok {
		return
	}
	if u.Role != RoleAdmin {
		h.s.writeError(w, r, ErrNotAdmin)
		return
	}
	if h.s.PINRequired(u) {
		h.startPIN(w, r, u, SessionAdmin)
		return
	}
	h.completeLogin(w, r, u, SessionAdmin, MethodPassword)
}

// adminLogout serves POST /api/admin/logout: it revokes the admin session server-side,
// clears the cookie and answers 200 {success: true}, with or without a session.
func (h *handlers) adminLogout(w http.ResponseWriter, r *http.Request) {
	if err := h.s.EndSession(r.Context(), w, r, SessionAdmin); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, logoutResponse{Success: true})
}

// ssoValidate serves GET /api/sso/validate: it reads `admin-session` first, then
// `public-session`, and answers 200 {isValid: true, sessionType, user} for the first valid
// one, else 401 {isValid: false}.
func (h *handlers) ssoValidate(w http.ResponseWriter, r *http.Request) {
	for _, kind := range []string{SessionAdmin, SessionPublic} {
		_, u, err := h.s.CurrentSession(r, kind)
		if errors.Is(err, ErrSessionNotFound) {
			continue
		}
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		httpjson.Write(w, http.StatusOK, ssoValidateResponse{IsValid: true, SessionType: kind, User: newUserView(u)})
		return
	}
	httpjson.Write(w, http.StatusUnauthorized, ssoInvalidResponse{IsValid: false})
}

// session serves GET /api/public/session: 200 {isValid: true, user} for a valid
// `public-session` cookie, else 401 {isValid: false, error, message}.
func (h *handlers) session(w http.ResponseWriter, r *http.Request) {
	_, u, err := h.s.CurrentSession(r, SessionPublic)
	if errors.Is(err, ErrSessionNotFound) {
		status, message := Describe(err)
		httpjson.Write(w, status, invalidSessionResponse{IsValid: false, Error: http.StatusText(status), Message: message})
		return
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, sessionResponse{IsValid: true, User: newUserView(u)})
}

// logout serves POST /api/public/logout: it revokes the public session server-side, clears
// the cookie and answers 200 {success: true}, with or without a session.
func (h *handlers) logout(w http.ResponseWriter, r *http.Request) {
	if err := h.s.EndSession(r.Context(), w, r, SessionPublic); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, logoutResponse{Success: true})
}
