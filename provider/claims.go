package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// The standard claims (OpenID Connect Core §5.1) and the `claims` request parameter
// (§5.5).
//
// Consent is given by scope, so a scope decides whether a claim may be released at all:
// `profile`, `email`, `phone` and `address` each release the claims of §5.4. The ID token
// carries email, email_verified and name (as the SSO interface's ID token table shows);
// the other claims of the granted scopes go to userinfo, and into the ID token only when
// the `claims` parameter asks for them there. The parameter cannot widen what the user
// consented to: a claim it asks for outside the granted scopes is not released, essential
// or not (§5.5.1 lets a provider withhold one). A claim asked for with `value` or `values`
// is released only when the user's value is one of them.

// scopeClaims are the claims each scope releases (Core §5.4).
var scopeClaims = map[string][]string{
	"profile": {"name", "family_name", "given_name", "middle_name", "nickname", "preferred_username",
		"profile", "picture", "website", "gender", "birthdate", "zoneinfo", "locale", "updated_at"},
	"email":   {"email", "email_verified"},
	"phone":   {"phone_number", "phone_number_verified"},
	"address": {"address"},
}

// idTokenDefaultClaims are the standard claims an ID token carries without being asked.
var idTokenDefaultClaims = []string{"email", "email_verified", "name"}

// standardClaimScope is the scope that releases the standard claim name, or "" for a name
// that is not a standard claim.
func standardClaimScope(name string) string {
	for scope, names := range scopeClaims {
		if slices.Contains(names, name) {
			return scope
		}
	}
	return ""
}

// Limits of the `claims` parameter: a request is refused past them.
const (
	maxClaimsParameterBytes = 8 << 10
	maxClaimsPerTarget      = 64
)

// claimsParameter is a parsed `claims` request parameter (Core §5.5): the claims asked
// for in the ID token and at userinfo, by name. It is stored with the grant (Session).
type claimsParameter struct {
	IDToken  map[string]*claimRequest `json:"id_token,omitempty"`
	Userinfo map[string]*claimRequest `json:"userinfo,omitempty"`
}

