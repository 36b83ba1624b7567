package storagetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/token/jwt"
)

// t0 is the reference instant of expiry cases: far enough in the future that no expiry the
// store computes from the real clock reaches it.
var t0 = time.Date(2040, 3, 4, 5, 6, 7, 123456000, time.UTC)

// otherZone is a zone east of UTC with a non-hour offset, for time-zone cases.
var otherZone = time.FixedZone("UTC+05:30", 5*3600+30*60)

func randomID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newClient(id string) *storage.Client {
	return &storage.Client{
		ID:                     id,
		SecretHash:             []byte{0x01, 0x02, 0xfe, 0xff},
		Name:                   "Client " + id,
		RedirectURIs:           []string{"https://" + id + ".example/callback", "http://127.0.0.1/cb"},
		PostLogoutRedirectURIs: []string{"https://" + id + ".example/logged-out"},
		GrantTypes:             []string{"authorization_code", "refresh_token"},
		ResponseTypes:          []string{"code"},
		Scopes:                 []string{"openid", "email", "profile", "offline_access"},
		Audience:               []string{"https://api.example"},
		FirstParty:             true,
		IDTokenAlg:             "ES256",
		CreatedAt:              time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		UpdatedAt:              time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC),
	}
}

func mustCreateClient(t *testing.T, s *storage.Store, id string) *storage.Client {
	t.Helper()
	c := newClient(id)
	if err := s.CreateClient(context.Background(), c); err != nil {
		t.Fatalf("CreateClient(%q): %v", id, err)
	}
	return c
}

func newUser(email string) *publicauth.User {
	return &publicauth.User{
		ID:            "user-" + email,
		Email:         email,
		EmailVerified: true,
		Name:          "Name of " + email,
		PasswordHash:  "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA",
		Role:          publicauth.RoleUser,
		Status:        publicauth.StatusActive,
		CreatedAt:     time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		UpdatedAt:     time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func mustCreateUser(t *testing.T, s *storage.Store, email string) *publicauth.User {
	t.Helper()
	u := newUser(email)
	if err := s.CreateUser(context.Background(), u); err != nil {
		t.Fatalf("CreateUser(%q): %v", email, err)
	}
	return u
}

// newRequest is a fosite request of client for subject, as fosite hands it to storage, whose
// session expires at exp for every token type.
func newRequest(t *testing.T, client *storage.Client, subject string, exp time.Time) *fosite.Request {
	t.Helper()
	session := &openid.DefaultSession{
		Claims: &jwt.IDTokenClaims{
			Subject:     subject,
			Issuer:      "https://issuer.example",
			Nonce:       "nonce-" + randomID(t),
			AuthTime:    time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC),
			RequestedAt: time.Date(2030, 1, 1, 10, 0, 1, 0, time.UTC),
			Extra:       map[string]any{"email": subject + "@example.com"},
		},
		Headers: &jwt.Headers{Extra: map[string]any{"kid": "key-1"}},
		Subject: subject,
		ExpiresAt: map[fosite.TokenType]time.Time{
			fosite.AuthorizeCode: exp,
			fosite.AccessToken:   exp,
			fosite.RefreshToken:  exp,
		},
	}
	return &fosite.Request{
		ID:                randomID(t),
		RequestedAt:       time.Date(2030, 1, 1, 10, 0, 0, 0, otherZone),
		Client:            client,
		RequestedScope:    fosite.Arguments{"openid", "email", "offline_access"},
		GrantedScope:      fosite.Arguments{"openid", "offline_access"},
		RequestedAudience: fosite.Arguments{"https://api.example"},
		GrantedAudience:   fosite.Arguments{"https://api.example"},
		Form: url.Values{
			"redirect_uri":          {"https://app.example/callback"},
			"code_challenge":        {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"},
			"code_challenge_method": {"S256"},
			"scope":                 {"openid email offline_access"},
		},
		Session: session,
	}
}

// newSession is the empty session prototype fosite passes to the getters.
func newSession() *openid.DefaultSession {
	return &openid.DefaultSession{}
}

// checkRequest compares what storage returned with the request that was stored.
func checkRequest(t *testing.T, got fosite.Requester, want *fosite.Request) {
	t.Helper()
	if got == nil {
		t.Fatalf("got nil request, want request %q", want.ID)
	}
	if got.GetID() != want.ID {
		t.Errorf("got id %q, want %q", got.GetID(), want.ID)
	}
	if !got.GetRequestedAt().Equal(want.RequestedAt) || got.GetRequestedAt().Location() != time.UTC {
		t.Errorf("got requested_at %v, want %v in UTC", got.GetRequestedAt(), want.RequestedAt)
	}
	if got.GetClient() == nil || got.GetClient().GetID() != want.Client.GetID() {
		t.Errorf("got client %v, want %q", got.GetClient(), want.Client.GetID())
	}
	if _, ok := got.GetClient().(*storage.Client); !ok {
		t.Errorf("got client of type %T, want *storage.Client", got.GetClient())
	}
	for _, c := range []struct {
		name      string
		got, want fosite.Arguments
	}{
		{"requested scopes", got.GetRequestedScopes(), want.RequestedScope},
		{"granted scopes", got.GetGrantedScopes(), want.GrantedScope},
		{"requested audience", got.GetRequestedAudience(), want.RequestedAudience},
		{"granted audience", got.GetGrantedAudience(), want.GrantedAudience},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("got %s %q, want %q", c.name, c.got, c.want)
		}
	}
	if got.GetRequestForm().Encode() != want.Form.Encode() {
		t.Errorf("got form %q, want %q", got.GetRequestForm().Encode(), want.Form.Encode())
	}
	gotSession, ok := got.GetSession().(*openid.DefaultSession)
	if !ok {
		t.Fatalf("got session of type %T, want *openid.DefaultSession", got.GetSession())
	}
	wantSession := want.Session.(*openid.DefaultSession)
	if gotSession.Subject != wantSession.Subject {
		t.Errorf("got session subject %q, want %q", gotSession.Subject, wantSession.Subject)
	}
	if gotSession.Claims == nil || gotSession.Claims.Nonce != wantSession.Claims.Nonce ||
		!gotSession.Claims.AuthTime.Equal(wantSession.Claims.AuthTime) {
		t.Errorf("got id token claims %+v, want %+v", gotSession.Claims, wantSession.Claims)
	}
	if gotSession.Headers == nil || gotSession.Headers.Extra["kid"] != "key-1" {
		t.Errorf("got headers %+v, want kid key-1", gotSession.Headers)
	}
	for _, tt := range []fosite.TokenType{fosite.AuthorizeCode, fosite.AccessToken, fosite.RefreshToken} {
		if g, w := gotSession.GetExpiresAt(tt), wantSession.ExpiresAt[tt]; !g.Equal(w) {
			t.Errorf("got %s expiry %v, want %v", tt, g, w)
		}
	}
}

// checkErr fails t unless err matches want (errors.Is; want nil means no error).
func checkErr(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf("%s: got error %v, want none", what, err)
	case want != nil && !errors.Is(err, want):
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

// mustNoErr fails t now when err is not nil.
func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
