package provider

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v3/jwt"
	"github.com/ory/fosite"
)

// requestObjectMetadata are the claims of a request object that describe the object itself
// (RFC 9101 §4, RFC 7519) rather than the authorization request: they are not parameters.
var requestObjectMetadata = []string{"iss", "aud", "exp", "iat", "nbf", "jti"}

// checkRequestObject applies, before fosite parses an authorization request (at the
// authorization endpoint, or pushed to the PAR endpoint), the rules of RFC 9101 that
// fosite's request object handling (which verifies the signature with the client's keys and
// lets the object's parameters replace the query's, §6.3) leaves out:
//
//   - a request_uri never reaches fosite: the authorization endpoint consumes those the
//     PAR endpoint issued (pushedAuthorizeRequest) and refuses any other, so one here is
//     request_uri_not_supported (the provider never fetches a URL a request names);
//   - request is signed with an algorithm of requestObjectAlgs: "none" and HMAC are
//     invalid_request_object;
//   - the object's client_id and iss, when present, are the query's client_id, its aud,
//     when present, contains the issuer, its exp and nbf hold now, and it nests no request
//     or request_uri (§4);
//   - fosite reads request objects only of requests whose query scope has openid (OpenID
//     Connect Core §6.1); when only the object's scope has it, openid is added to the
//     query's (the verified object's scope replaces it anyway), and an object with no
//     openid at all is request_not_supported rather than silently ignored.
//
// The object's claims are read here unverified, only to refuse; fosite verifies them.
func (p *Provider) checkRequestObject(form url.Values) error {
	object, requestURI := form.Get("request"), form.Get("request_uri")
	switch {
	case object == "" && requestURI == "":
		return nil
	case object != "" && requestURI != "":
		return fosite.ErrInvalidRequest.WithHint("Send either request or request_uri, not both.")
	case requestURI != "":
		return fosite.ErrRequestURINotSupported.WithHint("Only request_uri values issued by this server's pushed authorization request endpoint are accepted.")
	}
	claims, alg, err := unverifiedRequestObject(object)
	if err != nil {
		return err
	}
	if !slices.Contains(requestObjectAlgs, alg) {
		return fosite.ErrInvalidRequestObject.WithHintf("The request object must be signed with one of %s; '%s' is refused.", strings.Join(requestObjectAlgs, ", "), alg)
	}
	clientID := form.Get("client_id")
	_, nestedObject := claims["request"]
	_, nestedURI := claims["request_uri"]
	if nestedObject || nestedURI {
		return fosite.ErrInvalidRequestObject.WithHint("A request object must not contain request or request_uri.")
	}
	if clientID != "" {
		// At the PAR endpoint a client authenticated by HTTP Basic or an assertion may
		// send no client_id: requestObjectClient checks once fosite knows the client.
		if err := objectNamesClient(claims, clientID); err != nil {
			return err
		}
	}
	if aud, ok := claims["aud"]; ok && !audienceContains(aud, p.cfg.Issuer) {
		return fosite.ErrInvalidRequestObject.WithHintf("The request object's aud must contain the issuer '%s'.", p.cfg.Issuer)
	}
	// fosite answers an expired object with a bare error, a 500: refuse it here first.
	now := p.now()
	if exp, ok := claims["exp"]; ok {
		if e, isNum := exp.(float64); !isNum || now.After(time.Unix(int64(e), 0)) {
			return fosite.ErrInvalidRequestObject.WithHint("The request object has expired.")
		}
	}
	if nbf, ok := claims["nbf"]; ok {
		if n, isNum := nbf.(float64); !isNum || now.Before(time.Unix(int64(n), 0)) {
			return fosite.ErrInvalidRequestObject.WithHint("The request object is not valid yet.")
		}
	}
	query := fosite.RemoveEmpty(strings.Split(form.Get("scope"), " "))
	if slices.Contains(query, "openid") {
		return nil
	}
	scope, _ := claims["scope"].(string)
	if !slices.Contains(strings.Split(scope, " "), "openid") {
		return fosite.ErrRequestNotSupported.WithHint("Request objects are accepted for OpenID Connect requests: the scope must contain openid.")
	}
	form.Set("scope", strings.Join(append(query, "openid"), " "))
	return nil
}

// outsideRequestObject are the parameters of an authorization request with a request
// object that are read from outside it: client_id (RFC 9101 §5), and response_type, which
// OpenID Connect Core §6.1 requires in the query too (the object's, when it has one,
// wins), besides request itself and request_uri (so that sending both is refused). The
// query's scope is requestObjectForm's to settle.
var outsideRequestObject = []string{"client_id", "response_type", "request", "request_uri"}

// outsidePushedRequestObject are outsideRequestObject and the client's credentials, for a
// request object pushed to the PAR endpoint: the client authenticates beside it (RFC 9126
// §2.1).
var outsidePushedRequestObject = append(slices.Clone(outsideRequestObject), "client_secret", "client_assertion", "client_assertion_type")

