package ui

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/internal/mountpath"
	"github.com/gatehouse-id/gatehouse/internal/sameorigin"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/social"
)

// RequestParam names the query parameter (and form field) that carries a paused
// authorization request's token between the authorization endpoint and the hosted pages.
const RequestParam = "request"

// Host is what the hosted pages need from the OpenID provider they serve; package provider
// implements it.
type Host interface {
	// PausedRequest describes the authorization request token names, paused for a page, or
	// returns publicauth.ErrRequestExpired when it names none (unknown, completed or
	// expired), or a store failure.
	PausedRequest(ctx context.Context, token string) (PausedRequest, error)
	// Destination is the login destination that resumes the paused request token names,
	// kept by reference; the zero Destination (the signed-in page) for "".
	Destination(token string) publicauth.Destination
	// CheckPausedRef returns nil when ref (a Destination's PausedRequest) names a paused
	// request still waiting, publicauth.ErrRequestExpired when it does not.
	CheckPausedRef(ctx context.Context, ref string) error
	// ResumeLogin binds the login of userID at authTime to the paused request ref (so
	// prompt=login and max_age see a fresh authentication) and returns the path that
	// continues it, under a new token only this browser gets.
	ResumeLogin(ctx context.Context, ref, userID string, authTime time.Time) (string, error)
	// DecideConsent records the signed-in user's decision on the paused request token names
	// and answers w: the authorization response, or access_denied to the client.
	DecideConsent(w http.ResponseWriter, r *http.Request, token string, allow bool)
	// StartDeviceApproval pauses the device authorization request whose user code the
	// user typed (in any case, with or without its dash) for the device pages and returns
	// the token naming it; ErrDeviceCodeInvalid when no request waiting for a decision has
	// that code.
	StartDeviceApproval(ctx context.Context, userCode string) (token string, err error)
	// DecideDevice records the decision of the user signed in on r on the paused device
	// request token names: publicauth.ErrSessionNotFound when no one is signed in,
	// publicauth.ErrRequestExpired when the request is gone or was decided.
	DecideDevice(r *http.Request, token string, allow bool) error
	// Logout ends the browser's session for a confirmed RP-Initiated Logout request (the
	// fields the confirmation page carried) and answers w.
	Logout(w http.ResponseWriter, r *http.Request, form url.Values)
}

// PausedRequest is what a hosted page shows about the authorization request it belongs to.
type PausedRequest struct {
	// ClientName is the client's display name (its ID when it has none).
	ClientName string
	// ClientUnverified is true for a client that registered itself (dynamic client
	// registration): nobody vouched for its name, which may imitate anyone's.
	ClientUnverified bool
	// ClientHost is the host the authorization's answer goes to (its redirect URI's), or,
	// for a device authorization, the host of the client's first registered redirect URI;
	// internationalized names as their A-label (xn--…), so a look-alike shows as what it
	// is. "" when there is none.
	ClientHost string
	// LoginHint is the request's login_hint.
	LoginHint string
	// Scopes are the scopes the request asks for.
	Scopes []string
	// UserCode is, for a device authorization request, its user code as XXXX-XXXX; "" for
	// an authorization request.
	UserCode string
}

// identity is what the consent and device pages show of pr's client beside its name.
func (pr *PausedRequest) identity() ClientIdentity {
	return ClientIdentity{ClientUnverified: pr.ClientUnverified, ClientHost: pr.ClientHost}
}

// SocialLogins lists the login buttons of the enabled upstream providers; *social.Service
// implements it.
type SocialLogins interface {
	Buttons(requestToken string) []social.Button
}

// Config is what the hosted pages need to know of the provider's configuration.
type Config struct {
	// TemplateFS holds templates that replace the embedded ones (see the package doc); nil:
	// the embedded ones only.
	TemplateFS fs.FS
	// ContentSecurityPolicy extends the pages' policy; its zero value adds nothing.
	ContentSecurityPolicy ContentSecurityPolicy
	// Issuer is the provider's issuer URL. Its path is the mount path every page, link and
	// redirect of the pages lies under (package internal/mountpath), and the Path of the
	// CSRF cookie under plain http. Its scheme decides the CSRF cookie's name: __Host-
	// prefixed under https, which requires Path=/ whatever the mount path.
	Issuer string
	// SecureCookies sets the Secure attribute on the CSRF cookie.
	SecureCookies bool
	// CSRFKey signs the CSRF tokens; it is derived from the system secret for this only.
	CSRFKey []byte
	// NewToken draws a fresh 256-bit random value.
	NewToken func() (string, error)
	// ScopeDescriptions say what the consent page shows for each custom scope, by name;
	// a scope without one is shown as "Use scope NAME". Default: none.
	ScopeDescriptions map[string]string
	// MagicLinkLifespan and PasswordResetLifespan are how long the mailed links work, as
	// the pages that announce them say.
	MagicLinkLifespan, PasswordResetLifespan time.Duration
	// Logger receives the failures of page requests; slog.Default when nil.
	Logger *slog.Logger
}

// UI serves the hosted pages. It is safe for concurrent use.
type UI struct {
	cfg Config
	// mount is the issuer's path (mountpath.Of), the prefix of every path the pages serve,
	// link to or redirect to.
	mount  string
	log    *slog.Logger
	auth   *publicauth.Service
	social SocialLogins
	host   Host
	pages  *pages
	csrf   csrfGuard
	// crossOrigin is Go's http.CrossOriginProtection in front of every form POST, beside
	// the CSRF token: a second layer, kept by the standard library.
	crossOrigin *http.CrossOriginProtection
}

