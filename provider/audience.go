package provider

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/ory/fosite"
)

// invalidTarget is RFC 8707 §2's error for a resource or audience the client may not ask for.
func invalidTarget(hint string) error {
	return &fosite.RFC6749Error{
		ErrorField:       "invalid_target",
		DescriptionField: "The requested resource is invalid, missing, unknown, or malformed.",
		HintField:        hint,
		CodeField:        http.StatusBadRequest,
	}
}

// matchAudience is fosite's audience matching strategy: every requested audience must be one
// the client is registered with, compared exactly. fosite's default compares URL prefixes,
// which would let a client registered for "https://api.example" ask for any path under it
// and one registered for a client id "orders" ask for "orders-admin".
func matchAudience(allowed, requested []string) error {
	for _, a := range requested {
		if !slices.Contains(allowed, a) {
			return invalidTarget(fmt.Sprintf("The client may not ask for audience %q.", a))
		}
	}
	return nil
}

// mergeResources adds the RFC 8707 `resource` indicators of form to its `audience`
// parameter, which is how fosite reads the requested audience; both name the audience a
// token is for. It returns invalid_target for a resource that is not an absolute URI
// without fragment (§2), after merging the rest, so that fosite can still parse the request
// and the error can reach the client's redirect URI.
func mergeResources(form url.Values) error {
	resources := form["resource"]
	if len(resources) == 0 {
		return nil
	}
	audience := fosite.GetAudiences(form)
	var err error
	for _, res := range resources {
		if u, perr := url.Parse(res); perr != nil || !u.IsAbs() || u.Fragment != "" || !validScopeToken(res) {
			err = invalidTarget(fmt.Sprintf("The resource %q is not an absolute URI without fragment.", res))
			continue
		}
		if !slices.Contains(audience, res) {
			audience = append(audience, res)
		}
	}
	form["audience"] = audience
	return err
}

// narrowAudience checks the audience a token request for an existing grant
// (authorization_code, refresh_token) asks for: each must be one the grant has. fosite
// has set the request's requested audience to the grant's, and ignores the token request's;
// the access token's aud is narrowed by tokenStrategy.GenerateAccessToken.
func narrowAudience(ar fosite.AccessRequester) error {
	for _, a := range fosite.GetAudiences(ar.GetRequestForm()) {
		if !slices.Contains(ar.GetRequestedAudience(), a) {
			return invalidTarget(fmt.Sprintf("The grant was not made for audience %q.", a))
		}
	}
	return nil
}
