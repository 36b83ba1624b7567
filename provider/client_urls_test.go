package provider_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/testlog"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// blackHole is a listener on 127.0.0.1 that accepts connections and never answers: a
// relying party whose endpoint hangs. It counts the connections it accepted.
type blackHole struct {
	ln    net.Listener
	conns atomic.Int32
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &blackHole{ln: ln}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			h.conns.Add(1)
			mu.Lock()
			held = append(held, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return h
}

// url is http://<the hole's address><path>.
func (h *blackHole) url(path string) string { return "http://" + h.ln.Addr().String() + path }

// closedPort is a 127.0.0.1 address nobody listens on: connections are refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// registerClient registers metadata dynamically (open registration) and returns the
// client id and its registration access token.
func registerClient(t *testing.T, e *env, metadata map[string]any) (id, token string) {
	t.Helper()
	r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", metadata)
	if r.status != http.StatusCreated {
		t.Fatalf("register: got %s, want 201", r)
	}
	id, _ = r.body["client_id"].(string)
	token, _ = r.body["registration_access_token"].(string)
	return id, token
}

// pointClientAt rewrites, behind the provider's back, where the stored client's jwks_uri and
// back-channel logout URI point: as a client registered before the rules, or a database
// edited by hand, would have them.
func pointClientAt(t *testing.T, e *env, clientID, jwksURI, logoutURI string) {
	t.Helper()
	ctx := context.Background()
	c, err := e.store.ClientByID(ctx, clientID)
	if err != nil {
		t.Fatal(err)
	}
	c.JWKSURI, c.BackchannelLogoutURI = jwksURI, logoutURI
	if err := e.store.UpdateClient(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// privateKeyJWTMetadata is webAppMetadata for a private_key_jwt client with a jwks_uri.
func privateKeyJWTMetadata(jwksURI string) map[string]any {
	m := webAppMetadata()
	m["token_endpoint_auth_method"] = "private_key_jwt"
	m["jwks_uri"] = jwksURI
	m["request_object_signing_alg"] = "ES256"
	return m
}

// assertAtToken sends a token request authenticated by an assertion k signed for clientID:
// the client is authenticated (and its keys fetched) before the code is looked at.
func assertAtToken(t *testing.T, e *env, clientID string, k clientKey) jsonResponse {
	t.Helper()
	a := signWith(t, k.alg, k.priv, k.kid, assertionClaims(clientID, e.issuer, time.Now()))
	return e.call(t, http.MethodPost, "/api/oauth/token", assertionForm(url.Values{
		"grant_type": {"authorization_code"}, "code": {"not-a-code"}, "redirect_uri": {rpRedirectURI},
	}, a), nil)
}

// authorizeWithObject sends an authorization request carrying a request object signed by k
// for clientID, without any client authentication (anyone may), and returns the status and
// where it redirects.
func authorizeWithObject(t *testing.T, e *env, clientID string, k clientKey) (int, url.Values) {
	t.Helper()
	verifier := make([]byte, 32)
	_, _ = rand.Read(verifier)
	sum := sha256.Sum256([]byte(base64.RawURLEncoding.EncodeToString(verifier)))
	q := url.Values{"client_id": {clientID}, "response_type": {"code"}, "scope": {"openid"},
		"redirect_uri": {rpRedirectURI}, "state": {randomString(16)}, "nonce": {randomString(16)},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	claims := map[string]any{"iss": clientID, "aud": e.issuer, "exp": time.Now().Add(time.Minute).Unix()}
	for name := range q {
		claims[name] = q.Get(name)
	}
	q.Set("request", signWith(t, k.alg, k.priv, k.kid, claims))
	resp, err := e.back.Get(e.issuer + "/api/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc == nil {
		return resp.StatusCode, url.Values{}
	}
	return resp.StatusCode, loc.Query()
}

// endSessionIn ends a browser session of a new user in which clientID was issued a code, so
// a logout message to the client is queued.
func endSessionIn(t *testing.T, e *env, clientID, email string) {
	t.Helper()
	ctx := context.Background()
	u := e.user(t, email, "User")
	now := time.Now().UTC()
	s := &publicauth.Session{IDHash: randomString(32), UserID: u.ID, Kind: publicauth.SessionPublic,
		Method: publicauth.MethodPassword, AuthTime: now, ExpiresAt: now.Add(time.Hour)}
	if err := e.store.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := e.store.RecordSessionClient(ctx, s.SID, clientID); err != nil {
		t.Fatal(err)
	}
	if err := e.store.DeleteSession(ctx, s.IDHash); err != nil {
		t.Fatal(err)
	}
}

// TestRegistrationRefusesInternalClientURLs: at registration (RFC 7591) and at its update
// (RFC 7592 PUT), a jwks_uri or backchannel_logout_uri that is not https, names localhost,
// or is an address on loopback, a private network, link-local, shared or unspecified space
// (IPv4-mapped too), or a numeric host resolvers read as one, is invalid_client_metadata
// with a description naming the member; https on a public host or address is accepted.
func TestRegistrationRefusesInternalClientURLs(t *testing.T) {
	t.Parallel()
	refused := []string{
		"http://127.0.0.1:9000/x", "http://localhost:9000/x", "http://rp.example.com/x",
		"https://127.0.0.1/x", "https://127.1.2.3:8443/x", "https://localhost/x", "https://app.localhost./x",
		"https://[::1]/x", "https://10.0.0.5/x", "https://172.16.1.1/x", "https://192.168.0.1/x",
		"https://169.254.169.254/latest/meta-data/", "https://100.64.0.1/x", "https://0.0.0.0/x",
		"https://[fd00::1]/x", "https://[fe80::1]/x", "https://[::ffff:127.0.0.1]/x",
		"https://[::ffff:a9fe:a9fe]/x", "https://[64:ff9b::a00:5]/x", "https://2130706433/x", "https://0x7f.1/x",
		"https://017700000001/x",
	}
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{OpenRegistration: true})
		metadata := func(member, uri string) map[string]any {
			if member == "jwks_uri" {
				return privateKeyJWTMetadata(uri)
			}
			m := webAppMetadata()
			m[member] = uri
			return m
		}
		id, token := registerClient(t, e, privateKeyJWTMetadata("https://rp.example.com/jwks"))
		for _, member := range []string{"jwks_uri", "backchannel_logout_uri"} {
			for _, uri := range refused {
				r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", metadata(member, uri))
				if desc, _ := r.body["error_description"].(string); r.status != http.StatusBadRequest ||
					r.body["error"] != "invalid_client_metadata" || !strings.Contains(desc, member) {
					t.Errorf("register %s %s: got %s, want 400 invalid_client_metadata naming %s", member, uri, r, member)
				}
				update := metadata(member, uri)
				update["client_id"] = id
				r = e.sendBody(t, http.MethodPut, registrationPath(id), token, update)
				if r.status != http.StatusBadRequest || r.body["error"] != "invalid_client_metadata" {
					t.Errorf("update %s to %s: got %s, want 400 invalid_client_metadata", member, uri, r)
				}
			}
			for _, uri := range []string{"https://rp.example.com/ok", "https://93.184.215.14/ok", "https://[2606:4700::1111]/ok"} {
				if r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", metadata(member, uri)); r.status != http.StatusCreated {
					t.Errorf("register %s %s: got %s, want 201", member, uri, r)
				}
			}
		}
		stored, err := e.store.ClientByID(context.Background(), id)
		if err != nil || stored.JWKSURI != "https://rp.example.com/jwks" || stored.BackchannelLogoutURI != "https://rp.example.com/bcl" {
			t.Errorf("the refused updates changed the client: %+v, %v", stored, err)
		}
	})
}

