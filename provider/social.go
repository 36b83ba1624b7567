package provider

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/social"
)

// newSocial builds the social login of cfg over the provider's public authentication.
func (p *Provider) newSocial(cfg Config) (*social.Service, error) {
	return social.New(social.Config{
		Issuer:          cfg.Issuer,
		Secret:          deriveKey(cfg.Secret, "social-login"),
		InsecureCookies: !secureCookies(cfg.Issuer),
		Upstreams:       cfg.Social.upstreams(),
		HTTPClient:      tracedClient(p.tracer, cfg.Social.HTTPClient),
	}, p.auth, p.auth.Identities(p.store), socialHost{p}, social.WithRandom(p.random), social.WithLogger(p.log))
}

// loginPage is where an authorization request paused for login sends the browser: straight
// to the social login its `provider` parameter names (SSO interface §4 item 1), when that
// provider is enabled, else the hosted login page; a path under the mount path.
func (p *Provider) loginPage(form url.Values) string {
	if path, ok := p.social.LoginURL(form.Get("provider"), ""); ok {
		return path
	}
	return p.ui.LoginPath("")
}

// socialHost is the provider as the social login's social.Host. It is a separate,
// unexported type so that its methods are not part of the Provider's API.
type socialHost struct{ p *Provider }

// CheckPausedRequest implements social.Host.
func (h socialHost) CheckPausedRequest(ctx context.Context, token string) error {
	_, err := h.p.pausedRow(ctx, hashToken(token))
	return err
}

// IsRegisteredRedirectURI implements social.Host with the store's lookup, the one magic
// links use too.
func (h socialHost) IsRegisteredRedirectURI(ctx context.Context, uri string) (bool, error) {
	return h.p.store.IsRegisteredRedirectURI(ctx, uri)
}

// CompleteLogin implements social.Host: an upstream login is a first factor like a
// password, so the PIN gate applies to it too.
func (h socialHost) CompleteLogin(w http.ResponseWriter, r *http.Request, u *publicauth.User, method, token, returnTo string) {
	if token == "" {
		// A return path that resumes a paused request is that request: kept by reference
		// in a PIN challenge, like any other.
		token = h.p.pausedRequestIn(returnTo)
	}
	dest := flowDestination(token)
	switch {
	case token != "" || returnTo == "":
	case strings.HasPrefix(returnTo, "/"):
		dest.Resume = returnTo
	default:
		dest.RedirectURI = returnTo
	}
	h.p.ui.PassFirstFactor(w, r, u, method, dest, token)
}

// ErrorPage implements social.Host with the hosted pages' one error table.
func (h socialHost) ErrorPage(w http.ResponseWriter, r *http.Request, err error) {
	h.p.ui.Error(w, r, err)
}
