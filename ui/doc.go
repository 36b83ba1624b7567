// Package ui serves Gatehouse's hosted pages: the HTML a browser sees during a login. Its
// one job is the pages — their templates, the headers that keep them safe, the CSRF guard of
// their forms, the response_mode=form_post page, and the handlers of
//
//	/login /register /consent /pin /magic-link /forgot-password /logout (confirmation POST)
//	/signed-in /account /ui/style.css and the pages of mailed links (magic-login, verify-email,
//	reset-password, confirm-password)
//
// each under the issuer's path, the mount path (/auth/login for the issuer
// https://acme.example/auth), as is every link, form action and redirect they make.
//
// Every page works without JavaScript and carries a CSRF token. The pages log in through
// package publicauth and continue the OAuth flow through Host, which package provider
// implements: ui never imports provider. The protocol decisions (whether an authorization
// request needs a login or consent, what a logout request may redirect to) stay in
// provider, which calls into ui to render.
//
// # Errors
//
// A page that fails answers through Error, the one table (describe) from an error of the
// pages, of publicauth, of social or of the provider (RequestError) to a status and a title
// and text in sentence case. A refused input of a form shows the form again with the text.
//
// # Templates
//
// The pages are html/template files, embedded, each replaceable by a file of the same name
// in Config.TemplateFS (layout.html with the shared "top", "bottom" and "error_message"
// templates, and style.css, too). Each template is rendered from one view struct, which is
// its contract:
//
//	login.html                            LoginView
//	register.html                         RegisterView
//	consent.html                          ConsentView
//	device.html                           DeviceView
//	device_confirm.html                   DeviceConfirmView
//	pin.html                              PINView
//	forgot_password.html                  ForgotPasswordView
//	reset_password.html, confirm_password.html,
//	magic_login.html, verify_email.html   LinkFormView
//	logout.html                           LogoutView
//	signed_in.html                        SignedInView
//	account.html                          AccountView
//	notice.html                           NoticeView
//	error.html                            ErrorView
//	logged_out.html                       LoggedOutView
//
// Every view embeds Page (Title, and Base: the mount path, which every link, form action
// and stylesheet of a template must begin with, as in action="{{.Base}}/login"); the forms'
// views embed Form (CSRF, Request, ClientName, Error); the consent and device confirmation
// views also embed ClientIdentity (ClientUnverified, ClientHost), which a page should show
// beside ClientName, since a self-registered client may take any name. A template that
// names a field its view lacks fails when the page renders. The
// response_mode=form_post page is built in and not replaceable: its one script must match
// the hash its Content-Security-Policy allows. Config.ContentSecurityPolicy appends sources
// (a company stylesheet's origin, say) to the pages' policy, never loosening the rest of it.
package ui
