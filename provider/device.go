package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/ui"
)

// The device authorization grant (RFC 8628): a device without a browser asks
// POST /api/oauth/device/code for a device code and a user code, shows the user code and
// the verification URI (the hosted /device page), and polls the token endpoint with the
// device code while the user signs in elsewhere and approves. fosite v0.49 has no handler
// for it; deviceGrantHandler is ours, on the same token strategies, refresh-token storage
// and ID token signer as the authorization code grant.

// GrantTypeDeviceCode is the device authorization grant's grant type. A client opts in by
// registering it (`client create --grant-type urn:ietf:params:oauth:grant-type:device_code`).
const GrantTypeDeviceCode = "urn:ietf:params:oauth:grant-type:device_code"

// DeviceConfig configures the device authorization grant.
type DeviceConfig struct {
	// CodeLifespan is how long a device code and its user code work: default
	// DefaultDeviceCodeLifespan (10 minutes), long enough to find a phone and sign in.
	CodeLifespan time.Duration
	// PollInterval is the least time the device must wait between two polls of the token
	// endpoint (the answer's interval): default DefaultDevicePollInterval (5 seconds, RFC
	// 8628 §3.2). A poll that arrives earlier than the interval, less a tolerance for
	// network jitter (a fifth of it, at most a second: pollTolerance), gets slow_down and
	// lengthens the code's interval by 5 s.
	PollInterval time.Duration
}

// Defaults of DeviceConfig.
const (
	DefaultDeviceCodeLifespan = 10 * time.Minute
	DefaultDevicePollInterval = 5 * time.Second
)

func (c DeviceConfig) withDefaults() (DeviceConfig, error) {
	if c.CodeLifespan == 0 {
		c.CodeLifespan = DefaultDeviceCodeLifespan
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultDevicePollInterval
	}
	var errs []error
	if c.CodeLifespan < time.Minute {
		errs = append(errs, errors.New("device code lifespan must be at least a minute"))
	}
	if c.PollInterval < time.Second || c.PollInterval%time.Second != 0 {
		errs = append(errs, errors.New("device poll interval must be a whole number of seconds, at least one"))
	}
	return c, errors.Join(errs...)
}

// The token endpoint's answers to a device code that yields no tokens (RFC 8628 §3.5).
// fosite v0.49 does not define them; every one is a 400, as the RFC's error responses are.
var (
	errAuthorizationPending = &fosite.RFC6749Error{ErrorField: "authorization_pending", CodeField: http.StatusBadRequest,
		DescriptionField: "The user has not yet approved or denied the request. Poll again after the interval."}
	errSlowDown = &fosite.RFC6749Error{ErrorField: "slow_down", CodeField: http.StatusBadRequest,
		DescriptionField: "The device polls too often: wait five seconds longer between polls from now on."}
	errExpiredToken = &fosite.RFC6749Error{ErrorField: "expired_token", CodeField: http.StatusBadRequest,
		DescriptionField: "The device code has expired. Start again with a new device authorization request."}
	errDeviceAccessDenied = &fosite.RFC6749Error{ErrorField: "access_denied", CodeField: http.StatusBadRequest,
		DescriptionField: "The user denied the request."}
)

// userCodeAlphabet is the user code's alphabet: twenty consonants, no vowels (no words)
// and none of the letters easily mistaken for digits or one another (RFC 8628 §6.1). Eight
// of them are 34.5 bits; with codes living ten minutes and the device page rate limited
// per IP, guessing a live one is hopeless.
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

const userCodeLength = 8

// newUserCode draws a user code, uniformly over the alphabet (rejection sampling).
func newUserCode(random io.Reader) (string, error) {
	const n = len(userCodeAlphabet)
	limit := byte(256 - 256%n)
	out := make([]byte, 0, userCodeLength)
	buf := make([]byte, 16)
	for len(out) < userCodeLength {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b < limit && len(out) < userCodeLength {
				out = append(out, userCodeAlphabet[int(b)%n])
			}
		}
	}
	return string(out), nil
}

// normalizeUserCode is the stored form of a typed user code: upper case, without the dash
// and the spaces people type; "" when what remains is no code of the alphabet.
func normalizeUserCode(typed string) string {
	code := strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ':
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, typed)
	if len(code) != userCodeLength {
		return ""
	}
	for _, r := range code {
		if !strings.ContainsRune(userCodeAlphabet, r) {
			return ""
		}
	}
	return code
}

