package provider

import (
	"fmt"
	"net/http"

	"github.com/gatehouse-id/gatehouse/social"
)

// SocialConfig configures social and upstream OpenID Connect login (the routes under
// /api/auth/, and a button per enabled provider on the hosted login page). Every provider
// is off by default. Each provider's callback URL, to register there, is the issuer plus
// /api/auth/google/callback, /api/auth/facebook/callback or /api/auth/oidc/{name}/callback.
type SocialConfig struct {
	// Google is enabled by its ClientID and ClientSecret, given together. Default off.
	Google SocialProvider
	// Facebook is enabled by its ClientID and ClientSecret, given together. Default off.
	Facebook SocialProvider
	// OIDC lists OpenID Connect providers upstream of Gatehouse (a corporate IdP, another
	// Gatehouse); each is enabled by being listed. Names must be unique. Default none.
	OIDC []OIDCUpstream
	// HTTPClient makes every call to a provider. Default: a client with a
	// social.DefaultHTTPTimeout (10-second) timeout. For tests and private deployments (a
	// proxy, a private CA).
	HTTPClient *http.Client
}

// SocialProvider is Gatehouse's registration at Google or Facebook.
type SocialProvider struct {
	// ClientID and ClientSecret are the credentials the provider issued. Both or neither;
	// default neither (off).
	ClientID     string
	ClientSecret string
	// Scopes requested. Default social.Upstream's: "openid email profile" (Google), "email"
	// (Facebook).
	Scopes []string
	// AuthURL, TokenURL and ProfileURL replace the provider's endpoints, for tests and
	// private deployments. Default "": the provider's own.
	AuthURL, TokenURL, ProfileURL string
}

// enabled reports whether any credential is set; validate then requires both.
func (c SocialProvider) enabled() bool { return c.ClientID != "" || c.ClientSecret != "" }

// OIDCUpstream is one OpenID Connect provider upstream of Gatehouse.
type OIDCUpstream struct {
	// Name appears in the routes (/api/auth/oidc/{Name}/…) and in loginMethods
	// ("oidc:{Name}"): 1-32 lower-case letters, digits or '-'. It is the login button's
	// label too.
	Name string
	// Issuer is the upstream's issuer URL (https, or http on a loopback host); its
	// discovery document is read on first use.
	Issuer string
	// ClientID and ClientSecret are Gatehouse's client at the upstream. Required.
	ClientID     string
	ClientSecret string
	// Scopes requested. Default social.Upstream's: "openid email profile".
	Scopes []string
}

// validate names every invalid field, by package social's rules; c has no defaults of its
// own to fill in (every provider is off by default, scopes are defaulted by social).
func (c SocialConfig) validate() error {
	if err := social.Validate(c.upstreams()); err != nil {
		return fmt.Errorf("social login: %w", err)
	}
	return nil
}

// upstreams lists the configured providers in the order of their login buttons.
func (c SocialConfig) upstreams() []social.Upstream {
	var out []social.Upstream
	add := func(kind string, sp SocialProvider) {
		if sp.enabled() {
			out = append(out, social.Upstream{
				Kind: kind, ClientID: sp.ClientID, ClientSecret: sp.ClientSecret, Scopes: sp.Scopes,
				AuthURL: sp.AuthURL, TokenURL: sp.TokenURL, ProfileURL: sp.ProfileURL,
			})
		}
	}
	add(social.KindGoogle, c.Google)
	add(social.KindFacebook, c.Facebook)
	for _, o := range c.OIDC {
		out = append(out, social.Upstream{
			Kind: social.KindOIDC, Name: o.Name, Issuer: o.Issuer,
			ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes,
		})
	}
	return out
}