// claimRequest is one claim's request (Core §5.5.1); nil (JSON null) asks for the claim
// with no condition.
type claimRequest struct {
	Essential bool            `json:"essential,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Values    []any           `json:"values,omitempty"`
}

// parseClaimsParameter parses the `claims` parameter raw; "" is no request (nil). Members
// other than id_token and userinfo are ignored, as §5.5 says. A malformed value is
// fosite's invalid_request.
func parseClaimsParameter(raw string) (*claimsParameter, error) {
	if raw == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return fosite.ErrInvalidRequest.WithHintf("The claims parameter %s.", why)
	}
	if len(raw) > maxClaimsParameterBytes {
		return nil, bad(fmt.Sprintf("must be at most %d bytes", maxClaimsParameterBytes))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &top); err != nil || top == nil {
		return nil, bad("must be a JSON object")
	}
	cp := &claimsParameter{}
	for _, target := range []struct {
		name string
		dst  *map[string]*claimRequest
	}{{ClaimsIDToken, &cp.IDToken}, {ClaimsUserinfo, &cp.Userinfo}} {
		member, ok := top[target.name]
		if !ok || string(member) == "null" {
			continue
		}
		var entries map[string]json.RawMessage
		if err := json.Unmarshal(member, &entries); err != nil || entries == nil {
			return nil, bad("member " + target.name + " must be a JSON object")
		}
		if len(entries) > maxClaimsPerTarget {
			return nil, bad(fmt.Sprintf("member %s may ask for %d claims at most", target.name, maxClaimsPerTarget))
		}
		out := make(map[string]*claimRequest, len(entries))
		for name, entry := range entries {
			if name == "" {
				return nil, bad("names an empty claim")
			}
			if string(entry) == "null" {
				out[name] = nil
				continue
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(entry, &fields); err != nil || fields == nil {
				return nil, bad("asks for claim " + name + " with neither null nor a JSON object")
			}
			req := &claimRequest{}
			if e, ok := fields["essential"]; ok && json.Unmarshal(e, &req.Essential) != nil {
				return nil, bad("gives claim " + name + " an essential that is not a boolean")
			}
			if v, ok := fields["value"]; ok {
				req.Value = v
			}
			if v, ok := fields["values"]; ok && (json.Unmarshal(v, &req.Values) != nil || len(req.Values) == 0) {
				return nil, bad("gives claim " + name + " values that are not a non-empty JSON array")
			}
			out[name] = req
		}
		*target.dst = out
	}
	return cp, nil
}

// admits reports whether the claim request r lets value be released: no value or values
// asked for, or value equal (as JSON) to one of them.
func (r *claimRequest) admits(value any) bool {
	if r == nil || (len(r.Value) == 0 && len(r.Values) == 0) {
		return true
	}
	got, err := json.Marshal(value)
	if err != nil {
		return false
	}
	if len(r.Value) > 0 && jsonEqual(r.Value, got) {
		return true
	}
	for _, v := range r.Values {
		if want, err := json.Marshal(v); err == nil && jsonEqual(want, got) {
			return true
		}
	}
	return false
}

// jsonEqual compares two JSON texts by their compact form.
func jsonEqual(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// userStandardClaims are the standard claims user has a value for, by name: email,
// email_verified, name, updated_at and the profile of Gatehouse's own users; for an
// account of a store given with WithAccounts, the standard claims among its
// Account.Claims (email, email_verified, name and updated_at excepted: those are
// Gatehouse's).
func userStandardClaims(user *publicauth.User) map[string]any {
	out := map[string]any{"email": user.Email, "email_verified": user.EmailVerified, "name": user.Name}
	if !user.UpdatedAt.IsZero() {
		out["updated_at"] = user.UpdatedAt.Unix()
	}
	for name, value := range user.Claims {
		if standardClaimScope(name) != "" && !slices.Contains(ReservedClaims, name) {
			out[name] = value
		}
	}
	p := user.Profile
	for name, value := range map[string]string{
		"given_name": p.GivenName, "family_name": p.FamilyName, "middle_name": p.MiddleName,
		"nickname": p.Nickname, "preferred_username": p.PreferredUsername, "profile": p.Profile,
		"picture": p.Picture, "website": p.Website, "gender": p.Gender, "birthdate": p.Birthdate,
		"zoneinfo": p.Zoneinfo, "locale": p.Locale, "phone_number": p.PhoneNumber,
	} {
		if value != "" {
			out[name] = value
		}
	}
	if p.PhoneNumber != "" {
		out["phone_number_verified"] = p.PhoneNumberVerified
	}
	if a := p.Address; !a.IsZero() {
		address := map[string]any{}
		for name, value := range map[string]string{
			"formatted": a.Formatted, "street_address": a.StreetAddress, "locality": a.Locality,
			"region": a.Region, "postal_code": a.PostalCode, "country": a.Country,
		} {
			if value != "" {
				address[name] = value
			}
		}
		out["address"] = address
	}
	return out
}

// releaseStandardClaims adds to dst the standard claims of user that scopes release for one
// target: all of them (userinfo), or only idTokenDefaultClaims and those asked names
// (the ID token). A claim asked for with value or values is released only when it
// matches.
func releaseStandardClaims(dst map[string]any, user *publicauth.User, scopes fosite.Arguments, asked map[string]*claimRequest, all bool) {
	available := userStandardClaims(user)
	for scope, names := range scopeClaims {
		if !scopes.Has(scope) {
			continue
		}
		for _, name := range names {
			value, ok := available[name]
			if !ok {
				continue
			}
			req, wanted := asked[name]
			if !all && !wanted && !slices.Contains(idTokenDefaultClaims, name) {
				continue
			}
			if req.admits(value) {
				dst[name] = value
			}
		}
	}
}

// idTokenClaims sets on the session s of a user grant what its ID token says of user:
// the standard claims (releaseStandardClaims, the ID token's share), the account's own
// claims with `profile` (accountClaims), and the parsed `claims` parameter, stored with the
// grant for userinfo.
func (p *Provider) idTokenClaims(ctx context.Context, s *Session, user *publicauth.User, ar fosite.AuthorizeRequester) {
	// newAuthorizeRequest has refused a malformed parameter.
	cp, _ := parseClaimsParameter(ar.GetRequestForm().Get("claims"))
	s.ClaimsRequest = cp
	var asked map[string]*claimRequest
	if cp != nil {
		asked = cp.IDToken
	}
	if req, ok := asked["acr"]; ok && req.admits(acrSingleFactor) {
		// Every Gatehouse login is one factor: the only acr it can state.
		s.Claims.AuthenticationContextClassReference = acrSingleFactor
	}
	scopes := ar.GetGrantedScopes()
	releaseStandardClaims(s.Claims.Extra, user, scopes, asked, false)
	p.accountClaims(ctx, s.Claims.Extra, user, scopes)
}

// claimUserinfoRequest is the private access token claim that carries the `userinfo`
// member of the grant's `claims` parameter to the userinfo endpoint, which sees only the
// token (a JWT it verifies; no grant is read).
const claimUserinfoRequest = "userinfo_claims"

// userinfoRequest is the `userinfo` member an access token carries, or nil.
func userinfoRequest(at *AccessToken) map[string]*claimRequest {
	raw, ok := at.Claims[claimUserinfoRequest]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var out map[string]*claimRequest
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// claimsSupported lists, for discovery, the claims Gatehouse issues: the protocol claims
// of its tokens, then the standard claims of every scope.
func claimsSupported() []string {
	out := []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "azp", "acr", "amr"}
	for _, scope := range []string{"email", "profile", "phone", "address"} {
		out = append(out, scopeClaims[scope]...)
	}
	return out
}

// requestedSubject is the `sub` value the `claims` parameter of form asks the ID token for
// (Core §5.5.1: only that user may be answered positively), or "" when it asks none.
func requestedSubject(form url.Values) string {
	cp, _ := parseClaimsParameter(form.Get("claims"))
	if cp == nil || cp.IDToken["sub"] == nil {
		return ""
	}
	var sub string
	if json.Unmarshal(cp.IDToken["sub"].Value, &sub) != nil {
		return ""
	}
	return sub
}

// checkClaimsParameter refuses an authorization request (or a pushed one) whose `claims`
// parameter is malformed: invalid_request.
func checkClaimsParameter(ar fosite.AuthorizeRequester) error {
	_, err := parseClaimsParameter(ar.GetRequestForm().Get("claims"))
	return err
}