// displayUserCode shows a stored user code as XXXX-XXXX.
func displayUserCode(code string) string {
	if len(code) != userCodeLength {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// deviceAuthorizationResponse is the answer of the device authorization endpoint (RFC 8628
// §3.2).
type deviceAuthorizationResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval"`
}

// deviceAuthorization is the device authorization endpoint (RFC 8628 §3.1). The client
// authenticates as at the token endpoint (a public client names itself with client_id),
// must have registered the device grant, and may ask only for its own scopes and
// audiences.
func (p *Provider) deviceAuthorization(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		p.deviceError(w, r, fosite.ErrInvalidRequest.WithHint("The request body could not be parsed.").WithWrap(err))
		return
	}
	form := r.PostForm
	client, err := p.oauth.AuthenticateClient(ctx, r, form)
	if err != nil {
		p.deviceError(w, r, err)
		return
	}
	if !client.GetGrantTypes().Has(GrantTypeDeviceCode) {
		p.deviceError(w, r, fosite.ErrUnauthorizedClient.WithHint("The client is not registered for the device authorization grant."))
		return
	}
	scopes := fosite.RemoveEmpty(strings.Split(form.Get("scope"), " "))
	for _, s := range scopes {
		if !fosite.ExactScopeStrategy(client.GetScopes(), s) {
			p.deviceError(w, r, fosite.ErrInvalidScope.WithHintf("The client may not ask for scope %q.", s))
			return
		}
	}
	if err := mergeResources(form); err != nil {
		p.deviceError(w, r, err)
		return
	}
	audience := fosite.GetAudiences(form)
	if err := matchAudience(client.GetAudience(), audience); err != nil {
		p.deviceError(w, r, err)
		return
	}
	stored := url.Values{"scope": {strings.Join(scopes, " ")}}
	if len(audience) > 0 {
		stored["audience"] = audience
	}
	now := p.now().UTC()
	var deviceCode string
	row := &storage.DeviceCode{ClientID: client.GetID(), Form: stored.Encode(), RequestedAt: now,
		ExpiresAt: now.Add(p.cfg.Device.CodeLifespan), PollInterval: p.cfg.Device.PollInterval}
	// A drawn user code may be taken by a live code (one in 2^34.5 per live code): draw again.
	for attempt := 0; ; attempt++ {
		requestID, err := uuid.NewRandomFromReader(p.random)
		if err == nil {
			deviceCode, err = randomToken(p.random)
		}
		if err == nil {
			row.UserCode, err = newUserCode(p.random)
		}
		if err != nil {
			p.deviceError(w, r, fosite.ErrServerError.WithWrap(err))
			return
		}
		row.DeviceCodeHash, row.RequestID = hashToken(deviceCode), requestID.String()
		err = p.store.CreateDeviceCode(ctx, row)
		if err == nil {
			break
		}
		if !errors.Is(err, storage.ErrConflict) || attempt == 4 {
			p.deviceError(w, r, fosite.ErrServerError.WithWrap(err))
			return
		}
	}
	verification := p.cfg.Issuer + ui.DevicePath
	w.Header().Set("Cache-Control", "no-store")
	httpjson.Write(w, http.StatusOK, deviceAuthorizationResponse{
		DeviceCode:              deviceCode,
		UserCode:                displayUserCode(row.UserCode),
		VerificationURI:         verification,
		VerificationURIComplete: verification + "?" + url.Values{"user_code": {displayUserCode(row.UserCode)}}.Encode(),
		ExpiresIn:               int64(p.cfg.Device.CodeLifespan / time.Second),
		Interval:                int64(p.cfg.Device.PollInterval / time.Second),
	})
}

// deviceError answers the device authorization endpoint with an OAuth error, as the token
// endpoint does (RFC 8628 §3.2: its errors are those of RFC 6749 §5.2).
func (p *Provider) deviceError(w http.ResponseWriter, r *http.Request, err error) {
	err = asTemporarilyUnavailable(err)
	p.logServerError(r, "device authorization request failed", err)
	setRetryAfter(w, err)
	p.oauth.WriteAccessError(r.Context(), w, nil, err)
}

// deviceGrantHandler is the token endpoint's handler of the device code grant.
type deviceGrantHandler struct {
	fc       *fosite.Config
	store    fositeStore
	devices  *storage.Store
	tokens   *tokenStrategy
	idTokens *openid.IDTokenHandleHelper
	now      func() time.Time
}