// New loads the templates of cfg and returns the pages, which log in through auth, show
// the buttons of social and continue the OAuth flow through host.
func New(cfg Config, auth *publicauth.Service, social SocialLogins, host Host) (*UI, error) {
	if auth == nil || social == nil || host == nil || cfg.NewToken == nil {
		return nil, errors.New("ui: auth, social, host and NewToken are required")
	}
	if err := cfg.ContentSecurityPolicy.Validate(); err != nil {
		return nil, fmt.Errorf("ui: content security policy: %w", err)
	}
	mount, err := mountpath.Of(cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	ps, err := newPages(cfg.TemplateFS, cfg.ContentSecurityPolicy)
	if err != nil {
		return nil, err
	}
	ps.mount = mount
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &UI{
		cfg: cfg, mount: mount, log: log, auth: auth, social: social, host: host, pages: ps,
		csrf:        newCSRFGuard(cfg.Issuer, cfg.SecureCookies, cfg.CSRFKey, cfg.NewToken),
		crossOrigin: sameorigin.CrossOriginProtection(cfg.Issuer),
	}, nil
}

// Routes registers the hosted pages on r, relative to the issuer's path: r routes what
// follows that path (the provider strips it first), so under https://acme.example/auth the
// login page is /auth/login.
func (u *UI) Routes(r *mux.Router) {
	get, post := http.MethodGet, http.MethodPost
	r.HandleFunc("/login", u.formPage("login", loginView)).Methods(get)
	r.HandleFunc("/login", u.form(u.loginSubmit)).Methods(post)
	r.HandleFunc("/register", u.offered(u.auth.RegistrationOffered, u.formPage("register", registerView))).Methods(get)
	r.HandleFunc("/register", u.form(u.offered(u.auth.RegistrationOffered, u.registerSubmit))).Methods(post)
	r.HandleFunc("/consent", u.consentPage).Methods(get)
	r.HandleFunc("/consent", u.form(u.consentSubmit)).Methods(post)
	r.HandleFunc(DevicePath, u.devicePage).Methods(get)
	r.HandleFunc(DevicePath, u.form(u.deviceSubmit)).Methods(post)
	r.HandleFunc(DevicePath+"/confirm", u.deviceConfirmPage).Methods(get)
	r.HandleFunc(DevicePath+"/confirm", u.form(u.deviceConfirmSubmit)).Methods(post)
	r.HandleFunc(LogoutPath, u.form(u.logoutConfirm)).Methods(post)
	r.HandleFunc("/pin", u.form(u.pinSubmit)).Methods(post)
	r.HandleFunc("/magic-link", u.form(u.magicLinkSubmit)).Methods(post)
	r.HandleFunc("/forgot-password", u.offered(u.auth.PasswordResetOffered, u.formPage("forgot_password", forgotPasswordView))).Methods(get)
	r.HandleFunc("/forgot-password", u.form(u.offered(u.auth.PasswordResetOffered, u.forgotPasswordSubmit))).Methods(post)
	r.HandleFunc(publicauth.PathResetPassword, u.offered(u.auth.PasswordResetOffered, u.resetPasswordPage)).Methods(get)
	r.HandleFunc(publicauth.PathResetPassword, u.form(u.offered(u.auth.PasswordResetOffered, u.resetPasswordSubmit))).Methods(post)
	r.HandleFunc(publicauth.PathConfirmPassword, u.confirmPasswordPage).Methods(get)
	r.HandleFunc(publicauth.PathConfirmPassword, u.form(u.confirmPasswordSubmit)).Methods(post)
	r.HandleFunc(signedInPath, u.signedIn).Methods(get)
	r.HandleFunc(AccountPath, u.offered(u.auth.ProfileEditingOffered, u.accountPage)).Methods(get)
	r.HandleFunc(AccountPath, u.form(u.offered(u.auth.ProfileEditingOffered, u.accountSubmit))).Methods(post)
	r.HandleFunc(publicauth.PathMagicLogin, u.magicLoginPage).Methods(get)
	r.HandleFunc(publicauth.PathMagicLogin, u.form(u.magicLogin)).Methods(post)
	r.HandleFunc(publicauth.PathVerifyEmail, u.verifyEmailPage).Methods(get)
	r.HandleFunc(publicauth.PathVerifyEmail, u.form(u.verifyEmailSubmit)).Methods(post)
	r.HandleFunc("/ui/style.css", u.pages.style).Methods(get, http.MethodHead)
}

// form serves a hosted form's POST when Go's http.CrossOriginProtection lets it through
// (sameorigin.CrossOriginProtection: not sent from another origin or site), and answers
// errCrossOrigin otherwise, before the form is read; the CSRF token is checked after it.
func (u *UI) form(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := u.crossOrigin.Check(r); err != nil {
			u.Error(w, r, fmt.Errorf("%w: %v", errCrossOrigin, err))
			return
		}
		next(w, r)
	}
}

// offered serves next only while the feature check allows it (nil); otherwise the error
// page of its answer: 404 when the accounts store lacks the feature, 403 when registration
// is closed.
func (u *UI) offered(check func() error, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := check(); err != nil {
			u.Error(w, r, err)
			return
		}
		next(w, r)
	}
}

// FormPost writes an authorization response (or error) as a page that posts params to the
// client's verified redirect URI (response_mode=form_post).
func (u *UI) FormPost(w http.ResponseWriter, redirectURI string, params url.Values) {
	u.pages.formPost(w, redirectURI, params)
}
