package ui

import (
	"bytes"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/social"
)

// TestEveryTemplateRendersFromItsView renders every embedded template from its view, once
// with every field set (so each {{with}}, {{if}} and {{range}} body runs) and once from
// the zero value (each {{else}}). A template that names a field its view lacks fails here,
// as it would for an operator's template at the first request.
func TestEveryTemplateRendersFromItsView(t *testing.T) {
	ps, err := newPages(nil, ContentSecurityPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	form := Form{Page: Page{Title: "Title"}, CSRF: "csrf", Request: "request-token", ClientName: "Example App", Error: "Invalid email or password."}
	fields := url.Values{"client_id": {"app"}, "state": {"xyz"}}
	full := map[string]view{
		"login": &LoginView{Form: form, Email: "ann@example.com",
			Social: []social.Button{{Provider: "google", Label: "Google", URL: "/api/auth/google/login"}}},
		"register": &RegisterView{Form: form, Email: "ann@example.com", Name: "Ann",
			SignInURL: "/login?email=ann%40example.com", ResetURL: "/forgot-password?email=ann%40example.com"},
		"consent":          &ConsentView{Form: form, UserEmail: "ann@example.com", Scopes: []string{"Know who you are"}},
		"device":           &DeviceView{Form: form, UserCode: "BCDF-GHJK"},
		"device_confirm":   &DeviceConfirmView{Form: form, UserCode: "BCDF-GHJK", UserEmail: "ann@example.com", Scopes: []string{"Know who you are"}},
		"pin":              &PINView{Form: form, Challenge: "challenge", Email: "ann@example.com"},
		"forgot_password":  &ForgotPasswordView{Form: form, Email: "ann@example.com"},
		"reset_password":   &LinkFormView{Form: form, Token: "link-token"},
		"confirm_password": &LinkFormView{Form: form, Token: "link-token"},
		"magic_login":      &LinkFormView{Form: form, Token: "link-token"},
		"verify_email":     &LinkFormView{Form: form, Token: "link-token"},
		"logout":           &LogoutView{Page: form.Page, CSRF: "csrf", UserEmail: "ann@example.com", SignedOut: true, ReturnHost: "app.example", Action: LogoutPath, Fields: fields},
		"signed_in":        &SignedInView{Page: form.Page, UserEmail: "ann@example.com"},
		"notice":           &NoticeView{Page: form.Page, Message: "Check your email.", LinkURL: "/login", LinkText: "Sign in"},
		"error":            &ErrorView{Page: form.Page, Message: "Please try again in a moment."},
		"logged_out":       &LoggedOutView{Page: form.Page, SignedOut: true},
		"account":          &AccountView{Form: form, UserEmail: "ann@example.com", Fields: AccountFields{Name: "Ann", Formatted: "1 Main St\nTown"}, PhoneNumberVerified: true, Saved: true},
	}
	for name, pv := range pageViews {
		t.Run(name, func(t *testing.T) {
			v, ok := full[name]
			if !ok {
				t.Fatalf("page %s has no example view in this test", name)
			}
			if got, want := reflect.TypeOf(v), reflect.TypeOf(pv.view); got != want {
				t.Fatalf("example view is a %v, the page's view a %v", got, want)
			}
			zero := reflect.New(reflect.TypeOf(pv.view).Elem()).Interface()
			for _, data := range []any{v, zero} {
				var buf bytes.Buffer
				if err := ps.byName[name].Execute(&buf, data); err != nil {
					t.Fatalf("render from %T: %v", data, err)
				}
			}
		})
	}
	for name := range full {
		if _, ok := pageViews[name]; !ok {
			t.Errorf("example %s names no page", name)
		}
	}
	var buf bytes.Buffer
	if err := ps.formPostPage.Execute(&buf, formPostView{Page: Page{Title: "Continue"}, Action: "https://app.example/cb", Params: fields}); err != nil {
		t.Errorf("form_post: %v", err)
	}
}

// TestTemplateNamingMissingFieldFails pins what the test above relies on: executing a
// template over a view struct fails on a field the struct lacks.
func TestTemplateNamingMissingFieldFails(t *testing.T) {
	layout, err := embeddedTemplates.ReadFile("templates/layout.html")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := parsePage("login", string(layout), `{{template "top" .}}{{.Password}}{{template "bottom" .}}`)
	if err != nil {
		t.Fatal(err)
	}
	err = tpl.Execute(&bytes.Buffer{}, &LoginView{})
	if err == nil || !strings.Contains(err.Error(), "Password") {
		t.Errorf("got %v, want an error naming the missing field", err)
	}
}