var _ fosite.TokenEndpointHandler = (*deviceGrantHandler)(nil)

func (h *deviceGrantHandler) CanSkipClientAuth(context.Context, fosite.AccessRequester) bool {
	return false
}

func (h *deviceGrantHandler) CanHandleTokenEndpointRequest(_ context.Context, r fosite.AccessRequester) bool {
	return r.GetGrantTypes().ExactOne(GrantTypeDeviceCode)
}

// HandleTokenEndpointRequest answers a poll: authorization_pending (or slow_down) while the
// user has not decided, access_denied, expired_token, or, once approved, prepares r to be
// issued the grant's tokens from the session the approval stored.
func (h *deviceGrantHandler) HandleTokenEndpointRequest(ctx context.Context, r fosite.AccessRequester) error {
	if !h.CanHandleTokenEndpointRequest(ctx, r) {
		return fosite.ErrUnknownRequest
	}
	client := r.GetClient()
	if !client.GetGrantTypes().Has(GrantTypeDeviceCode) {
		return fosite.ErrUnauthorizedClient.WithHint("The client is not registered for the device authorization grant.")
	}
	deviceCode := r.GetRequestForm().Get("device_code")
	if deviceCode == "" {
		return fosite.ErrInvalidRequest.WithHint("The device_code parameter is missing.")
	}
	row, err := h.devices.DeviceCodeByHash(ctx, hashToken(deviceCode))
	if errors.Is(err, storage.ErrNotFound) || (err == nil && row.ClientID != client.GetID()) {
		return fosite.ErrInvalidGrant.WithHint("The device code is unknown.")
	} else if err != nil {
		return fosite.ErrServerError.WithWrap(err)
	}
	now := h.now().UTC()
	switch {
	case row.Status == storage.DeviceCodeIssued:
		// A spent device code presented again has leaked, or the device's answer was
		// stolen: as for a reused authorization code, the grant's tokens are revoked.
		return h.revokeGrant(ctx, row.RequestID)
	case !now.Before(row.ExpiresAt):
		return errExpiredToken
	case row.Status == storage.DeviceCodeDenied:
		return errDeviceAccessDenied
	case row.Status == storage.DeviceCodePending:
		slowDown, err := h.devices.PollDeviceCode(ctx, row, now, pollTooSoon(row.LastPolledAt, row.PollInterval, now))
		if err != nil {
			return fosite.ErrServerError.WithWrap(err)
		}
		if slowDown {
			return errSlowDown
		}
		return errAuthorizationPending
	}
	// The stored session fills the request's own, as fosite's storage fills it for a code.
	session, ok := r.GetSession().(*Session)
	if !ok {
		return fosite.ErrServerError.WithDebug("the token request's session is not a *provider.Session")
	}
	if err := json.Unmarshal([]byte(row.Session), session); err != nil {
		return fosite.ErrServerError.WithWrap(fmt.Errorf("device code session: %w", err))
	}
	form, _ := url.ParseQuery(row.Form)
	scopes := fosite.RemoveEmpty(strings.Split(form.Get("scope"), " "))
	audience := fosite.GetAudiences(form)
	r.SetID(row.RequestID)
	r.SetRequestedScopes(scopes)
	r.SetRequestedAudience(audience)
	for _, s := range scopes {
		r.GrantScope(s)
	}
	for _, a := range audience {
		r.GrantAudience(a)
	}
	session.SetExpiresAt(fosite.AccessToken, now.Add(h.fc.GetAccessTokenLifespan(ctx)).Round(time.Second))
	if lifespan := h.fc.GetRefreshTokenLifespan(ctx); lifespan > -1 {
		session.SetExpiresAt(fosite.RefreshToken, now.Add(lifespan).Round(time.Second))
	}
	return nil
}

// maxPollTolerance caps pollTolerance.
const maxPollTolerance = time.Second

// pollTolerance is how much earlier than interval after the previous poll a poll may
// arrive and still count as on time: a fifth of the interval, at most a second (200 ms for
// a 1 s interval, 1 s for the default 5 s). A device that waits the interval on a fixed
// timer (golang.org/x/oauth2's DeviceAccessToken ticks) sees its polls arrive a few
// milliseconds early whenever one request travels faster than the one before; RFC 8628
// §3.5's slow_down is for devices that poll too often, not for that jitter, and each one
// would add five seconds to every later wait.
func pollTolerance(interval time.Duration) time.Duration {
	return min(interval/5, maxPollTolerance)
}

