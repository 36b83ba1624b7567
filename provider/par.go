package provider

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/par"

	"github.com/gatehouse-id/gatehouse/storage"
)

// Pushed authorization requests (RFC 9126). A client posts its authorization request to
// /api/oauth/par, authenticated as at the token endpoint, and gets a request_uri that
// stands for it; the browser then brings only client_id and request_uri to the
// authorization endpoint. fosite's handler validates and answers the push; Gatehouse keeps
// the pushed request (pushedRequests) and consumes it at the authorization endpoint itself
// (pushedAuthorizeRequest): one conditional delete, bound to the client, so a request_uri
// is used once even by racing requests, and only by the client that pushed it.

const (
	// parRequestURIPrefix begins every request_uri the PAR endpoint issues (RFC 9126 §2.2).
	parRequestURIPrefix = "urn:ietf:params:oauth:request_uri:"
	// pushedRequestLifespan is how long a request_uri may be used: long enough for a
	// redirect, short enough that a leaked one is soon worthless (RFC 9126 §2.2 suggests
	// 5 to 600 seconds).
	pushedRequestLifespan = 60 * time.Second
	// maxPushedRequestBytes caps the body of a push. Any client may push (a public one with
	// its client_id alone), and each push is a stored row: a request that would not fit in
	// a URL has no business here.
	maxPushedRequestBytes = 64 << 10
)

// pushedRequestStore keeps pushed authorization requests; *storage.Store implements it.
type pushedRequestStore interface {
	// CreatePushedRequest stores r: ErrConflict for an existing id hash, ErrNotFound for an
	// unknown client.
	CreatePushedRequest(ctx context.Context, r *storage.PushedRequest) error
	// ConsumePushedRequest deletes and returns the request with that id hash pushed by
	// clientID and expiring after now, once: storage.ErrNotFound for any other.
	ConsumePushedRequest(ctx context.Context, idHash, clientID string, now time.Time) (*storage.PushedRequest, error)
}

// pushedRequests is the PARStorage of fosite's PAR handler: it stores a pushed request
// under the hash of its request_uri, without the client's credentials, for
// pushedRequestLifespan by the provider's clock.
type pushedRequests struct {
	store pushedRequestStore
	now   func() time.Time
}

var _ fosite.PARStorage = pushedRequests{}

// CreatePARSession stores the pushed request ar under requestURI.
func (s pushedRequests) CreatePARSession(ctx context.Context, requestURI string, ar fosite.AuthorizeRequester) error {
	now := s.now().UTC()
	clientID := ar.GetClient().GetID()
	return s.store.CreatePushedRequest(ctx, &storage.PushedRequest{
		IDHash:      hashToken(requestURI),
		ClientID:    clientID,
		Form:        pushedForm(ar.GetRequestForm(), clientID).Encode(),
		RequestedAt: now,
		ExpiresAt:   now.Add(pushedRequestLifespan),
	})
}

// GetPARSession is never called: fosite reads a pushed request and deletes it in two steps,
// for whichever client presents it, so the authorization endpoint consumes pushed requests
// itself (pushedAuthorizeRequest) and fosite never sees a request_uri. It refuses, so that
// nothing could ever take the two-step path.
func (pushedRequests) GetPARSession(context.Context, string) (fosite.AuthorizeRequester, error) {
	return nil, fosite.ErrInvalidRequestURI.WithHint("Pushed requests are consumed by the authorization endpoint only.")
}

// DeletePARSession is never called, for the reason GetPARSession gives; consuming a pushed
// request deletes it.
func (pushedRequests) DeletePARSession(context.Context, string) error { return nil }

// pushedForm is the form of a pushed request as stored: the parameters the client pushed,
// client_id set to the authenticated client, without the client's credentials (a secret
// or an assertion is never stored) or a request object (fosite has verified it and merged
// its parameters into the form).
func pushedForm(form url.Values, clientID string) url.Values {
	out := url.Values{}
	for k, v := range form {
		switch k {
		case "client_secret", "client_assertion", "client_assertion_type", "request", "request_uri":
		default:
			out[k] = v
		}
	}
	out.Set("client_id", clientID)
	return out
}

