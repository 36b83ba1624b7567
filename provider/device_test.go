package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/internal/browsertest"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// deviceClient is a public client of the device grant that may refresh, as a TV app is.
func deviceClient(t *testing.T, e *env, id string) provider.ClientInfo {
	t.Helper()
	return e.client(t, provider.ClientSpec{ID: id, Public: true, Name: "Living Room TV",
		GrantTypes: []string{provider.GrantTypeDeviceCode, "refresh_token"},
		Scopes:     []string{"openid", "profile", "email", "offline_access"}})
}

// deviceCode asks the device authorization endpoint for codes as the public client c.
func (e *env) deviceCode(t *testing.T, c provider.ClientInfo, scope string) jsonResponse {
	t.Helper()
	return e.call(t, http.MethodPost, "/api/oauth/device/code", url.Values{"client_id": {c.ClientID}, "scope": {scope}}, nil)
}

// pollDevice polls the token endpoint with deviceCode as the public client c.
func (e *env) pollDevice(t *testing.T, c provider.ClientInfo, deviceCode string) jsonResponse {
	t.Helper()
	return e.call(t, http.MethodPost, "/api/oauth/token", url.Values{
		"grant_type": {provider.GrantTypeDeviceCode}, "device_code": {deviceCode}, "client_id": {c.ClientID}}, nil)
}

// approveDevice types userCode on the device page in b (signing in as email when the page
// asks) and answers the confirmation with decision; it returns the final page.
func (b *browser) approveDevice(t *testing.T, e *env, userCode, email, decision string) page {
	t.Helper()
	p := b.get(t, e.issuer+"/device")
	if p.status != http.StatusOK {
		t.Fatalf("device page: got %s", p)
	}
	f := p.form(t)
	f.fields.Set("user_code", userCode)
	p = b.post(t, f.action, f.fields)
	if p.url.Path == b.base+"/login" {
		p = b.login(t, p, email)
	}
	if p.status != http.StatusOK || p.url.Path != b.base+"/device/confirm" {
		t.Fatalf("got %s, want the device confirmation page", p)
	}
	if !strings.Contains(p.body, userCode) {
		t.Errorf("the confirmation page does not show the code %s", userCode)
	}
	f = p.form(t)
	f.fields.Set("decision", decision)
	return b.post(t, f.action, f.fields)
}

