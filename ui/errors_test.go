package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/social"
)

func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		status int
		text   string
		form   bool
	}{
		{"wrong password, as a sentence", publicauth.ErrInvalidCredentials, http.StatusUnauthorized, "Invalid email or password.", true},
		{"refused input", &publicauth.InputError{Field: "name", Reason: "is required"}, http.StatusBadRequest, "Name is required.", true},
		{"rate limit", &publicauth.RateLimitError{RetryAfter: 1}, http.StatusTooManyRequests, "Too many attempts. Wait a few minutes, then try again.", false},
		{"wrapped expired request", fmt.Errorf("load: %w", publicauth.ErrRequestExpired), http.StatusBadRequest, "This sign-in request has expired or has already been completed. Go back to the application and start again.", false},
		{"social state", social.ErrBadState, http.StatusBadRequest, "This sign-in attempt is invalid, expired or was already used. Go back to the sign-in page and start again.", false},
		{"authorization request", &RequestError{Status: http.StatusBadRequest, Description: "Unknown client."}, http.StatusBadRequest, "Unknown client.", false},
		{"unknown", errors.New("disk on fire"), http.StatusInternalServerError, "Please try again in a moment.", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if p := describe(c.err); p.status != c.status || p.text != c.text || p.form != c.form {
				t.Errorf("got %d %q (form %v), want %d %q (form %v)", p.status, p.text, p.form, c.status, c.text, c.form)
			}
		})
	}
}

// TestPageTextsAreSentences: every title starts with a capital and every text ends with a
// full stop.
func TestPageTextsAreSentences(t *testing.T) {
	all := []problem{tooManyAttempts, unavailable, internalError}
	for _, e := range pageErrors {
		all = append(all, e.problem)
	}
	for _, p := range all {
		if !unicode.IsUpper([]rune(p.title)[0]) || !strings.HasSuffix(p.text, ".") {
			t.Errorf("%q / %q is not in sentence case", p.title, p.text)
		}
	}
	for code, text := range socialLoginMessages {
		if !strings.HasSuffix(text, ".") {
			t.Errorf("social code %s: %q has no full stop", code, text)
		}
	}
}

// TestSocialLoginMessages: every code the social callback sends back to the login page has
// a text, and no other code has one, so none can be injected through the URL.
func TestSocialLoginMessages(t *testing.T) {
	for _, code := range []string{social.CodeDenied, social.CodeUpstream, social.CodeUnverified} {
		if socialLoginMessages[code] == "" {
			t.Errorf("no message for %q", code)
		}
	}
	for _, code := range []string{"", "<script>", "Denied", "internal"} {
		if m := socialLoginMessages[code]; m != "" {
			t.Errorf("code %q has message %q, want none", code, m)
		}
	}
}
