package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/token/jwt"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-id/gatehouse/internal/outbound"
	"github.com/gatehouse-id/gatehouse/storage"
)

// OpenID Connect Back-Channel Logout 1.0.
//
// Every browser session has a public id, its sid (publicauth.Session.SID), which every ID
// token issued in it carries. The transaction that issues a code records the client in the
// session's clients (storage.RecordSessionClient). Whatever ends the session (RP-initiated
// or public logout, a new login replacing it, a password reset or change, disabling or
// deleting the user, its expiry noticed by the janitor) goes through storage, which in the
// same transaction revokes the session's codes and refresh tokens and writes one message
// per client with a back-channel logout URI to the logout outbox. The worker below sends
// them: a crash between the commit and the send loses nothing, and every replica may run it.

// Defaults of BackchannelLogoutConfig.
const (
	DefaultBackchannelLogoutInterval = 2 * time.Second
	DefaultBackchannelLogoutTimeout  = 10 * time.Second
	DefaultBackchannelLogoutGiveUp   = 24 * time.Hour
	DefaultBackchannelLogoutKeep     = 7 * 24 * time.Hour
)

const (
	// logoutTokenLifespan is how long a logout token is valid after it is signed; it is
	// signed as it is sent, so it only has to outlive one delivery.
	logoutTokenLifespan = 2 * time.Minute
	// logoutFirstRetry is the wait after the first failed delivery; it doubles with every
	// further failure up to logoutMaxRetry. The same schedule backs off a client's endpoint
	// by its failures in a row.
	logoutFirstRetry = 10 * time.Second
	logoutMaxRetry   = time.Hour
	// logoutMaxInFlight bounds the deliveries one provider has under way at once, each to
	// a different client; logoutMaxInFlightFailing bounds those of them to endpoints on a
	// failure streak, so endpoints that hang can take at most half the room and a healthy
	// endpoint's logout token always finds a place at the next claim.
	logoutMaxInFlight        = 64
	logoutMaxInFlightFailing = logoutMaxInFlight / 2
	// logoutStreakMemory is how long an endpoint's failure streak is remembered after its
	// back-off has passed without a new failure.
	logoutStreakMemory = 24 * time.Hour
	// logoutResponseLimit caps what is read of a relying party's answer; a longer answer is
	// a failed delivery.
	logoutResponseLimit = 64 << 10
	// backchannelLogoutEvent is the `events` member of a logout token (§2.4).
	backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"
)

// BackchannelLogoutConfig configures the delivery of logout tokens. The zero value is the
// default of every field.
type BackchannelLogoutConfig struct {
	// Interval is how often this provider looks for logout tokens due for delivery (and it
	// looks again at once whenever one of its deliveries ends): default
	// DefaultBackchannelLogoutInterval (2 seconds); negative turns this replica's worker off
	// (another replica's then delivers).
	Interval time.Duration
	// Timeout bounds one delivery, connection (at most 3 seconds of it) and answer: default
	// DefaultBackchannelLogoutTimeout (10 seconds).
	Timeout time.Duration
	// GiveUp is how long after the session ended a failed delivery is still retried (with
	// exponential backoff from 10 seconds to 1 hour): default DefaultBackchannelLogoutGiveUp
	// (24 hours). A message given up on is logged at error level and kept, marked failed,
	// for Keep.
	GiveUp time.Duration
	// Keep is how long a message given up on stays in the outbox for operators before the
	// janitor deletes it: default DefaultBackchannelLogoutKeep (7 days).
	Keep time.Duration
}

func (c BackchannelLogoutConfig) withDefaults() (BackchannelLogoutConfig, error) {
	if c.Interval == 0 {
		c.Interval = DefaultBackchannelLogoutInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultBackchannelLogoutTimeout
	}
	if c.GiveUp == 0 {
		c.GiveUp = DefaultBackchannelLogoutGiveUp
	}
	if c.Keep == 0 {
		c.Keep = DefaultBackchannelLogoutKeep
	}
	if c.Timeout < 0 || c.GiveUp < 0 || c.Keep < 0 {
		return c, errors.New("back-channel logout timeout, give-up time and keep time must be positive")
	}
	return c, nil
}

// lease is how long a claimed message is left to one worker: longer than a delivery can
// take, so no two workers send it at the same time.
func (c BackchannelLogoutConfig) lease() time.Duration { return 2*c.Timeout + 30*time.Second }