// TestDeviceGrant: the token endpoint's answers to a device while its user decides (RFC 8628
// §3.5), the exactly-once issue of its tokens, and what a device code cannot do.
func TestDeviceGrant(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		var offset atomic.Int64
		issued := make(chan *events.TokenIssued, 16)
		e := newEnv(t, b, provider.Config{Device: provider.DeviceConfig{PollInterval: time.Second}},
			provider.WithClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }),
			provider.WithEvents(func(_ context.Context, ev provider.Event) {
				if ti, ok := ev.(*events.TokenIssued); ok {
					issued <- ti
				}
			}))
		user := e.user(t, "tv-owner@example.com", "TV Owner")
		tv := deviceClient(t, e, "tv")

		t.Run("answer", func(t *testing.T) {
			r := e.deviceCode(t, tv, "openid offline_access")
			if r.status != http.StatusOK {
				t.Fatalf("device code: got %s", r)
			}
			userCode, _ := r.body["user_code"].(string)
			if len(userCode) != 9 || userCode[4] != '-' || strings.ContainsAny(userCode, "AEIOU01") {
				t.Errorf("user_code %q is not XXXX-XXXX of the unambiguous alphabet", userCode)
			}
			for field, want := range map[string]any{
				"verification_uri":          e.issuer + "/device",
				"verification_uri_complete": e.issuer + "/device?user_code=" + userCode,
				"expires_in":                float64(600),
				"interval":                  float64(1),
			} {
				if got := r.body[field]; got != want {
					t.Errorf("%s: got %v, want %v", field, got, want)
				}
			}
			if dc, _ := r.body["device_code"].(string); len(dc) < 40 {
				t.Errorf("device_code %q is too short to be unguessable", dc)
			}
			if got := r.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
		})

		t.Run("pending, slow down, approve, tokens once", func(t *testing.T) {
			r := e.deviceCode(t, tv, "openid profile email offline_access")
			deviceCode, userCode := r.body["device_code"].(string), r.body["user_code"].(string)
			wantOAuthError(t, e.pollDevice(t, tv, deviceCode), http.StatusBadRequest, "authorization_pending")
			// Polled again at once: slow_down, and the interval is now 6 s.
			wantOAuthError(t, e.pollDevice(t, tv, deviceCode), http.StatusBadRequest, "slow_down")
			offset.Add(int64(7 * time.Second))
			wantOAuthError(t, e.pollDevice(t, tv, deviceCode), http.StatusBadRequest, "authorization_pending")
			// Back to real time: fosite refuses an auth_time more than 5 s in its future.
			offset.Store(0)

			done := e.browser(t).approveDevice(t, e, userCode, user.Email, "allow")
			if done.status != http.StatusOK || !strings.Contains(done.body, "Device connected") {
				t.Fatalf("after allow: got %s", done)
			}
			tok := e.pollDevice(t, tv, deviceCode)
			if tok.status != http.StatusOK {
				t.Fatalf("poll after approval: got %s", tok)
			}
			access, _ := tok.body["access_token"].(string)
			refresh, _ := tok.body["refresh_token"].(string)
			idToken, _ := tok.body["id_token"].(string)
			if access == "" || refresh == "" || idToken == "" || tok.body["token_type"] != "Bearer" {
				t.Fatalf("tokens: got %s, want an access, refresh and ID token of type Bearer", tok)
			}
			select {
			case ev := <-issued:
				if ev.GrantType != provider.GrantTypeDeviceCode || ev.Subject != user.ID || !ev.UserBound || !ev.RefreshToken || !ev.IDToken {
					t.Errorf("TokenIssued event: got %+v", ev)
				}
			default:
				t.Errorf("no TokenIssued event for the device grant")
			}
			claims := e.verifyJWT(t, idToken)
			if claims["sub"] != user.ID || claims["aud"] != tv.ClientID || claims["email"] != user.Email {
				t.Errorf("ID token claims: got %v", claims)
			}
			if _, ok := claims["nonce"]; ok {
				t.Errorf("ID token has a nonce, and the device grant has none: %v", claims)
			}
			if r := e.userinfo(t, access); r.status != http.StatusOK || r.body["sub"] != user.ID {
				t.Errorf("userinfo: got %s", r)
			}
			refreshed := e.call(t, http.MethodPost, "/api/oauth/token", url.Values{
				"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {tv.ClientID}}, nil)
			if refreshed.status != http.StatusOK {
				t.Fatalf("refresh: got %s", refreshed)
			}
			// The device code again: refused, and the grant's tokens are revoked.
			wantOAuthError(t, e.pollDevice(t, tv, deviceCode), http.StatusBadRequest, "invalid_grant")
			if r := e.userinfo(t, refreshed.body["access_token"].(string)); r.status != http.StatusUnauthorized {
				t.Errorf("userinfo with the refreshed token after the device code's reuse: got %s, want 401", r)
			}
		})

		t.Run("deny", func(t *testing.T) {
			offset.Store(0)
			r := e.deviceCode(t, tv, "openid")
			done := e.browser(t).approveDevice(t, e, r.body["user_code"].(string), user.Email, "deny")
			if done.status != http.StatusOK || !strings.Contains(done.body, "Request denied") {
				t.Fatalf("after deny: got %s", done)
			}
			wantOAuthError(t, e.pollDevice(t, tv, r.body["device_code"].(string)), http.StatusBadRequest, "access_denied")
		})

		t.Run("expired", func(t *testing.T) {
			r := e.deviceCode(t, tv, "openid")
			offset.Add(int64(11 * time.Minute))
			wantOAuthError(t, e.pollDevice(t, tv, r.body["device_code"].(string)), http.StatusBadRequest, "expired_token")
			p := e.browser(t).get(t, e.issuer+"/device")
			f := p.form(t)
			f.fields.Set("user_code", r.body["user_code"].(string))
			if p := e.browser(t).post(t, f.action, f.fields); p.status != http.StatusForbidden {
				// Another browser has no CSRF cookie: refused before the code is looked up.
				t.Errorf("device code entry without the form's cookie: got %s, want 403", p)
			}
			b := e.browser(t)
			p = b.get(t, e.issuer+"/device")
			f = p.form(t)
			f.fields.Set("user_code", r.body["user_code"].(string))
			if p := b.post(t, f.action, f.fields); p.status != http.StatusBadRequest || !strings.Contains(p.body, "not valid") {
				t.Errorf("expired user code on the device page: got %s, want 400 with the form again", p)
			}
		})

		t.Run("pages keep their guards", func(t *testing.T) {
			offset.Store(0)
			r := e.deviceCode(t, tv, "openid")
			br := e.browser(t)
			p := br.get(t, e.issuer+"/device")
			wantHostedPageHeaders(t, p)
			f := p.form(t)
			f.fields.Set("user_code", strings.ToLower(r.body["user_code"].(string))) // any case
			p = br.login(t, br.post(t, f.action, f.fields), user.Email)
			if p.url.Path != "/device/confirm" {
				t.Fatalf("got %s, want the confirmation page", p)
			}
			wantHostedPageHeaders(t, p)
			// A forged allow from another site has no CSRF cookie: refused, and nothing decided.
			f = p.form(t)
			f.fields.Set("decision", "allow")
			if forged := e.browser(t).post(t, f.action, f.fields); forged.status != http.StatusForbidden {
				t.Errorf("forged allow: got %s, want 403", forged)
			}
			wantOAuthError(t, e.pollDevice(t, tv, r.body["device_code"].(string)), http.StatusBadRequest, "authorization_pending")
			// A device approval's request cannot be finished as an authorization request.
			token := f.fields.Get("request")
			if p := br.get(t, e.issuer+"/consent?request="+url.QueryEscape(token)); p.status == http.StatusOK && strings.Contains(p.body, "decision") {
				t.Errorf("the consent page accepted a device approval's request: %s", p)
			}
		})

		t.Run("refused requests", func(t *testing.T) {
			web := e.client(t, provider.ClientSpec{ID: "web-" + b.Name, Scopes: []string{"openid"}})
			other := deviceClient(t, e, "other-tv")
			own := e.deviceCode(t, tv, "openid")
			for _, tc := range []struct {
				name   string
				r      jsonResponse
				status int
				code   string
			}{
				{"client without the device grant", e.call(t, http.MethodPost, "/api/oauth/device/code",
					url.Values{"scope": {"openid"}}, basicAuth(web)), http.StatusBadRequest, "unauthorized_client"},
				{"confidential client without its secret", e.call(t, http.MethodPost, "/api/oauth/device/code",
					url.Values{"client_id": {web.ClientID}}, nil), http.StatusUnauthorized, "invalid_client"},
				{"unknown client", e.call(t, http.MethodPost, "/api/oauth/device/code",
					url.Values{"client_id": {"nobody"}}, nil), http.StatusUnauthorized, "invalid_client"},
				{"scope the client lacks", e.deviceCode(t, tv, "openid admin"), http.StatusBadRequest, "invalid_scope"},
				{"audience the client lacks", e.call(t, http.MethodPost, "/api/oauth/device/code",
					url.Values{"client_id": {tv.ClientID}, "audience": {"billing"}}, nil), http.StatusBadRequest, "invalid_target"},
				{"another client's device code", e.pollDevice(t, other, own.body["device_code"].(string)), http.StatusBadRequest, "invalid_grant"},
				{"unknown device code", e.pollDevice(t, tv, "not-a-device-code"), http.StatusBadRequest, "invalid_grant"},
				{"no device code", e.pollDevice(t, tv, ""), http.StatusBadRequest, "invalid_request"},
				{"grant type not registered", e.token(t, web, url.Values{"grant_type": {provider.GrantTypeDeviceCode},
					"device_code": {own.body["device_code"].(string)}}), http.StatusBadRequest, "unauthorized_client"},
			} {
				t.Run(tc.name, func(t *testing.T) { wantOAuthError(t, tc.r, tc.status, tc.code) })
			}
		})

		t.Run("a user whose grants are revoked before the device polls", func(t *testing.T) {
			offset.Store(0)
			r := e.deviceCode(t, tv, "openid")
			e.browser(t).approveDevice(t, e, r.body["user_code"].(string), user.Email, "allow")
			if err := e.store.RevokeUserGrants(context.Background(), user.ID); err != nil {
				t.Fatal(err)
			}
			wantOAuthError(t, e.pollDevice(t, tv, r.body["device_code"].(string)), http.StatusBadRequest, "access_denied")
		})
	})
}

