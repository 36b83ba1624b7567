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
	// Google is enabled by its ClientID and ClientSecret, given together.
	Google SocialProvider
	// Facebook is enabled by its ClientID and ClientSecret, given together.
	Facebook SocialProvider
	// OIDC lists OpenID Connect providers upstream of Gatehouse (a corporate IdP, another
	// Gatehouse); each is enabled by being listed. Names must be unique.
	OIDC []OIDCUpstream
	// HTTPClient makes every call to a provider. Default: a client with a 10-second
	// timeout. For tests and private deployments (a proxy, a private CA).
	HTTPClient *http.Client
}

// SocialProvider is Gatehouse's registration at Google or Facebook.
type SocialProvider struct {
	// ClientID and ClientSecret are the credentials the provider issued. Both or neither.
	ClientID     string
	ClientSecret string
	// Scopes requested. Default "openid email profile" (Google), "email" (Facebook).
	Scopes []string
	// AuthURL, TokenURL and ProfileURL replace the provider's endpoints, for tests and
	// private deployments. Default: the provider's own.
	AuthURL, TokenURL, ProfileURL string
}

// enabled reports whether any credential is set; withDefaults then requires both.
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
	// Scopes requested. Default "openid email profile".
	Scopes []string
}

// withDefaults returns c unchanged (every provider is off by default), or an error naming
// every invalid field.
func (c SocialConfig) withDefaults(_ string) (SocialConfig, error) {
	if err := social.Validate(c.upstreams()); err != nil {
		return c, fmt.Errorf("social login: %w", err)
	}
	return c, nil
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