// newPushedAuthorizeHandler is fosite's PAR handler, storing into store; it sets the PAR
// settings of fc.
func newPushedAuthorizeHandler(fc *fosite.Config, store pushedRequestStore, now func() time.Time) *par.PushedAuthorizeHandler {
	fc.PushedAuthorizeRequestURIPrefix = parRequestURIPrefix
	fc.PushedAuthorizeContextLifespan = pushedRequestLifespan
	// Enforcement is Gatehouse's, per client too (parseAuthorizeRequest).
	fc.IsPushedAuthorizeEnforced = false
	if now == nil {
		now = time.Now
	}
	return &par.PushedAuthorizeHandler{Storage: pushedRequests{store: store, now: now}, Config: fc}
}

// pushAuthorize is the pushed authorization request endpoint (RFC 9126 §2). The client
// authenticates as at the token endpoint (§2.1); the request is validated as the
// authorization endpoint would (client, registered redirect URI, response type, scopes,
// audience, PKCE with S256). The answer is 201 with request_uri and expires_in (§2.2); a
// refusal is an RFC 6749 error (§2.3): invalid_client (401, with the Basic challenge) for
// failed client authentication, invalid_request for a request_uri sent here (§2.1), a
// query string, or a client_id that is not the authenticated client's.
func (p *Provider) pushAuthorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxPushedRequestBytes)
	ar, err := p.newPushedAuthorizeRequest(ctx, r)
	if err != nil {
		p.pushError(w, r, ar, err)
		return
	}
	// Anyone may push as a public client, from any address: its pushes count by IP too.
	if err := p.limitStoredRequest(ctx, r, storedPushed, ar.GetClient().GetID(), ar.GetClient().IsPublic()); err != nil {
		writeSlowDown(w, err, "Too many pushed authorization requests; retry after the Retry-After delay.")
		return
	}
	resp, err := p.oauth.NewPushedAuthorizeResponse(ctx, ar, newSession())
	if err != nil {
		p.pushError(w, r, ar, err)
		return
	}
	p.oauth.WritePushedAuthorizeResponse(ctx, w, ar, resp)
}

// newPushedAuthorizeRequest authenticates the client and validates its pushed request.
func (p *Provider) newPushedAuthorizeRequest(ctx context.Context, r *http.Request) (fosite.AuthorizeRequester, error) {
	if r.URL.RawQuery != "" {
		// Parameters go in the body (§2.1); a query would be merged into them, and client
		// credentials in a URL end up in logs.
		return nil, fosite.ErrInvalidRequest.WithHint("Send the pushed authorization request's parameters in the form body, not in the URL.")
	}
	// fosite parses the body the same way next and reads the audience from r.Form.
	if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return nil, fosite.ErrInvalidRequest.WithHintf("The request body could not be read; it may hold at most %d bytes.", maxPushedRequestBytes).WithWrap(err)
	}
	if err := oversizedRequest(r.Form, false); err != nil {
		return nil, err
	}
	resourceErr := mergeResources(r.Form)
	if id, _, ok := r.BasicAuth(); ok && r.Form.Get("client_id") != "" {
		// fosite authenticates the Basic client but validates the request of the form's
		// client_id: they must be one client.
		if basicID, err := url.QueryUnescape(id); err != nil || basicID != r.Form.Get("client_id") {
			return nil, fosite.ErrInvalidRequest.WithHint("The client_id does not name the authenticated client.")
		}
	}
	if r.Form.Get("request") != "" {
		// A pushed request object stands for the request, as at the authorization
		// endpoint, beside the client's credentials; it is checked as there, and a pushed
		// request_uri is fosite's invalid_request (§2.1).
		r.Form, r.PostForm = requestObjectForm(r.Form, outsidePushedRequestObject), url.Values{}
		if err := p.checkRequestObject(r.Form); err != nil {
			return nil, err
		}
	}
	ar, err := p.oauth.NewPushedAuthorizeRequest(ctx, r)
	if err != nil {
		return ar, err
	}
	if err := requestObjectClient(ar); err != nil {
		return ar, err
	}
	object := ar.GetRequestForm().Get("request") != ""
	settleRequestObject(ar.GetRequestForm())
	if err := oversizedStoredForm(pushedForm(ar.GetRequestForm(), ar.GetClient().GetID()), object); err != nil {
		return ar, err
	}
	if resourceErr != nil {
		return ar, resourceErr
	}
	if err := checkClaimsParameter(ar); err != nil {
		return ar, err
	}
	return ar, p.checkPKCE(ar)
}

