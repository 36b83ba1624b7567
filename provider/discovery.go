package provider

import (
	"net/http"
	"slices"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// discoveryDocument is OpenID Connect Discovery 1.0 §3 metadata. It advertises exactly
// what works: no implicit flow, request objects by value (request_uri only from PAR), S256
// only.
type discoveryDocument struct {
	Issuer                             string `json:"issuer"`
	AuthorizationEndpoint              string `json:"authorization_endpoint"`
	TokenEndpoint                      string `json:"token_endpoint"`
	UserinfoEndpoint                   string `json:"userinfo_endpoint"`
	JWKSURI                            string `json:"jwks_uri"`
	RevocationEndpoint                 string `json:"revocation_endpoint"`
	IntrospectionEndpoint              string `json:"introspection_endpoint"`
	PushedAuthorizationRequestEndpoint string `json:"pushed_authorization_request_endpoint"`
	RequirePushedAuthorizationRequests bool   `json:"require_pushed_authorization_requests"`
	EndSessionEndpoint                 string `json:"end_session_endpoint"`
	DeviceAuthorizationEndpoint        string `json:"device_authorization_endpoint"`
	// RegistrationEndpoint is dynamic client registration (RFC 7591): registration.go.
	RegistrationEndpoint                      string   `json:"registration_endpoint"`
	ScopesSupported                           []string `json:"scopes_supported"`
	ResponseTypesSupported                    []string `json:"response_types_supported"`
	ResponseModesSupported                    []string `json:"response_modes_supported"`
	GrantTypesSupported                       []string `json:"grant_types_supported"`
	SubjectTypesSupported                     []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported          []string `json:"id_token_signing_alg_values_supported"`
	TokenEndpointAuthMethodsSupported         []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported    []string `json:"revocation_endpoint_auth_methods_supported"`
	IntrospectionEndpointAuthMethodsSupported []string `json:"introspection_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported             []string `json:"code_challenge_methods_supported"`
	// The signing algorithms of client assertions (client_secret_jwt, private_key_jwt) and
	// of request objects (RFC 9101): clientauth_methods.go.
	TokenEndpointAuthSigningAlgValuesSupported         []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	RevocationEndpointAuthSigningAlgValuesSupported    []string `json:"revocation_endpoint_auth_signing_alg_values_supported"`
	IntrospectionEndpointAuthSigningAlgValuesSupported []string `json:"introspection_endpoint_auth_signing_alg_values_supported"`
	RequestObjectSigningAlgValuesSupported             []string `json:"request_object_signing_alg_values_supported"`
	DPoPSigningAlgValuesSupported                      []string `json:"dpop_signing_alg_values_supported"`
	ClaimsSupported                                    []string `json:"claims_supported"`
	PromptValuesSupported                              []string `json:"prompt_values_supported"`
	DisplayValuesSupported                             []string `json:"display_values_supported"`
	ACRValuesSupported                                 []string `json:"acr_values_supported"`
	UILocalesSupported                                 []string `json:"ui_locales_supported"`
	ClaimsLocalesSupported                             []string `json:"claims_locales_supported"`
	ClaimsParameterSupported                           bool     `json:"claims_parameter_supported"`
	RequestParameterSupported                          bool     `json:"request_parameter_supported"`
	RequestURIParameterSupported                       bool     `json:"request_uri_parameter_supported"`
	AuthorizationResponseIssParameterSupported         bool     `json:"authorization_response_iss_parameter_supported"`
	FrontchannelLogoutSupported                        bool     `json:"frontchannel_logout_supported"`
	BackchannelLogoutSupported                         bool     `json:"backchannel_logout_supported"`
	BackchannelLogoutSessionSupported                  bool     `json:"backchannel_logout_session_supported"`
	// AccountFeatures is a Gatehouse extension: which of "registration", "password_reset"
	// and "email_verification" this deployment offers (Config.Registration, and what the
	// Accounts store of WithAccounts supports).
	AccountFeatures []string `json:"gatehouse_account_features"`
}

// scopesSupported are the scopes Gatehouse understands.
var scopesSupported = []string{"openid", "profile", "email", "phone", "address", "offline_access", "manage_permissions"}

func (p *Provider) discoveryDocument() discoveryDocument {
	iss := p.cfg.Issuer
	return discoveryDocument{
		Issuer:                                             iss,
		AuthorizationEndpoint:                              iss + "/api/oauth/authorize",
		TokenEndpoint:                                      iss + "/api/oauth/token",
		UserinfoEndpoint:                                   iss + "/api/oauth/userinfo",
		JWKSURI:                                            iss + "/.well-known/jwks.json",
		RevocationEndpoint:                                 iss + "/api/oauth/revoke",
		IntrospectionEndpoint:                              iss + "/api/oauth/introspect",
		PushedAuthorizationRequestEndpoint:                 iss + "/api/oauth/par",
		RequirePushedAuthorizationRequests:                 p.cfg.RequirePAR,
		EndSessionEndpoint:                                 iss + "/api/oauth/logout",
		ScopesSupported:                                    supportedScopes(p.cfg.Scopes),
		ResponseTypesSupported:                             []string{"code"},
		ResponseModesSupported:                             []string{"query", "form_post"},
		GrantTypesSupported:                                grantTypesSupported,
		DeviceAuthorizationEndpoint:                        iss + "/api/oauth/device/code",
		RegistrationEndpoint:                               iss + "/api/oauth/register",
		SubjectTypesSupported:                              []string{"public"},
		IDTokenSigningAlgValuesSupported:                   slices.Clone(supportedAlgs),
		TokenEndpointAuthMethodsSupported:                  clientAuthMethods,
		RevocationEndpointAuthMethodsSupported:             clientAuthMethods,
		IntrospectionEndpointAuthMethodsSupported:          introspectionAuthMethods,
		TokenEndpointAuthSigningAlgValuesSupported:         assertionAlgs(),
		RevocationEndpointAuthSigningAlgValuesSupported:    assertionAlgs(),
		IntrospectionEndpointAuthSigningAlgValuesSupported: assertionAlgs(),
		RequestObjectSigningAlgValuesSupported:             requestObjectAlgs,
		RequestParameterSupported:                          true,
		CodeChallengeMethodsSupported:                      []string{"S256"},
		DPoPSigningAlgValuesSupported:                      p.dpop.Algorithms(),
		ClaimsSupported:                                    claimsSupported(),
		PromptValuesSupported:                              []string{"none", "login", "consent", "select_account"},
		DisplayValuesSupported:                             []string{"page", "popup", "touch", "wap"},
		ACRValuesSupported:                                 []string{acrSingleFactor},
		UILocalesSupported:                                 []string{"en"},
		ClaimsLocalesSupported:                             []string{"en"},
		AuthorizationResponseIssParameterSupported:         true,
		ClaimsParameterSupported:                           true,
		BackchannelLogoutSupported:                         true, // backchannel.go
		BackchannelLogoutSessionSupported:                  true,
		AccountFeatures:                                    p.accountFeatures(),
	}
}

// accountFeatures lists the account features offered, for discovery.
func (p *Provider) accountFeatures() []string {
	a := p.auth.Abilities()
	features := []string{}
	for _, f := range []struct {
		on   bool
		name string
	}{{a.Registration, "registration"}, {a.PasswordReset, "password_reset"}, {a.EmailVerification, "email_verification"}} {
		if f.on {
			features = append(features, f.name)
		}
	}
	return features
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	httpjson.WriteCacheable(w, "public, max-age=3600", p.discoveryDocument())
}

// jwks publishes the public signing keys (RFC 7517). Clients cache it briefly and refetch
// on an unknown kid, so a short max-age keeps rotation smooth.
func (p *Provider) jwks(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=60")
	_, _ = w.Write(p.keys.jwks())
}
