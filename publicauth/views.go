package publicauth

import "time"

// Response bodies of the JSON API (SSO interface §2, DESIGN §4). A user is only ever shown
// through these views, never as a User, so no password hash can leak into a response.

// userView is the sanitized user of the login and session responses.
type userView struct {
	ID            string   `json:"id"`
	Email         string   `json:"email"`
	Name          string   `json:"name"`
	Role          string   `json:"role"`
	Status        string   `json:"status"`
	EmailVerified bool     `json:"emailVerified"`
	LoginMethods  []string `json:"loginMethods"`
}

func newUserView(u *User) userView {
	return userView{
		ID:            u.ID,
		Email:         u.Email,
		Name:          u.Name,
		Role:          u.Role,
		Status:        u.Status,
		EmailVerified: u.EmailVerified,
		LoginMethods:  u.LoginMethods(),
	}
}

// registeredUserView is the user of the registration response.
// ID, Role and CreatedAt are left out of a 202 account-linking answer.
type registeredUserView struct {
	ID        string `json:"id,omitempty"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	Role      string `json:"role,omitempty"`
	CreatedAt string `json:"createdAt,omitempty"`
}

// registerResponse is the registration response (POST /api/public/register).
type registerResponse struct {
	Success          bool               `json:"success"`
	Message          string             `json:"message"`
	IsAccountLinking bool               `json:"isAccountLinking"`
	LoginMethods     []string           `json:"loginMethods"`
	User             registeredUserView `json:"user"`
}

// loginResponse answers a login that set the session cookie (POST /api/public/login).
type loginResponse struct {
	Success      bool     `json:"success"`
	User         userView `json:"user"`
	LoginMethods []string `json:"loginMethods"`
}

// sessionResponse is the public session validation response (GET /api/public/session).
type sessionResponse struct {
	IsValid bool     `json:"isValid"`
	User    userView `json:"user"`
}

// invalidSessionResponse answers GET /api/public/session without a valid session: the
// application error shape plus isValid false.
type invalidSessionResponse struct {
	IsValid bool   `json:"isValid"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

// logoutResponse answers POST /api/public/logout.
type logoutResponse struct {
	Success bool `json:"success"`
}

// formatTime renders t as the interface's timestamps: RFC 3339 in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// pinRequiredResponse answers a login whose user must pass the PIN gate: no cookie yet.
type pinRequiredResponse struct {
	Success     bool   `json:"success"`
	PINRequired bool   `json:"pinRequired"`
	ChallengeID string `json:"challengeId"`
}

// messageResponse answers the mail-sending endpoints and the password reset: the same body
// whatever the account.
type messageResponse struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// adminLoginResponse answers POST /api/admin/login that set the `admin-session` cookie.
type adminLoginResponse struct {
	Success bool     `json:"success"`
	User    userView `json:"user"`
}

// ssoValidateResponse answers GET /api/sso/validate with a valid session.
type ssoValidateResponse struct {
	IsValid     bool     `json:"isValid"`
	SessionType string   `json:"sessionType"`
	User        userView `json:"user"`
}

// ssoInvalidResponse answers GET /api/sso/validate without a valid session.
type ssoInvalidResponse struct {
	IsValid bool `json:"isValid"`
}

// Messages of the endpoints that answer the same whatever the account.
const (
	magicLinkSentMessage    = "If a verified account exists for this email, a sign-in link has been sent."
	verificationSentMessage = "If an unverified account exists for this email, a verification link has been sent."
	resetSentMessage        = "If an account exists for this email, a password reset link has been sent."
	passwordResetMessage    = "Your password has been changed. Log in with the new password."
)

// Messages of a registration with the email of a social-only account.
const (
	passwordAddedMessage   = "password added to your account"
	confirmPasswordMessage = "check your email to confirm adding a password to your account"
)