// logoutSender posts logout tokens, and keeps the state of this provider's deliveries under
// way: which clients it is delivering to, how many of them to failing endpoints.
type logoutSender struct {
	cfg BackchannelLogoutConfig
	// clients posts to back-channel logout URIs (outboundClients.forClient).
	clients outboundClients
	// wake is signalled when a delivery ends, so the worker claims again at once.
	wake chan struct{}
	// deliveries counts the deliveries under way, for Close to wait for.
	deliveries sync.WaitGroup

	mu      sync.Mutex
	busy    map[string]bool // clients with a delivery under way
	failing int             // deliveries under way to endpoints on a failure streak
}

// newLogoutSender returns a sender whose requests follow no redirect (a relying party's
// answer is its answer), connect within 3 seconds and give up after cfg.Timeout; a
// dynamically registered client's endpoint must be on a public address unless insecure.
func newLogoutSender(cfg BackchannelLogoutConfig, tp trace.TracerProvider, insecure bool) (*logoutSender, error) {
	clients, err := newOutboundClients(tp, insecure, cfg.Timeout, logoutResponseLimit)
	if err != nil {
		return nil, fmt.Errorf("provider: back-channel logout: %w", err)
	}
	return &logoutSender{cfg: cfg, clients: clients, wake: make(chan struct{}, 1), busy: map[string]bool{}}, nil
}

// checkBackchannelLogoutURI accepts an absolute https URI, or http on a loopback host
// (development), without fragment (§2.2).
func checkBackchannelLogoutURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("back-channel logout URI %q must be an absolute URI without user info or fragment", raw)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("back-channel logout URI %q must be https (or http on a loopback host)", raw)
}

// isLoopback reports whether host is localhost or a loopback IP address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// BrowserSessionID is the sid the session's ID tokens carry, "" for a grant made outside a
// browser session. It implements storage.BrowserSessionIDer.
func (s *Session) BrowserSessionID() string {
	if s == nil || s.Claims == nil {
		return ""
	}
	sid, _ := s.Claims.Extra["sid"].(string)
	return sid
}

var _ storage.BrowserSessionIDer = (*Session)(nil)

// setBrowserSessionID makes sid the `sid` claim of the session's ID tokens, and so of its
// refreshed ones: the claims are stored with the code and the refresh token.
func (s *Session) setBrowserSessionID(sid string) {
	if sid == "" {
		return
	}
	if s.Claims.Extra == nil {
		s.Claims.Extra = map[string]any{}
	}
	s.Claims.Extra["sid"] = sid
}

// recordSessionClient records, in the transaction ctx carries, that ar's client is issued a
// code in the browser session of session, so it gets a logout token when that ends. A
// session that has ended is storage.ErrSessionEnded, here or (deferred) at the commit;
// newAuthorizeResponse answers both (sessionEndedAsLoginRequired).
func (p *Provider) recordSessionClient(ctx context.Context, session *Session, ar fosite.AuthorizeRequester) error {
	sid := session.BrowserSessionID()
	if sid == "" {
		return nil
	}
	return p.store.RecordSessionClient(ctx, sid, ar.GetClient().GetID())
}

// sessionEndedAsLoginRequired answers an authorization whose browser session ended while its
// code was issued (storage.ErrSessionEnded, from RecordSessionClient or, where the record
// was deferred, from the commit) with login_required: no code was issued.
func sessionEndedAsLoginRequired(err error) error {
	if errors.Is(err, storage.ErrSessionEnded) {
		return fosite.ErrLoginRequired.WithHint("The session ended while the request was answered.")
	}
	return err
}

// logoutTokenClaims are the claims of the logout token of m (Back-Channel Logout 1.0 §2.4):
// iss, aud (the client), iat, exp, jti (the message id, the same on every retry), sub, sid
// and events; never a nonce.
func logoutTokenClaims(issuer string, m storage.LogoutMessage, now time.Time) jwt.MapClaims {
	claims := jwt.MapClaims{
		"iss":    issuer,
		"aud":    m.ClientID,
		"iat":    now.Unix(),
		"exp":    now.Add(logoutTokenLifespan).Unix(),
		"jti":    m.ID,
		"events": map[string]any{backchannelLogoutEvent: map[string]any{}},
	}
	if m.Subject != "" {
		claims["sub"] = m.Subject
	}
	if m.SID != "" {
		claims["sid"] = m.SID
	}
	return claims
}

