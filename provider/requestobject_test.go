package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v3"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestRequestObjects pins request objects (RFC 9101): an object signed with the client's
// key is verified and its parameters win over the query's (§6.3), numbers included; an
// unsigned object, one signed with another key or an HMAC, one made for another client, and
// a request_uri the server did not issue are refused at the client's redirect URI.
func TestRequestObjects(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice")
		key, otherKey := newECKey(t, "k1"), newECKey(t, "k1")
		jar := e.client(t, provider.ClientSpec{ID: "jar", FirstParty: true, JWKS: jwksOf(t, key), RequestObjectAlg: "ES256"})
		rp := e.relyingParty(t, jar)
		br := e.browser(t)

		// objectOf is a request object carrying every parameter of ar's query.
		objectOf := func(ar *authRequest, changes map[string]any) map[string]any {
			claims := map[string]any{"iss": jar.ClientID, "aud": e.issuer, "exp": time.Now().Add(5 * time.Minute).Unix()}
			for k, v := range ar.url.Query() {
				claims[k] = v[0]
			}
			return with(claims, changes)
		}
		es := func(claims map[string]any) string { return signWith(t, key.alg, key.priv, key.kid, claims) }

		t.Run("signed object's parameters override the query", func(t *testing.T) {
			ar := rp.start()
			state, nonce := "object-state-"+randomString(16), "object-nonce-"+randomString(16)
			object := es(objectOf(ar, map[string]any{"state": state, "nonce": nonce, "max_age": 3600}))
			ar.set("state", "query-state-"+randomString(16)).set("nonce", "query-nonce").set("request", object)
			ar.state, ar.nonce = state, nonce
			p := br.get(t, ar.String())
			if p.status == http.StatusOK && p.url.Path == e.base+"/login" {
				p = br.login(t, p, alice.Email)
			}
			code := wantCode(t, e, ar, callback(t, p, rpRedirectURI))
			tok := rp.exchange(t, ar, code) // checks the nonce is the object's
			if tok.claims["sub"] != alice.ID {
				t.Errorf("sub: got %v, want %s", tok.claims["sub"], alice.ID)
			}
		})

		t.Run("object with openid is read when the query's scope lacks it", func(t *testing.T) {
			ar := rp.start()
			object := es(objectOf(ar, nil))
			ar.set("scope", "email").set("request", object)
			code := wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
			if tok := rp.exchange(t, ar, code); tok.rawIDToken == "" {
				t.Error("got no ID token, want one: the object asked for openid")
			}
		})

		t.Run("object verified with keys fetched from the client's jwks_uri, without use", func(t *testing.T) {
			uriKey := newECKey(t, "u1")
			doc, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: uriKey.pub, KeyID: uriKey.kid}}})
			if err != nil {
				t.Fatal(err)
			}
			keys := newJWKSServer(t, doc, 300)
			byURI := e.client(t, provider.ClientSpec{ID: "jar-uri", FirstParty: true, JWKSURI: keys.srv.URL})
			uriRP := e.relyingParty(t, byURI)
			ar := uriRP.start()
			state := "object-state-" + randomString(16)
			claims := with(objectOf(ar, map[string]any{"state": state}), map[string]any{"iss": byURI.ClientID})
			ar.set("state", "query-state-"+randomString(16)).set("request", signWith(t, uriKey.alg, uriKey.priv, uriKey.kid, claims))
			ar.state = state
			code := wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI))
			uriRP.exchange(t, ar, code)
			if got := keys.fetches.Load(); got != 1 {
				t.Errorf("JWKS fetches: got %d, want 1", got)
			}
		})

		for _, tc := range []struct {
			name   string
			change func(ar *authRequest)
			want   string
		}{
			{"unsigned object is invalid_request_object", func(ar *authRequest) {
				ar.set("request", unsigned(t, objectOf(ar, nil)))
			}, "invalid_request_object"},
			{"object signed with an unregistered key is invalid_request_object", func(ar *authRequest) {
				ar.set("request", signWith(t, otherKey.alg, otherKey.priv, otherKey.kid, objectOf(ar, nil)))
			}, "invalid_request_object"},
			{"object signed with HS256 is invalid_request_object", func(ar *authRequest) {
				ar.set("request", signWith(t, jose.HS256, []byte(strings.Repeat("k", 32)), "", objectOf(ar, nil)))
			}, "invalid_request_object"},
			{"object made for another client is invalid_request_object", func(ar *authRequest) {
				ar.set("request", es(objectOf(ar, map[string]any{"client_id": "other", "iss": "other"})))
			}, "invalid_request_object"},
			{"object for another audience is invalid_request_object", func(ar *authRequest) {
				ar.set("request", es(objectOf(ar, map[string]any{"aud": "https://other.example"})))
			}, "invalid_request_object"},
			{"expired object is invalid_request_object", func(ar *authRequest) {
				ar.set("request", es(objectOf(ar, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})))
			}, "invalid_request_object"},
			{"object without openid anywhere is request_not_supported", func(ar *authRequest) {
				ar.set("scope", "email").set("request", es(objectOf(ar, map[string]any{"scope": "email"})))
			}, "request_not_supported"},
			{"request_uri on another server is request_uri_not_supported", func(ar *authRequest) {
				ar.set("request_uri", "https://rp.example.com/request.jwt")
			}, "request_uri_not_supported"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ar := rp.start()
				tc.change(ar)
				wantAuthError(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI), tc.want)
			})
		}
	})
}