// pushError answers a refused push in the RFC 6749 shape (RFC 9126 §2.3).
func (p *Provider) pushError(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, err error) {
	err = asTemporarilyUnavailable(err)
	p.logServerError(r, "pushed authorization request failed", err)
	p.oauth.WritePushedAuthorizeError(r.Context(), w, ar, err)
}

// parseAuthorizeRequest parses a request arriving at the authorization endpoint. One that
// carries a request_uri stands for a pushed request (pushedAuthorizeRequest). Any other is
// parsed as sent, and refused with invalid_request when its client must push its requests
// (Config.RequirePAR, ClientSpec.RequirePAR).
func (p *Provider) parseAuthorizeRequest(ctx context.Context, r *http.Request) (fosite.AuthorizeRequester, error) {
	if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return nil, fosite.ErrInvalidRequest.WithHint("Unable to parse the HTTP body.").WithWrap(err)
	}
	if r.Form.Has("request_uri") {
		return p.pushedAuthorizeRequest(ctx, r)
	}
	ar, err := p.newAuthorizeRequest(ctx, r)
	if ar != nil && ar.GetClient() != nil && p.requiresPAR(ar.GetClient()) {
		return ar, fosite.ErrInvalidRequest.WithHint("This client must push its authorization requests to the pushed authorization request endpoint and send only client_id and request_uri here.")
	}
	return ar, err
}

// requiresPAR reports whether client may start authorizations only with a pushed request.
func (p *Provider) requiresPAR(client fosite.Client) bool {
	c, ok := client.(*storage.Client)
	return p.cfg.RequirePAR || (ok && c.RequirePAR)
}

// pushedAuthorizeRequest consumes the pushed request that the request_uri of r names and
// parses it as the authorization request (RFC 9126 §4): every other parameter of r but
// client_id is ignored. The request_uri must be one the PAR endpoint issued to the client
// that r's client_id names, unexpired and not yet used, else invalid_request_uri; then it
// is spent, whatever follows. Without a verified redirect URI, these errors are shown on
// the error page, never redirected.
func (p *Provider) pushedAuthorizeRequest(ctx context.Context, r *http.Request) (fosite.AuthorizeRequester, error) {
	requestURI, clientID := r.Form.Get("request_uri"), r.Form.Get("client_id")
	if clientID == "" {
		return nil, fosite.ErrInvalidRequest.WithHint("The client_id parameter is required with request_uri.")
	}
	if !strings.HasPrefix(requestURI, parRequestURIPrefix) {
		// Gatehouse never fetches a request_uri (OpenID Connect Core §6.2). As for a request
		// object, the error is redirected when the rest of the request names a registered
		// redirect URI.
		err := fosite.ErrRequestURINotSupported.WithHint("Only a request_uri issued by this provider's pushed authorization request endpoint is accepted.")
		if plain := p.withoutRequestObject(ctx, r); plain != nil && plain.IsRedirectURIValid() {
			return plain, err
		}
		return nil, err
	}
	row, err := p.store.ConsumePushedRequest(ctx, hashToken(requestURI), clientID, p.now())
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fosite.ErrInvalidRequestURI.WithHint("The request_uri is unknown, expired, already used, or was pushed by another client.")
	}
	if err != nil {
		return nil, fosite.ErrServerError.WithWrap(err).WithDebug(err.Error())
	}
	form, err := url.ParseQuery(row.Form)
	if err != nil {
		return nil, fosite.ErrServerError.WithWrap(err).WithDebug(err.Error())
	}
	form.Set("client_id", row.ClientID)
	return p.newAuthorizeRequest(ctx, replayAuthorizeRequest(r, form.Encode()))
}

// replayAuthorizeRequest is r turned into a GET of the authorization endpoint whose query
// is form, for parsing a stored request (pushed or paused) again through fosite.
func replayAuthorizeRequest(r *http.Request, form string) *http.Request {
	replay := r.Clone(r.Context())
	replay.Method = http.MethodGet
	replay.URL = &url.URL{Path: "/api/oauth/authorize", RawQuery: form}
	replay.Body, replay.Form, replay.PostForm, replay.MultipartForm = http.NoBody, nil, nil, nil
	replay.Header = r.Header.Clone()
	replay.Header.Del("Content-Type")
	return replay
}
