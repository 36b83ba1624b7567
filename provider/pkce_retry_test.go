package provider_test

import (
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestPKCEHoldsAcrossFailedExchanges: a failed code_verifier check neither spends the code
// nor lifts its challenge. Whoever holds a stolen code cannot burn it for its client with a
// wrong verifier, nor get past PKCE by retrying without one, even where PKCE is relaxed
// for confidential clients (a code whose request had a challenge keeps it until it is
// spent); the client with the right verifier still redeems it, exactly once.
func TestPKCEHoldsAcrossFailedExchanges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{AllowConfidentialWithoutPKCE: true})
		alice := e.user(t, "alice@example.com", "Alice Example")
		webapp := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true, RedirectURIs: []string{rpRedirectURI}})
		rp := e.relyingParty(t, webapp)
		br := e.browser(t)
		rp.signIn(t, e, br, alice.Email)

		ar := rp.start()
		code := wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
		form := func(verifier string) url.Values {
			f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirectURI}}
			if verifier != "" {
				f.Set("code_verifier", verifier)
			}
			return f
		}
		for _, step := range []struct {
			name       string
			verifier   string
			wantStatus int
		}{
			{"a wrong verifier", oauth2.GenerateVerifier(), http.StatusBadRequest},
			{"no verifier after the failure", "", http.StatusBadRequest},
			{"the right verifier", ar.verifier, http.StatusOK},
			{"the right verifier again (the code is spent)", ar.verifier, http.StatusBadRequest},
		} {
			r := e.token(t, webapp, form(step.verifier))
			if r.status != step.wantStatus {
				t.Fatalf("%s: got %s, want %d", step.name, r, step.wantStatus)
			}
			if step.wantStatus != http.StatusOK && r.body["error"] != "invalid_grant" {
				t.Errorf("%s: error %v, want invalid_grant", step.name, r.body["error"])
			}
		}
	})
}