// logoutToken signs the logout token of m for client with the key of the client's ID token
// algorithm, typ logout+jwt (§2.4).
func (p *Provider) logoutToken(client *storage.Client, m storage.LogoutMessage, now time.Time) (string, error) {
	alg := client.IDTokenAlg
	if alg == "" {
		alg = AlgRS256
	}
	k, err := p.keys.activeKey(alg)
	if err != nil {
		return "", err
	}
	token, _, err := signJWT(k, logoutTokenClaims(p.cfg.Issuer, m, now), map[string]any{"typ": "logout+jwt"})
	return token, err
}

// runLogoutDelivery delivers due logout tokens every Interval, and again whenever one of its
// deliveries ends, until ctx is done; then it waits for the deliveries under way, which ctx
// cancels.
func (p *Provider) runLogoutDelivery(ctx context.Context) {
	ticker := time.NewTicker(p.cfg.BackchannelLogout.Interval)
	defer ticker.Stop()
	defer p.logouts.deliveries.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-p.logouts.wake:
		}
		if _, err := p.startLogouts(ctx); err != nil && ctx.Err() == nil {
			p.log.ErrorContext(ctx, "back-channel logout: delivery failed", "error", err)
		}
	}
}

// logoutRound is the deliveries one claim started.
type logoutRound struct {
	wg        sync.WaitGroup
	mu        sync.Mutex
	delivered int
	errs      []error
}

// wait waits for the round's deliveries and returns how many were delivered, and the
// failures to record an outcome.
func (r *logoutRound) wait() (int, error) {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.delivered, errors.Join(r.errs...)
}

// startLogouts is one step of the worker: it claims messages due now, at most one per client
// and none of a client this provider is delivering to already, as many as
// logoutMaxInFlight leaves room for (endpoints on a failure streak: as many as
// logoutMaxInFlightFailing leaves, after the healthy ones), and starts each delivery on its
// own. A delivery ends by itself and records its own outcome (deliverLogout): nothing waits
// for the slowest. The round returned lets a caller wait for them.
func (p *Provider) startLogouts(ctx context.Context) (*logoutRound, error) {
	round := &logoutRound{}
	s := p.logouts
	for _, failing := range []bool{false, true} {
		s.mu.Lock()
		room := logoutMaxInFlight - len(s.busy)
		if failing {
			room = min(room, logoutMaxInFlightFailing-s.failing)
		}
		busy := slices.Collect(maps.Keys(s.busy))
		s.mu.Unlock()
		if room <= 0 {
			continue
		}
		msgs, err := p.store.ClaimLogouts(ctx, storage.LogoutClaim{
			Now: p.now(), Lease: s.cfg.lease(), Limit: room, Busy: busy, Failing: failing,
		})
		if err != nil {
			return round, err
		}
		for _, m := range msgs {
			s.begin(m.ClientID, failing)
			round.wg.Add(1)
			go func() {
				defer round.wg.Done()
				defer s.end(m.ClientID, failing)
				ok, err := p.deliverLogout(ctx, m, failing)
				round.mu.Lock()
				defer round.mu.Unlock()
				if ok {
					round.delivered++
				}
				if err != nil {
					round.errs = append(round.errs, err)
				}
			}()
		}
	}
	return round, nil
}

// begin records a delivery to clientID under way.
func (s *logoutSender) begin(clientID string, failing bool) {
	s.deliveries.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy[clientID] = true
	if failing {
		s.failing++
	}
}