// pollTooSoon reports whether a poll at now, of a device code last polled at last (nil
// for the first poll) with the given interval, came too soon: earlier than interval minus
// pollTolerance after the previous poll. A clock that went back counts as too soon.
func pollTooSoon(last *time.Time, interval time.Duration, now time.Time) bool {
	return last != nil && now.Sub(*last) < interval-pollTolerance(interval)
}

// revokeGrant revokes the refresh and access tokens of a grant whose device code was used
// again, and answers invalid_grant.
func (h *deviceGrantHandler) revokeGrant(ctx context.Context, requestID string) error {
	err := h.store.RevokeRefreshToken(ctx, requestID)
	if err == nil || errors.Is(err, fosite.ErrNotFound) {
		err = h.store.RevokeAccessToken(ctx, requestID)
	}
	if err != nil && !errors.Is(err, fosite.ErrNotFound) {
		return fosite.ErrServerError.WithWrap(err)
	}
	return fosite.ErrInvalidGrant.WithHint("The device code has already been used.")
}

// PopulateTokenEndpointResponse issues the tokens of an approved device code: the access
// token, a refresh token when offline_access was granted and the client may refresh, and an
// ID token for openid. The code is spent in the transaction that stores the refresh token,
// so of concurrent polls exactly one gets tokens.
func (h *deviceGrantHandler) PopulateTokenEndpointResponse(ctx context.Context, r fosite.AccessRequester, resp fosite.AccessResponder) error {
	if !h.CanHandleTokenEndpointRequest(ctx, r) {
		return fosite.ErrUnknownRequest
	}
	access, accessSignature, err := h.tokens.GenerateAccessToken(ctx, r)
	if err != nil {
		return fosite.ErrServerError.WithWrap(err)
	}
	var refresh, refreshSignature string
	if h.mayRefresh(ctx, r) {
		if refresh, refreshSignature, err = h.tokens.GenerateRefreshToken(ctx, r); err != nil {
			return fosite.ErrServerError.WithWrap(err)
		}
	}
	deviceCodeHash := hashToken(r.GetRequestForm().Get("device_code"))
	err = h.devices.InTx(ctx, func(ctx context.Context) error {
		if err := h.devices.SpendDeviceCode(ctx, deviceCodeHash, h.now()); err != nil {
			return err
		}
		if refreshSignature == "" {
			return nil
		}
		return h.store.CreateRefreshTokenSession(ctx, refreshSignature, accessSignature, r.Sanitize(nil))
	})
	if errors.Is(err, storage.ErrNotFound) {
		return fosite.ErrInvalidGrant.WithHint("The device code has already been used or has expired.")
	} else if err != nil {
		return fosite.ErrServerError.WithWrap(err)
	}
	resp.SetAccessToken(access)
	resp.SetTokenType("bearer")
	resp.SetExpiresIn(time.Until(r.GetSession().GetExpiresAt(fosite.AccessToken)).Round(time.Second))
	resp.SetScopes(r.GetGrantedScopes())
	if refresh != "" {
		resp.SetExtra("refresh_token", refresh)
	}
	if r.GetGrantedScopes().Has("openid") {
		// The ID token is made from the stored request, not the poll's form, whose
		// parameters (prompt, max_age, …) belong to no authorization request.
		idRequest := fosite.NewAccessRequest(r.GetSession())
		idRequest.Merge(r)
		idRequest.Form = url.Values{"grant_type": {GrantTypeDeviceCode}}
		if err := h.idTokens.IssueExplicitIDToken(ctx, h.fc.GetIDTokenLifespan(ctx), idRequest, resp); err != nil {
			return err
		}
	}
	return nil
}

// mayRefresh is fosite's rule for the code grant: a refresh token needs offline_access
// among the granted scopes and the refresh_token grant on the client.
func (h *deviceGrantHandler) mayRefresh(ctx context.Context, r fosite.Requester) bool {
	if scopes := h.fc.GetRefreshTokenScopes(ctx); len(scopes) > 0 && !r.GetGrantedScopes().HasOneOf(scopes...) {
		return false
	}
	return r.GetClient().GetGrantTypes().Has("refresh_token")
}

// devicePausedParam marks a paused request (storage.AuthRequest) as a device approval: its
// value is the device code's hash. Such a request is continued by the device pages, never
// by the authorization endpoint.
const devicePausedParam = "gatehouse_device"

