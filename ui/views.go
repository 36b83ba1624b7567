package ui

import (
	"html/template"
	"net/url"

	"github.com/gatehouse-id/gatehouse/social"
)

// The view structs are the data of the page templates, one per template: the contract a
// replacement template in Config.TemplateFS is written against. A template that names a
// field its view lacks fails when the page renders (TestEveryTemplateRendersFromItsView).

// Page is what every page shows; the layout's "top" template uses it.
type Page struct {
	// Title is the page's heading and the first part of its <title>.
	Title string
	// Base is the path the provider is mounted under: the issuer's path, "" for an issuer
	// at the origin's root. Every link, form action and stylesheet of a page must begin with
	// it (href="{{.Base}}/login"), so the page works wherever the provider is mounted; the
	// pages set it. The URLs the views carry (LinkURL, SignInURL, Action, a Button's URL,
	// …) already include it.
	Base string
}

// page gives render access to the embedded Page of any view.
func (p *Page) page() *Page { return p }

// Form is what every hosted form carries.
type Form struct {
	Page
	// CSRF is the token the form must send back in its csrf_token field.
	CSRF string
	// Request is the paused authorization request's token, which the form sends back in its
	// request field; "" outside an OAuth flow.
	Request string
	// ClientName is the display name of the application the user signs in to; "" outside
	// an OAuth flow.
	ClientName string
	// Error says why the last submission was refused (the layout's "error_message"
	// template shows it); "" when there is nothing to say.
	Error string
}

func (f *Form) form() *Form { return f }

// LoginView is the data of login.html: the password form, the magic-link form and the
// social login buttons.
type LoginView struct {
	Form
	// Email prefills the email fields (the email query parameter, else login_hint).
	Email string
	// Social are the buttons of the enabled social and upstream logins, in configuration
	// order; empty when none is enabled.
	Social []social.Button
	// CanRegister and CanResetPassword say whether to offer the registration and
	// forgot-password pages: false when registration is closed or the accounts store
	// cannot create accounts or set passwords (those pages then answer 403 or 404).
	CanRegister, CanResetPassword bool
}

// RegisterView is the data of register.html.
type RegisterView struct {
	Form
	// Email and Name prefill the fields.
	Email, Name string
	// SignInURL and ResetURL lead to the login and password-reset pages for Email when the
	// address is already registered; "" otherwise.
	SignInURL, ResetURL string
}

// ConsentView is the data of consent.html.
type ConsentView struct {
	Form
	// UserEmail is the signed-in user's email.
	UserEmail string
	// Scopes say, one sentence each, what the application asks to do.
	Scopes []string
	// ClientIdentity says how far ClientName can be trusted, and where the answer goes.
	ClientIdentity
}

// ClientIdentity is what the consent and device pages show beside an application's name
// so that a user can tell it from an impostor: names are chosen by whoever registers a
// client, so a self-registered one may take any brand's.
type ClientIdentity struct {
	// ClientUnverified is true for an application that registered itself (dynamic client
	// registration): its name is its own claim, and the page says so.
	ClientUnverified bool
	// ClientHost is the host the user returns to after allowing (the request's redirect
	// URI; for a device, the host of the application's first registered redirect URI),
	// an internationalized name as its A-label (xn--…); "" when there is none.
	ClientHost string
}

// PINView is the data of pin.html, the second factor's form.
type PINView struct {
	Form
	// Challenge identifies the PIN challenge; the form sends it back in its challenge field.
	Challenge string
	// Email is where the PIN was sent; "" when the page is shown again after a wrong PIN.
	Email string
}

// ForgotPasswordView is the data of forgot_password.html.
type ForgotPasswordView struct {
	Form
	// Email prefills the email field.
	Email string
}

// LinkFormView is the data of the forms a mailed link opens: reset_password.html,
// confirm_password.html, magic_login.html and verify_email.html.
type LinkFormView struct {
	Form
	// Token is the link's token; the form sends it back in its token field.
	Token string
}