// end records the end of a delivery to clientID and wakes the worker.
func (s *logoutSender) end(clientID string, failing bool) {
	s.mu.Lock()
	delete(s.busy, clientID)
	if failing {
		s.failing--
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.deliveries.Done()
}

// deliverLogouts runs one step of the worker and waits for the deliveries it started: it
// returns how many were delivered.
func (p *Provider) deliverLogouts(ctx context.Context) (int, error) {
	round, err := p.startLogouts(ctx)
	delivered, roundErr := round.wait()
	return delivered, errors.Join(err, roundErr)
}

// deliverLogout sends one message and records the outcome: a delivered message is deleted
// (and, when claimed as one of a failing endpoint, the endpoint's failure streak ends); a
// failed one is retried later with exponential backoff, or given up on after GiveUp, and its
// endpoint backs off (storage.LogoutEndpointFailed), so its other messages wait too. ok
// reports delivery, err a failure to record it (the message is then retried once its lease
// passes).
func (p *Provider) deliverLogout(ctx context.Context, m storage.LogoutMessage, failing bool) (ok bool, err error) {
	log := p.log.With("client_id", m.ClientID, "jti", m.ID, "attempt", m.Attempts)
	client, err := p.store.ClientByID(ctx, m.ClientID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && client.BackchannelLogoutURI == "") {
		// The client was deleted, or no longer wants logout tokens, since the session ended.
		log.InfoContext(ctx, "back-channel logout: dropped, the client has no back-channel logout URI any more")
		return false, p.store.LogoutDelivered(ctx, m.ID)
	}
	if err != nil {
		return false, err
	}
	sendErr := p.postLogout(ctx, client, m)
	if sendErr == nil {
		log.DebugContext(ctx, "back-channel logout: delivered")
		err := p.store.LogoutDelivered(ctx, m.ID)
		if failing {
			err = errors.Join(err, p.store.LogoutEndpointDelivered(ctx, m.ClientID))
		}
		return true, err
	}
	if ctx.Err() != nil {
		return false, nil // shutting down: the lease passes and another attempt follows
	}
	now := p.now()
	cfg := p.cfg.BackchannelLogout
	next := now.Add(logoutBackoff(m.Attempts))
	refused := errors.Is(sendErr, errLogoutURIRefused)
	reason := outbound.Reason(sendErr)
	if refused {
		reason = outbound.ReasonURL
	}
	p.stats.outboundFailed(purposeBackchannelLogout, reason)
	giveUp := now.Sub(m.CreatedAt) >= cfg.GiveUp || refused
	if giveUp {
		log.ErrorContext(ctx, "back-channel logout: given up", "reason", reason, "error", sendErr, "since", m.CreatedAt)
	} else {
		log.WarnContext(ctx, "back-channel logout: delivery failed, will retry", "reason", reason, "error", sendErr, "next", next)
	}
	err = p.store.LogoutFailed(ctx, m.ID, sendErr.Error(), next, giveUp, now, cfg.Keep)
	if !refused {
		// A URI refused outright costs nothing to refuse again; anything else means the
		// endpoint is down or slow, and its other messages would fare no better now.
		err = errors.Join(err, p.store.LogoutEndpointFailed(ctx, m.ClientID, now, logoutBackoff, logoutStreakMemory))
	}
	return false, err
}

// logoutBackoff is the wait after the given number of failed attempts: logoutFirstRetry,
// doubling, at most logoutMaxRetry.
func logoutBackoff(attempts int) time.Duration {
	d := logoutFirstRetry
	for i := 1; i < attempts && d < logoutMaxRetry; i++ {
		d *= 2
	}
	return min(d, logoutMaxRetry)
}

// errLogoutURIRefused is a back-channel logout URI Gatehouse will not post to (registered
// before the rules, or edited in the database): retrying would not help.
var errLogoutURIRefused = errors.New("back-channel logout URI refused")

// postLogout signs m's logout token and posts it to the client's back-channel logout URI,
// form-encoded (§2.5), through the outbound client for the client (a dynamically registered
// client's endpoint must be on a public address). Only 200 and 204 count as delivered
// (§2.8); redirects are not followed and at most logoutResponseLimit bytes of the answer are
// read.
func (p *Provider) postLogout(ctx context.Context, client *storage.Client, m storage.LogoutMessage) error {
	if err := checkBackchannelLogoutURI(client.BackchannelLogoutURI); err != nil {
		return fmt.Errorf("%w: %w", errLogoutURIRefused, err)
	}
	token, err := p.logoutToken(client, m, p.now())
	if err != nil {
		return fmt.Errorf("sign logout token: %w", err)
	}
	res, err := p.logouts.clients.forClient(client).PostForm(ctx, client.BackchannelLogoutURI,
		url.Values{"logout_token": {token}}, http.Header{"Cache-Control": {"no-store"}})
	if err != nil {
		return err
	}
	return res.Want(http.StatusOK, http.StatusNoContent)
}
