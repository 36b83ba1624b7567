package provider

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
)

// An authorization request costs its sender nothing and may cost the provider a row: it is
// paused for the login or consent page (for LoginRequestLifespan), pushed to the PAR
// endpoint, or kept with the code it earns. So what a request may carry is capped, and how
// many requests one IP or one client may leave stored is limited.

// Caps on the parameters of an authorization request, in bytes, far above what relying
// parties send (a state is commonly 32 to 200 characters, and ASP.NET's encrypted state,
// among the longest, about 1,500; OpenID conformance sends 128), and the stored form's cap
// on the whole. Over a cap the request is refused (invalid_request, or
// invalid_request_object for a request object) before anything is stored.
const (
	maxStateBytes      = 4 << 10
	maxNonceBytes      = 2 << 10
	maxClaimsBytes     = 4 << 10
	maxLoginHintBytes  = 1 << 10
	maxRequestObjBytes = 16 << 10
	// maxStoredFormBytes caps an authorization request's form as stored (URL-encoded): the
	// paused request, the pushed request, the code's row.
	maxStoredFormBytes = 8 << 10
)

// parameterCaps are the capped parameters of an authorization request, each with its cap.
var parameterCaps = []struct {
	name string
	max  int
}{
	{"state", maxStateBytes}, {"nonce", maxNonceBytes}, {"claims", maxClaimsBytes},
	{"login_hint", maxLoginHintBytes}, {"request", maxRequestObjBytes},
}

// oversizedRequest refuses an authorization request form whose capped parameters exceed
// their caps: a request object is invalid_request_object, anything else invalid_request,
// naming the parameter and its cap. object says the parameters came from a request
// object, whose fault any excess then is.
func oversizedRequest(form url.Values, object bool) error {
	for _, c := range parameterCaps {
		for _, v := range form[c.name] {
			if len(v) <= c.max {
				continue
			}
			hint := fmt.Sprintf("The %s parameter is longer than %d bytes.", c.name, c.max)
			if object || c.name == "request" {
				return fosite.ErrInvalidRequestObject.WithHint(hint)
			}
			return fosite.ErrInvalidRequest.WithHint(hint)
		}
	}
	return nil
}

// oversizedStoredForm refuses an authorization request whose form, as it would be stored,
// exceeds maxStoredFormBytes, or whose capped parameters exceed theirs (oversizedRequest).
func oversizedStoredForm(form url.Values, object bool) error {
	if err := oversizedRequest(form, object); err != nil {
		return err
	}
	if n := len(form.Encode()); n > maxStoredFormBytes {
		hint := fmt.Sprintf("The authorization request's parameters take %d bytes, more than the %d accepted.", n, maxStoredFormBytes)
		if object {
			return fosite.ErrInvalidRequestObject.WithHint(hint)
		}
		return fosite.ErrInvalidRequest.WithHint(hint)
	}
	return nil
}

// Kinds of stored authorization requests, each limited on its own.
const (
	storedPaused = "paused"
	storedPushed = "pushed"
)

// limitStoredRequest counts one stored authorization request of kind (storedPaused or
// storedPushed) for the IP of r, when byIP, then for clientID, against
// PublicAuthConfig.AuthorizeIPLimit and AuthorizeClientLimit; over either it returns a
// *publicauth.RateLimitError. A request refused for its IP is not counted against its
// client, so one address cannot use up a client's allowance. A limiter failure is logged
// and lets the request through: the limits guard against floods, and must not take
// sign-in down with them.
func (p *Provider) limitStoredRequest(ctx context.Context, r *http.Request, kind, clientID string, byIP bool) error {
	type limit struct {
		key  string
		rate RateLimit
	}
	var limits []limit
	if byIP {
		ip := publicauth.LimitKeyForIP(publicauth.ClientIP(r, p.cfg.PublicAuth.TrustedProxies))
		limits = append(limits, limit{"authorize-" + kind + ":ip:" + ip, p.cfg.PublicAuth.AuthorizeIPLimit})
	}
	limits = append(limits, limit{"authorize-" + kind + ":client:" + clientID, p.cfg.PublicAuth.AuthorizeClientLimit})
	for _, l := range limits {
		if l.rate.Limit < 0 {
			continue
		}
		ok, retryAfter, err := p.limiter.Hit(ctx, l.key, l.rate.Limit, l.rate.Window)
		switch {
		case err != nil:
			p.log.Log(ctx, publicauth.LimiterLogLevel(err), "rate limiter failed; authorization request let through", "error", err)
		case !ok:
			return &publicauth.RateLimitError{RetryAfter: retryAfter}
		}
	}
	return nil
}

// writeSlowDown answers a client over a rate limit of the OAuth endpoints: 429 with
// Retry-After and the RFC 6749 error shape, error slow_down (the code RFC 8628 §3.5 gives
// a client that must wait), as the token endpoint does.
func writeSlowDown(w http.ResponseWriter, err error, description string) {
	seconds, _ := publicauth.RetryAfterSeconds(err)
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	httpjson.Write(w, http.StatusTooManyRequests, map[string]string{"error": "slow_down", "error_description": description})
}