// requestObjectForm returns the parameters of an authorization request that carries a
// request object (form's request) as RFC 9101 §6.3 has the server use them: only the
// object's, "even if the same parameter is provided in the query". What the object leaves
// out (a nonce, a code_challenge, claims, a state) is not taken from the unsigned query,
// which anyone on the way may have changed. Of form it keeps only the parameters named in
// outside, and scope: OpenID Connect Core §6.1 has the query's scope carry openid, which
// tells fosite to read the object (checkRequestObject), so when the object has a scope the
// query's is cut to openid (fosite adds the query's scopes to the object's), and when the
// object has none the query's stands, as Core §6.1 requires it to be sent.
func requestObjectForm(form url.Values, outside []string) url.Values {
	out := url.Values{}
	for _, k := range outside {
		if v, ok := form[k]; ok {
			out[k] = v
		}
	}
	scope := form["scope"]
	claims, _, err := unverifiedRequestObject(form.Get("request"))
	if err == nil {
		if _, ok := claims["scope"]; ok {
			scope = nil
			if slices.Contains(strings.Fields(form.Get("scope")), "openid") {
				scope = []string{"openid"}
			}
		}
	}
	if scope != nil {
		out["scope"] = scope
	}
	if resources := claimStrings(claims["resource"]); len(resources) > 0 {
		// fosite reads the audience before it copies the object's claims into the form;
		// mergeResources merges these (the object is verified before any is used).
		out["resource"] = resources
	}
	return out
}

// objectNamesClient refuses request object claims whose client_id or iss, when present,
// are not clientID.
func objectNamesClient(claims map[string]any, clientID string) error {
	if id, ok := claims["client_id"]; ok && id != clientID {
		return fosite.ErrInvalidRequestObject.WithHint("The request object's client_id differs from the request's client_id.")
	}
	if iss, ok := claims["iss"]; ok && iss != clientID {
		return fosite.ErrInvalidRequestObject.WithHint("The request object's iss must be the client id.")
	}
	return nil
}

// requestObjectClient checks, once fosite has verified the request object of ar (if any)
// with its client's keys, that the object names that client.
func requestObjectClient(ar fosite.AuthorizeRequester) error {
	object := ar.GetRequestForm().Get("request")
	if object == "" {
		return nil
	}
	claims, _, err := unverifiedRequestObject(object)
	if err != nil {
		return err
	}
	return objectNamesClient(claims, ar.GetClient().GetID())
}

// unverifiedRequestObject returns the claims and algorithm of a request object without
// verifying it.
func unverifiedRequestObject(object string) (map[string]any, string, error) {
	tok, err := jwt.ParseSigned(object)
	if err != nil || len(tok.Headers) != 1 {
		return nil, "", fosite.ErrInvalidRequestObject.WithHint("The request object is not a signed JWT in compact serialization; unsigned request objects are refused.")
	}
	claims := map[string]any{}
	if err := tok.UnsafeClaimsWithoutVerification(&claims); err != nil {
		return nil, "", fosite.ErrInvalidRequestObject.WithHint("The request object's claims are not a JSON object.")
	}
	return claims, tok.Headers[0].Algorithm, nil
}

// audienceContains reports whether a JWT aud claim (a string or an array) contains want.
func audienceContains(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, v := range a {
			if v == want {
				return true
			}
		}
	}
	return false
}

// settleRequestObject runs once fosite has verified the request object of form and copied
// its claims over the query's parameters. fosite writes every claim with %s, which garbles
// numbers (max_age) and JSON values (claims); they are written again here as OpenID Connect
// Core §6.1 means them: numbers in decimal, objects and arrays as JSON text. The object's
// own metadata claims (iss, aud, exp, …) and the object itself are dropped: the form is what
// the request asks for, and a paused request resumes from it without the object, whose
// lifetime may be shorter than the login.
func settleRequestObject(form url.Values) {
	object := form.Get("request")
	if object == "" {
		return
	}
	claims, _, err := unverifiedRequestObject(object)
	if err != nil {
		return // fosite verified it: it parses
	}
	for name, value := range claims {
		if name == "resource" {
			// RFC 8707 §2: one parameter per resource, as the query would carry them.
			form["resource"] = claimStrings(value)
			continue
		}
		switch v := value.(type) {
		case string:
		case float64:
			form.Set(name, strconv.FormatFloat(v, 'f', -1, 64))
		case bool:
			form.Set(name, strconv.FormatBool(v))
		default:
			if b, err := json.Marshal(v); err == nil {
				form.Set(name, string(b))
			} else {
				form.Set(name, fmt.Sprint(v))
			}
		}
	}
	for _, name := range requestObjectMetadata {
		if _, ok := claims[name]; ok {
			form.Del(name)
		}
	}
	form.Del("request")
}
