package provider

import (
	"context"
	"net/http"
	"net/url"

	"github.com/ory/fosite"
)

// singleClientAuthentication is the client authentication of the token, revocation,
// introspection, PAR and device authorization endpoints: authenticate (clientAuthenticator, which holds each
// client to its registered method), plus three rules of RFC 6749 checked before it.
//   - A request that authenticates twice (HTTP Basic and a client_secret or
//     client_assertion in the form) is invalid_request (§2.3: one method per request).
//   - A request with no client credentials at all is invalid_client (§5.2).
//   - A public client has no secret; one that sends a secret is invalid_client, as any
//     client whose credentials do not match.
func singleClientAuthentication(authenticate fosite.ClientAuthenticationStrategy) fosite.ClientAuthenticationStrategy {
	return func(ctx context.Context, r *http.Request, form url.Values) (fosite.Client, error) {
		_, basicSecret, basic := r.BasicAuth()
		formSecret := form.Get("client_secret")
		if basic && (formSecret != "" || form.Get("client_assertion") != "") {
			return nil, fosite.ErrInvalidRequest.WithHint("The client authenticated twice: use HTTP Basic or the form's client credentials, never both.")
		}
		if !basic && form.Get("client_id") == "" && form.Get("client_assertion") == "" {
			return nil, fosite.ErrInvalidClient.WithHint("Client authentication is required.")
		}
		client, err := authenticate(ctx, r, form)
		if err != nil {
			return nil, err
		}
		if client.IsPublic() && (basicSecret != "" || formSecret != "") {
			return nil, fosite.ErrInvalidClient.WithHint("A public client has no secret and must not send one.")
		}
		return client, nil
	}
}

// basicChallenge wraps an endpoint that authenticates clients so that its 401 answers carry
// WWW-Authenticate: Basic, as RFC 6749 §5.2 asks of an answer to HTTP Basic (and HTTP asks
// of every 401). The realm is the issuer.
func (p *Provider) basicChallenge(next http.HandlerFunc) http.HandlerFunc {
	challenge := `Basic realm=` + quoted(p.cfg.Issuer)
	return func(w http.ResponseWriter, r *http.Request) {
		next(&challengeWriter{ResponseWriter: w, challenge: challenge}, r)
	}
}

// challengeWriter adds WWW-Authenticate to a 401 answer.
type challengeWriter struct {
	http.ResponseWriter
	challenge string
}

func (c *challengeWriter) WriteHeader(status int) {
	if status == http.StatusUnauthorized {
		c.Header().Set("WWW-Authenticate", c.challenge)
	}
	c.ResponseWriter.WriteHeader(status)
}
