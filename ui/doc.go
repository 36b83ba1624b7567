// Package ui serves Gatehouse's hosted pages: the HTML a browser sees during a login. Its
// one job is the pages — their templates, the headers that keep them safe, the CSRF guard of
// their forms, the response_mode=form_post page, and the handlers of
//
//	/login /register /consent /pin /magic-link /forgot-password /logout (confirmation POST)
//	/signed-in /ui/style.css and the pages of mailed links (magic-login, verify-email,
//	reset-password, confirm-password)
//
// Every page works without JavaScript and carries a CSRF token. The pages log in through
// package publicauth and continue the OAuth flow through Host, which package provider
// implements: ui never imports provider. The protocol decisions (whether an authorization
// request needs a login or consent, what a logout request may redirect to) stay in
// provider, which calls into ui to render.
package ui