// TestDynamicClientURLsNeverReachInternalAddresses: a dynamically registered client whose
// jwks_uri and back-channel logout URI point at a listener on 127.0.0.1 (stored before the
// registration rules, or edited in the database) makes Gatehouse connect there neither for
// an assertion at the token endpoint, nor for a request object anyone may send to
// /authorize, nor for a logout token; a client the operator created with the same URLs
// reaches them.
func TestDynamicClientURLsNeverReachInternalAddresses(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{OpenRegistration: true, JanitorInterval: -1,
			BackchannelLogout: provider.BackchannelLogoutConfig{Interval: -1}})
		key := newECKey(t, "k1")
		keys := newJWKSServer(t, jwksOf(t, key), 600)
		rcv := newLogoutReceiver(t)
		dynamic, _ := registerClient(t, e, privateKeyJWTMetadata("https://rp.example.com/jwks"))
		pointClientAt(t, e, dynamic, keys.srv.URL+"/internal/admin?action=delete_all", rcv.srv.URL+"/backchannel-logout?cmd=shutdown")

		wantOAuthError(t, assertAtToken(t, e, dynamic, key), http.StatusUnauthorized, "invalid_client")
		status, q := authorizeWithObject(t, e, dynamic, key)
		if q.Get("error") != "invalid_request_object" && status < 400 {
			t.Errorf("request object at /authorize: got %d %v, want invalid_request_object", status, q)
		}
		endSessionIn(t, e, dynamic, "dynamic@example.com")
		if n, err := e.p.DeliverLogouts(context.Background()); n != 0 || err != nil {
			t.Errorf("DeliverLogouts: %d delivered, %v; want none", n, err)
		}
		if got := keys.fetches.Load(); got != 0 {
			t.Errorf("the loopback JWKS server got %d requests, want none", got)
		}
		if got := rcv.received(); len(got) != 0 {
			t.Errorf("the loopback logout endpoint got %d tokens, want none", len(got))
		}
		msgs, err := e.store.PendingLogouts(context.Background())
		if err != nil || len(msgs) != 1 || !strings.Contains(msgs[0].LastError, "refused") {
			t.Errorf("outbox: %+v, %v; want the message kept with a refusal as its last error", msgs, err)
		}

		// The operator's client, same URLs: trusted.
		trusted := e.client(t, provider.ClientSpec{ID: "trusted", AuthMethod: "private_key_jwt", JWKSURI: keys.srv.URL + "/jwks",
			BackchannelLogoutURI: rcv.uri()})
		wantOAuthError(t, assertAtToken(t, e, trusted.ClientID, key), http.StatusBadRequest, "invalid_grant")
		if got := keys.fetches.Load(); got != 1 {
			t.Errorf("the operator's client's JWKS: %d fetches, want 1", got)
		}
		endSessionIn(t, e, trusted.ClientID, "trusted@example.com")
		if n, err := e.p.DeliverLogouts(context.Background()); n != 1 || err != nil {
			t.Errorf("DeliverLogouts for the operator's client: %d delivered, %v; want 1", n, err)
		}
	})
}