// TestDeviceCodeGuessingIsRateLimited: typing codes on the device page counts against a
// per-IP limit, so codes cannot be enumerated.
func TestDeviceCodeGuessingIsRateLimited(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		cfg := provider.Config{}
		cfg.PublicAuth.LoginRateLimit = provider.RateLimit{Limit: 3, Window: time.Hour}
		e := newEnv(t, b, cfg)
		br := e.browser(t)
		var last page
		for i := range 4 {
			p := br.get(t, e.issuer+"/device")
			f := p.form(t)
			f.fields.Set("user_code", "BCDF-GHJ"+string("KLMN"[i]))
			last = br.post(t, f.action, f.fields)
			if i < 3 && last.status != http.StatusBadRequest {
				t.Fatalf("guess %d: got %s, want 400", i+1, last)
			}
		}
		if last.status != http.StatusTooManyRequests {
			t.Errorf("fourth guess: got %s, want 429", last)
		}
	})
}

// deviceResult is what golang.org/x/oauth2's DeviceAccessToken returned.
type deviceResult struct {
	tok *oauth2.Token
	err error
}

// startDevice runs a device as golang.org/x/oauth2 does for the device client tv: it asks
// for codes with scopes, then polls with DeviceAccessToken in the background (through
// pollCtx's HTTP client, or e's when pollCtx is ctx) until the result is sent on the
// channel returned.
func startDevice(t *testing.T, ctx, pollCtx context.Context, e *env, tv provider.ClientInfo, scopes ...string) (*oauth2.DeviceAuthResponse, <-chan deviceResult) {
	t.Helper()
	cfg := &oauth2.Config{ClientID: tv.ClientID, Scopes: scopes,
		Endpoint: oauth2.Endpoint{DeviceAuthURL: e.issuer + "/api/oauth/device/code",
			TokenURL: e.issuer + "/api/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	auth, err := cfg.DeviceAuth(ctx)
	if err != nil {
		t.Fatalf("DeviceAuth: %v", err)
	}
	polled := make(chan deviceResult, 1)
	go func() {
		tok, err := cfg.DeviceAccessToken(pollCtx, auth)
		polled <- deviceResult{tok, err}
	}()
	return auth, polled
}

// TestDeviceFlowInChromium: golang.org/x/oauth2's device flow client polls while a real
// browser opens verification_uri_complete, signs in on the hosted page and allows; the
// client then holds tokens that work.
func TestDeviceFlowInChromium(t *testing.T) {
	browsertest.Require(t)
	browserCtx := browsertest.Start(t, context.Background())
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{Device: provider.DeviceConfig{PollInterval: time.Second}})
		user := e.user(t, "chromium-tv@example.com", "TV Owner")
		tv := deviceClient(t, e, "tv")
		ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
		defer cancel()
		auth, polled := startDevice(t, ctx, ctx, e, tv, "openid", "email", "offline_access")

		runCtx, cancelRun := context.WithTimeout(browserCtx, 45*time.Second)
		defer cancelRun()
		if err := chromedp.Do(runCtx,
			chromedp.Navigate(auth.VerificationURIComplete),
			chromedp.WaitVisible(chromedp.ID("user_code")),
			chromedp.Click(chromedp.CSS(`form[action="/device"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.ID("password")),
			chromedp.SendKeys(chromedp.ID("email"), user.Email),
			chromedp.SendKeys(chromedp.ID("password"), testPassword),
			chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[value=allow]`)),
		); err != nil {
			t.Fatalf("the device pages did not reach the confirmation: %v", err)
		}
		shown, err := chromedp.Run(runCtx, chromedp.Evaluate[string](`document.querySelector(".user-code").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		if shown != auth.UserCode {
			t.Errorf("confirmation shows %q, the device %q", shown, auth.UserCode)
		}
		if err := chromedp.Do(runCtx,
			chromedp.Click(chromedp.CSS(`button[value=allow]`)),
			chromedp.WaitVisible(chromedp.CSS(`main.card`)),
		); err != nil {
			t.Fatal(err)
		}
		res := <-polled
		if res.err != nil {
			t.Fatalf("DeviceAccessToken: %v", res.err)
		}
		if res.tok.RefreshToken == "" {
			t.Errorf("no refresh token for offline_access")
		}
		raw, _ := res.tok.Extra("id_token").(string)
		if claims := e.verifyJWT(t, raw); claims["sub"] != user.ID {
			t.Errorf("ID token sub: got %v, want %s", claims["sub"], user.ID)
		}
		if r := e.userinfo(t, res.tok.AccessToken); r.status != http.StatusOK || r.body["email"] != user.Email {
			t.Errorf("userinfo: got %s", r)
		}
	})
}

// jitteryPolls is the network between a device and the provider: it delays every other
// token request by delay, as a busy link does, so some polls arrive early by that much on
// the device's fixed timer, and it records the error code of every token answer.
type jitteryPolls struct {
	delay time.Duration
	// answered receives the error code of each answer that carries one.
	answered chan string

	mu    sync.Mutex
	polls int
	codes []string
}

func (j *jitteryPolls) RoundTrip(req *http.Request) (*http.Response, error) {
	j.mu.Lock()
	j.polls++
	slow := j.polls%2 == 1
	j.mu.Unlock()
	if slow {
		time.Sleep(j.delay)
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || res.StatusCode == http.StatusOK {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	var answer struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &answer)
	j.mu.Lock()
	j.codes = append(j.codes, answer.Error)
	j.mu.Unlock()
	select {
	case j.answered <- answer.Error:
	case <-req.Context().Done():
	}
	return res, nil
}

func (j *jitteryPolls) answers() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.codes)
}

// TestDeviceAccessTokenPollsWithoutDrift: golang.org/x/oauth2's DeviceAccessToken polls on
// a fixed ticker, so with a little network jitter a poll arrives a few tens of milliseconds
// before the interval has passed since the one before. Such a poll is on time, not a device
// polling too fast: the device gets authorization_pending, never slow_down (which would add
// five seconds to every later wait), and its tokens as soon as the user allows.
func TestDeviceAccessTokenPollsWithoutDrift(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{Device: provider.DeviceConfig{PollInterval: time.Second}})
		user := e.user(t, "jitter-tv@example.com", "TV Owner")
		tv := deviceClient(t, e, "tv")
		ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
		defer cancel()
		// Odd polls 60 ms late, even ones on time: every even poll comes 940 ms after the
		// one before, well within the tolerance of a 1 s interval (200 ms).
		network := &jitteryPolls{delay: 60 * time.Millisecond, answered: make(chan string, 16)}
		pollCtx := context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: network, Timeout: 10 * time.Second})
		auth, polled := startDevice(t, ctx, pollCtx, e, tv, "openid", "offline_access")
		if auth.Interval != 1 {
			t.Fatalf("interval: got %d, want 1", auth.Interval)
		}

		// Let the device poll four times (two of them early) before the user allows.
		for range 4 {
			select {
			case code := <-network.answered:
				if code != "authorization_pending" {
					t.Fatalf("a poll was answered %s (answers %v), want authorization_pending", code, network.answers())
				}
			case res := <-polled:
				t.Fatalf("DeviceAccessToken ended before the approval: %v (answers %v)", res.err, network.answers())
			case <-ctx.Done():
				t.Fatalf("no pending poll: %v (answers %v)", ctx.Err(), network.answers())
			}
		}
		if done := e.browser(t).approveDevice(t, e, auth.UserCode, user.Email, "allow"); done.status != http.StatusOK {
			t.Fatalf("allow: got %s", done)
		}
		res := <-polled
		if res.err != nil {
			t.Fatalf("DeviceAccessToken: %v (answers %v)", res.err, network.answers())
		}
		if res.tok.AccessToken == "" || res.tok.RefreshToken == "" {
			t.Errorf("tokens: got %+v, want an access and a refresh token", res.tok)
		}
		for _, code := range network.answers() {
			if code != "authorization_pending" {
				t.Errorf("the device was answered %v; want only authorization_pending before its tokens", network.answers())
				break
			}
		}
	})
}