// TestPushedRequestObjects: a request object pushed to the PAR endpoint is checked as at the
// authorization endpoint: a signed one is verified, its parameters win and its numbers stay
// numbers; an unsigned one, or one signed with another key, is refused at the push.
func TestPushedRequestObjects(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice")
		key, otherKey := newECKey(t, "k1"), newECKey(t, "k1")
		jar := e.client(t, provider.ClientSpec{ID: "jar", FirstParty: true, JWKS: jwksOf(t, key)})
		rp := e.relyingParty(t, jar)
		signedIn := e.browser(t)
		rp.signIn(t, e, signedIn, alice.Email)

		objectOf := func(ar *authRequest, changes map[string]any) map[string]any {
			claims := map[string]any{"iss": jar.ClientID, "aud": e.issuer, "exp": time.Now().Add(5 * time.Minute).Unix()}
			for k, v := range ar.url.Query() {
				claims[k] = v[0]
			}
			return with(claims, changes)
		}
		push := func(object string) jsonResponse {
			return e.push(t, url.Values{"request": {object}}, basicAuth(jar))
		}

		t.Run("a signed pushed object starts the flow with its parameters", func(t *testing.T) {
			ar := rp.start()
			state := "object-state-" + randomString(16)
			r := push(signWith(t, key.alg, key.priv, key.kid, objectOf(ar, map[string]any{"state": state, "max_age": 3600})))
			if r.status != http.StatusCreated {
				t.Fatalf("push: got %s, want 201", r)
			}
			ar.state = state
			uri, _ := r.body["request_uri"].(string)
			code := wantCode(t, e, ar, callback(t, signedIn.get(t, e.parURL(jar.ClientID, uri)), rpRedirectURI))
			rp.exchange(t, ar, code)
		})
		for _, tc := range []struct {
			name   string
			object func(ar *authRequest) string
		}{
			{"an unsigned pushed object is invalid_request_object", func(ar *authRequest) string { return unsigned(t, objectOf(ar, nil)) }},
			{"a pushed object naming another client is invalid_request_object", func(ar *authRequest) string {
				return signWith(t, key.alg, key.priv, key.kid, objectOf(ar, map[string]any{"iss": "other", "client_id": "other"}))
			}},
			{"a pushed object signed with another key is invalid_request_object", func(ar *authRequest) string {
				return signWith(t, otherKey.alg, otherKey.priv, otherKey.kid, objectOf(ar, nil))
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantOAuthError(t, push(tc.object(rp.start())), http.StatusBadRequest, "invalid_request_object")
			})
		}
	})
}

