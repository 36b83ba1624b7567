package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/token/jwt"

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
	DefaultBackchannelLogoutInterval = 5 * time.Second
	DefaultBackchannelLogoutTimeout  = 10 * time.Second
	DefaultBackchannelLogoutGiveUp   = 24 * time.Hour
	DefaultBackchannelLogoutKeep     = 7 * 24 * time.Hour
)

const (
	// logoutTokenLifespan is how long a logout token is valid after it is signed; it is
	// signed as it is sent, so it only has to outlive one delivery.
	logoutTokenLifespan = 2 * time.Minute
	// logoutFirstRetry is the wait after the first failed delivery; it doubles with every
	// further failure up to logoutMaxRetry.
	logoutFirstRetry = 10 * time.Second
	logoutMaxRetry   = time.Hour
	// logoutBatch is how many messages one step claims, and sends at once.
	logoutBatch = 16
	// logoutResponseLimit caps what is read of a relying party's answer.
	logoutResponseLimit = 4 << 10
	// backchannelLogoutEvent is the `events` member of a logout token (§2.4).
	backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"
)

// BackchannelLogoutConfig configures the delivery of logout tokens. The zero value is the
// default of every field.
type BackchannelLogoutConfig struct {
	// Interval is how often this provider looks for logout tokens due for delivery: default
	// DefaultBackchannelLogoutInterval (5 seconds); negative turns this replica's worker off
	// (another replica's then delivers).
	Interval time.Duration
	// Timeout bounds one delivery, connection and answer: default
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

// logoutSender posts logout tokens.
type logoutSender struct {
	cfg    BackchannelLogoutConfig
	client *http.Client
}

// newLogoutSender returns a sender whose HTTP client follows no redirect (a relying party's
// answer is its answer) and gives up after cfg.Timeout.
func newLogoutSender(cfg BackchannelLogoutConfig) *logoutSender {
	return &logoutSender{cfg: cfg, client: &http.Client{
		Timeout:       cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
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

// runLogoutDelivery delivers due logout tokens every Interval until ctx is done.
func (p *Provider) runLogoutDelivery(ctx context.Context) {
	ticker := time.NewTicker(p.cfg.BackchannelLogout.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if _, err := p.deliverLogouts(ctx); err != nil && ctx.Err() == nil {
				p.log.ErrorContext(ctx, "back-channel logout: delivery failed", "error", err)
			}
		}
	}
}

// deliverLogouts is one step of the worker: it claims the messages due now (at most
// logoutBatch), sends them at once and records each outcome: delivered messages are deleted,
// failed ones retried later with exponential backoff, or given up on after GiveUp. It
// returns how many were delivered.
func (p *Provider) deliverLogouts(ctx context.Context) (int, error) {
	cfg := p.cfg.BackchannelLogout
	msgs, err := p.store.ClaimLogouts(ctx, p.now(), cfg.lease(), logoutBatch)
	if err != nil {
		return 0, err
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		delivered int
		errs      []error
	)
	for _, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := p.deliverLogout(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				delivered++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return delivered, errors.Join(errs...)
}

// deliverLogout sends one message and records the outcome; ok reports delivery, err a
// failure to record it (the message is then retried once its lease passes).
func (p *Provider) deliverLogout(ctx context.Context, m storage.LogoutMessage) (ok bool, err error) {
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
		return true, p.store.LogoutDelivered(ctx, m.ID)
	}
	if ctx.Err() != nil {
		return false, nil // shutting down: the lease passes and another attempt follows
	}
	now := p.now()
	cfg := p.cfg.BackchannelLogout
	next := now.Add(logoutBackoff(m.Attempts))
	giveUp := now.Sub(m.CreatedAt) >= cfg.GiveUp || errors.Is(sendErr, errLogoutURIRefused)
	if giveUp {
		log.ErrorContext(ctx, "back-channel logout: given up", "error", sendErr, "since", m.CreatedAt)
	} else {
		log.WarnContext(ctx, "back-channel logout: delivery failed, will retry", "error", sendErr, "next", next)
	}
	return false, p.store.LogoutFailed(ctx, m.ID, sendErr.Error(), next, giveUp, now, cfg.Keep)
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
// form-encoded (§2.5). Only 200 and 204 count as delivered (§2.8); redirects are not
// followed and at most logoutResponseLimit bytes of the answer are read.
func (p *Provider) postLogout(ctx context.Context, client *storage.Client, m storage.LogoutMessage) error {
	if err := checkBackchannelLogoutURI(client.BackchannelLogoutURI); err != nil {
		return fmt.Errorf("%w: %w", errLogoutURIRefused, err)
	}
	token, err := p.logoutToken(client, m, p.now())
	if err != nil {
		return fmt.Errorf("sign logout token: %w", err)
	}
	body := url.Values{"logout_token": {token}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, client.BackchannelLogoutURI, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cache-Control", "no-store")
	resp, err := p.logouts.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, logoutResponseLimit))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("relying party answered %s", resp.Status)
	}
	return nil
}