// TestInsecureAllowPrivateClientURLs: the development switch lets a dynamically registered
// client register loopback and private URLs and makes Gatehouse reach them.
func TestInsecureAllowPrivateClientURLs(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{OpenRegistration: true, InsecureAllowPrivateClientURLs: true, JanitorInterval: -1,
			BackchannelLogout: provider.BackchannelLogoutConfig{Interval: -1}})
		key := newECKey(t, "k1")
		keys := newJWKSServer(t, jwksOf(t, key), 600)
		rcv := newLogoutReceiver(t)
		m := privateKeyJWTMetadata(keys.srv.URL + "/jwks")
		m["backchannel_logout_uri"] = rcv.uri()
		dev, _ := registerClient(t, e, m)
		if r := e.sendBody(t, http.MethodPost, "/api/oauth/register", "", privateKeyJWTMetadata("https://10.0.0.5/jwks")); r.status != http.StatusCreated {
			t.Errorf("register a private https jwks_uri: got %s, want 201", r)
		}
		wantOAuthError(t, assertAtToken(t, e, dev, key), http.StatusBadRequest, "invalid_grant")
		if got := keys.fetches.Load(); got != 1 {
			t.Errorf("JWKS fetches: got %d, want 1", got)
		}
		endSessionIn(t, e, dev, "dev@example.com")
		if n, err := e.p.DeliverLogouts(context.Background()); n != 1 || err != nil {
			t.Errorf("DeliverLogouts: %d delivered, %v; want 1", n, err)
		}
	})
}

// TestClientURLFailuresAnswerAlike: whether a client's jwks_uri is a closed port, a server
// that never answers, or an internal address refused for a dynamically registered client,
// the client gets the same answer; each failure is logged with the client id and counted by
// its reason.
func TestClientURLFailuresAnswerAlike(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		var logs testlog.Buffer
		e := newEnv(t, b, provider.Config{OpenRegistration: true, JanitorInterval: -1,
			BackchannelLogout: provider.BackchannelLogoutConfig{Interval: -1}},
			provider.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		key := newECKey(t, "k1")
		closed, silent := closedPort(t), newBlackHole(t)
		refused, _ := registerClient(t, e, privateKeyJWTMetadata("https://rp.example.com/jwks"))
		pointClientAt(t, e, refused, "http://"+closed+"/jwks", "http://"+closed+"/bcl")
		clients := map[string]string{
			"closed":  e.client(t, provider.ClientSpec{ID: "closed-port", AuthMethod: "private_key_jwt", JWKSURI: "http://" + closed + "/jwks"}).ClientID,
			"silent":  e.client(t, provider.ClientSpec{ID: "silent-port", AuthMethod: "private_key_jwt", JWKSURI: silent.url("/jwks")}).ClientID,
			"refused": refused,
		}
		var first jsonResponse
		for _, name := range []string{"closed", "silent", "refused"} {
			r := assertAtToken(t, e, clients[name], key)
			wantOAuthError(t, r, http.StatusUnauthorized, "invalid_client")
			if name == "closed" {
				first = r
			} else if r.status != first.status || r.body["error"] != first.body["error"] || r.body["error_description"] != first.body["error_description"] {
				t.Errorf("%s port: got %s, want the answer of a closed port, %s", name, r, first)
			}
			if !strings.Contains(logs.String(), "client_id="+clients[name]) {
				t.Errorf("%s port: no log line names client %s", name, clients[name])
			}
		}
		endSessionIn(t, e, refused, "refused@example.com")
		if _, err := e.p.DeliverLogouts(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := e.p.Stats().OutboundFailures
		for _, want := range []provider.OutboundFailure{
			{Purpose: "jwks_uri", Reason: "connection"},
			{Purpose: "jwks_uri", Reason: "timeout"},
			{Purpose: "jwks_uri", Reason: "refused_address"},
			{Purpose: "backchannel_logout_uri", Reason: "refused_address"},
		} {
			if got[want] != 1 {
				t.Errorf("OutboundFailures[%+v]: got %d, want 1 (all: %v)", want, got[want], got)
			}
		}
	})
}