// TestRequestObjectBindsWhatItLeavesOut: with a signed request object, only its parameters
// count (RFC 9101 §6.3): a nonce, a code_challenge or a claims parameter in the unsigned
// query beside an object without them is not used, at the authorization endpoint or pushed
// to the PAR endpoint; client_id, response_type and an openid scope still come from the
// query, as OpenID Connect Core §6.1 sends them.
func TestRequestObjectBindsWhatItLeavesOut(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		e := newEnv(t, b, provider.Config{})
		alice := e.user(t, "alice@example.com", "Alice")
		if _, err := e.p.UpdateUser(context.Background(), alice.ID, provider.UserUpdate{
			Profile: provider.ProfileChange{Nickname: ptr("ally")}}); err != nil {
			t.Fatal(err)
		}
		key := newECKey(t, "k1")
		jar := e.client(t, provider.ClientSpec{ID: "jar", FirstParty: true, JWKS: jwksOf(t, key), RequestObjectAlg: "ES256",
			Scopes: []string{"openid", "profile", "email"}, Audience: []string{apiAudience}})
		rp := e.relyingParty(t, jar, "openid", "profile")
		br := e.browser(t)
		rp.signIn(t, e, br, alice.Email)
		audienceOf := func(t *testing.T, tok tokens) []string {
			t.Helper()
			at, err := e.p.VerifyAccessToken(context.Background(), tok.AccessToken)
			if err != nil {
				t.Fatalf("VerifyAccessToken: %v", err)
			}
			return at.Audience
		}
		// objectOf is a request object carrying ar's query but what changes removes.
		objectOf := func(ar *authRequest, changes map[string]any) string {
			claims := map[string]any{"iss": jar.ClientID, "aud": e.issuer, "exp": time.Now().Add(5 * time.Minute).Unix()}
			for k, v := range ar.url.Query() {
				claims[k] = v[0]
			}
			return signWith(t, key.alg, key.priv, key.kid, with(claims, changes))
		}
		nickname := `{"id_token":{"nickname":{"essential":true}}}`
		// viaQuery sends the object in the query; viaPAR pushes it with the query's other
		// parameters in the body beside it.
		viaQuery := func(t *testing.T, ar *authRequest, object string) page {
			ar.set("request", object)
			return br.get(t, ar.String())
		}
		viaPAR := func(t *testing.T, ar *authRequest, object string) page {
			form := ar.url.Query()
			form.Set("request", object)
			r := e.push(t, form, basicAuth(jar))
			if r.status != http.StatusCreated {
				t.Fatalf("push: got %s, want 201", r)
			}
			return br.get(t, e.parURL(jar.ClientID, r.body["request_uri"].(string)))
		}
		for _, via := range []struct {
			name string
			send func(t *testing.T, ar *authRequest, object string) page
		}{{"query", viaQuery}, {"PAR", viaPAR}} {
			t.Run(via.name, func(t *testing.T) {
				t.Run("the query's nonce is not used", func(t *testing.T) {
					ar := rp.start()
					p := via.send(t, ar, objectOf(ar, map[string]any{"nonce": nil}))
					ar.nonce = "" // exchange checks the ID token carries none
					rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
				})
				t.Run("the query's code_challenge is not used", func(t *testing.T) {
					ar := rp.start()
					object := objectOf(ar, map[string]any{"code_challenge": nil, "code_challenge_method": nil})
					if via.name == "PAR" {
						form := ar.url.Query()
						form.Set("request", object)
						wantOAuthError(t, e.push(t, form, basicAuth(jar)), http.StatusBadRequest, "invalid_request")
						return
					}
					wantAuthError(t, e, ar, callback(t, via.send(t, ar, object), rpRedirectURI), "invalid_request")
				})
				t.Run("the query's claims are not used", func(t *testing.T) {
					ar := rp.start(oauth2.SetAuthURLParam("claims", nickname))
					p := via.send(t, ar, objectOf(ar, map[string]any{"claims": nil}))
					if tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI))); tok.claims["nickname"] != nil {
						t.Errorf("ID token nickname: got %v, want none: only the query asked for it", tok.claims["nickname"])
					}
				})
				t.Run("the query's scopes are not added to the object's", func(t *testing.T) {
					ar := rp.start()
					p := via.send(t, ar, objectOf(ar, map[string]any{"scope": "openid"}))
					tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
					if scope := tok.Extra("scope"); scope != "openid" || tok.claims["name"] != nil {
						t.Errorf("granted scope %v, ID token name %v; want openid alone, as the object asks", scope, tok.claims["name"])
					}
				})
				t.Run("the query's resource is not used", func(t *testing.T) {
					ar := rp.start(oauth2.SetAuthURLParam("resource", apiAudience))
					p := via.send(t, ar, objectOf(ar, map[string]any{"resource": nil}))
					tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
					if got := audienceOf(t, tok); slices.Contains(got, apiAudience) {
						t.Errorf("access token aud: got %v, want no %s: only the query asked for it", got, apiAudience)
					}
				})
				t.Run("the object's resource list is used", func(t *testing.T) {
					ar := rp.start()
					p := via.send(t, ar, objectOf(ar, map[string]any{"resource": []string{apiAudience}}))
					tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI)))
					if got := audienceOf(t, tok); !slices.Contains(got, apiAudience) {
						t.Errorf("access token aud: got %v, want %s, as the object asks", got, apiAudience)
					}
				})
				t.Run("the object's own are used", func(t *testing.T) {
					ar := rp.start(oauth2.SetAuthURLParam("claims", nickname))
					object, nonce := objectOf(ar, nil), ar.nonce
					ar.set("nonce", "query-nonce-"+randomString(8)).set("claims", "")
					ar.nonce = nonce // exchange checks the ID token carries the object's
					p := via.send(t, ar, object)
					if tok := rp.exchange(t, ar, wantCode(t, e, ar, callback(t, p, rpRedirectURI))); tok.claims["nickname"] != "ally" {
						t.Errorf("ID token nickname: got %v, want ally: the object asked for it", tok.claims["nickname"])
					}
				})
			})
		}
	})
}