// LogoutView is the data of logout.html, the confirmation of an RP-initiated logout.
type LogoutView struct {
	Page
	// CSRF is the token the form must send back in its csrf_token field.
	CSRF string
	// UserEmail is the signed-in user's email; "" when the browser has no session, and the
	// page only asks whether to go on to ReturnHost (a self-registered client's
	// post-logout URI is not followed unasked).
	UserEmail string
	// SignedOut is true when the request already ended a session, the one its
	// id_token_hint names, before asking.
	SignedOut bool
	// ReturnHost is the host of the registered post_logout_redirect_uri the form leads to,
	// shown so the user sees where they go; "" when it leads to the logged-out page.
	ReturnHost string
	// Action is the path the form posts to.
	Action string
	// Fields are the logout request's parameters, which the form carries as hidden fields.
	Fields url.Values
}

// SignedInView is the data of signed_in.html, the end of a login outside any OAuth flow.
type SignedInView struct {
	Page
	// UserEmail is the signed-in user's email.
	UserEmail string
}

// NoticeView is the data of notice.html: what happened and where to go next.
type NoticeView struct {
	Page
	// Message says what happened.
	Message string
	// LinkURL and LinkText are the way forward; "" for none.
	LinkURL, LinkText string
}

// ErrorView is the data of error.html.
type ErrorView struct {
	Page
	// Message says what went wrong and what the user can do.
	Message string
}

// LoggedOutView is the data of logged_out.html.
type LoggedOutView struct {
	Page
	// SignedOut is whether the logout ended a session. False when there was none to end
	// (no session cookie, and no unexpired id_token_hint of a live session): the page
	// must not say the user was signed out.
	SignedOut bool
}

// formPostView is the data of the built-in response_mode=form_post page.
type formPostView struct {
	Page
	// Action is the client's verified redirect URI. It is registered and exactly matched,
	// and may use a private-use scheme (native apps) that html/template would otherwise
	// blank out.
	Action template.URL
	// Params are the authorization response's parameters.
	Params url.Values
}

// The views of the forms that hold an email, prefilled with email.
func loginView(email string) formView          { return &LoginView{Email: email} }
func registerView(email string) formView       { return &RegisterView{Email: email} }
func forgotPasswordView(email string) formView { return &ForgotPasswordView{Email: email} }

// view is the data of a page.
type view interface{ page() *Page }

// formView is the data of a hosted form.
type formView interface {
	view
	form() *Form
}

// DeviceView is the data of device.html, where the user types the code a device shows
// (RFC 8628 §3.3).
type DeviceView struct {
	Form
	// UserCode prefills the code field (the user_code query parameter of
	// verification_uri_complete).
	UserCode string
}

// DeviceConfirmView is the data of device_confirm.html: the device's code, to compare with
// the one on the device, and what its application asks to do.
type DeviceConfirmView struct {
	Form
	// UserCode is the code, as XXXX-XXXX.
	UserCode string
	// UserEmail is the signed-in user's email.
	UserEmail string
	// Scopes say, one sentence each, what the application asks to do.
	Scopes []string
	// ClientIdentity says how far ClientName can be trusted, and where it lives.
	ClientIdentity
}

// pageViews are the hosted pages, each with its view and title: the names of the templates
// Config.TemplateFS may replace (plus layout.html and style.css).
var pageViews = map[string]struct {
	view  view
	title string
}{
	"login":            {&LoginView{}, "Sign in"},
	"register":         {&RegisterView{}, "Create your account"},
	"consent":          {&ConsentView{}, "Allow access?"},
	"device":           {&DeviceView{}, "Connect a device"},
	"device_confirm":   {&DeviceConfirmView{}, "Connect this device?"},
	"pin":              {&PINView{}, "Enter your PIN"},
	"forgot_password":  {&ForgotPasswordView{}, "Reset your password"},
	"reset_password":   {&LinkFormView{}, "Choose a new password"},
	"confirm_password": {&LinkFormView{}, "Add a password to your account"},
	"magic_login":      {&LinkFormView{}, "Sign in"},
	"verify_email":     {&LinkFormView{}, "Verify your email address"},
	"logout":           {&LogoutView{}, "Sign out?"},
	"signed_in":        {&SignedInView{}, "Signed in"},
	"notice":           {&NoticeView{}, ""},
	"error":            {&ErrorView{}, ""},
	"logged_out":       {&LoggedOutView{}, "Signed out"},
	"account":          {&AccountView{}, "Your account"},
}