// errDevicePaused: a paused request that is a device approval met a path of the
// authorization endpoint.
var errDevicePaused = errors.New("paused request is a device approval")

// StartDeviceApproval implements ui.Host: the device code with the typed user code is
// paused as a request of the hosted pages (which keep it through login, the PIN gate and
// social logins) until the user decides.
func (h uiHost) StartDeviceApproval(ctx context.Context, typed string) (string, error) {
	p := h.p
	code := normalizeUserCode(typed)
	if code == "" {
		return "", ui.ErrDeviceCodeInvalid
	}
	now := p.now().UTC()
	row, err := p.store.PendingDeviceCode(ctx, code, now)
	if errors.Is(err, storage.ErrNotFound) {
		return "", ui.ErrDeviceCodeInvalid
	} else if err != nil {
		return "", err
	}
	token, err := randomToken(p.random)
	if err != nil {
		return "", err
	}
	form, _ := url.ParseQuery(row.Form)
	form.Set(devicePausedParam, row.DeviceCodeHash)
	expires := now.Add(p.cfg.LoginRequestLifespan)
	if row.ExpiresAt.Before(expires) {
		expires = row.ExpiresAt
	}
	err = p.store.CreateAuthRequest(ctx, &storage.AuthRequest{
		IDHash: hashToken(token), ClientID: row.ClientID, Form: form.Encode(), RequestedAt: secondUTC(now),
		ExpiresAt: expires,
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// DecideDevice implements ui.Host. Allow records the signed-in user's grant on the device
// code, with the session its tokens will carry; deny makes the device's next poll
// access_denied. Either way the paused request is gone.
func (h uiHost) DecideDevice(r *http.Request, token string, allow bool) error {
	p, ctx := h.p, r.Context()
	if token == "" {
		return publicauth.ErrRequestExpired
	}
	paused, err := p.pausedRow(ctx, hashToken(token))
	if err != nil {
		return err
	}
	form, _ := url.ParseQuery(paused.Form)
	deviceCodeHash := form.Get(devicePausedParam)
	if deviceCodeHash == "" {
		return publicauth.ErrRequestExpired
	}
	session, user, err := p.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		return err
	}
	client, err := p.store.ClientByID(ctx, paused.ClientID)
	if errors.Is(err, storage.ErrNotFound) {
		return publicauth.ErrRequestExpired
	} else if err != nil {
		return err
	}
	var subject, sessionJSON string
	if allow {
		authTime := session.AuthTime
		if paused.UserID == user.ID && paused.AuthTime != nil {
			authTime = *paused.AuthTime
		}
		grant := fosite.NewAuthorizeRequest()
		grant.Client, grant.Form = client, form
		grant.RequestedAt = paused.RequestedAt
		for _, s := range fosite.RemoveEmpty(strings.Split(form.Get("scope"), " ")) {
			grant.GrantScope(s)
		}
		b, err := json.Marshal(p.userSession(ctx, user, grant, authTime, paused.RequestedAt, session.Method))
		if err != nil {
			return err
		}
		subject, sessionJSON = user.ID, string(b)
	}
	err = p.store.InTx(ctx, func(ctx context.Context) error {
		if err := p.store.DecideDeviceCode(ctx, deviceCodeHash, allow, subject, sessionJSON, p.now()); err != nil {
			return err
		}
		return p.store.DeleteAuthRequest(ctx, paused.IDHash)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return publicauth.ErrRequestExpired
	}
	return err
}

// deviceUserCode is the user code a paused device approval shows, as XXXX-XXXX, from the
// device code's row; "" for an authorization request.
func (p *Provider) deviceUserCode(ctx context.Context, form url.Values) (string, error) {
	hash := form.Get(devicePausedParam)
	if hash == "" {
		return "", nil
	}
	row, err := p.store.DeviceCodeByHash(ctx, hash)
	if errors.Is(err, storage.ErrNotFound) {
		return "", publicauth.ErrRequestExpired
	} else if err != nil {
		return "", err
	}
	if row.Status != storage.DeviceCodePending || !p.now().Before(row.ExpiresAt) {
		return "", publicauth.ErrRequestExpired
	}
	return displayUserCode(row.UserCode), nil
}

// isDevicePaused reports whether the paused request's form is a device approval's.
func isDevicePaused(form string) bool {
	q, _ := url.ParseQuery(form)
	return q.Has(devicePausedParam)
}
