package permissions

import (
	"errors"
	"testing"
	"time"
)

// TestAuthorize checks the rule set itself over every kind of caller and operation; the
// provider's access table checks the same cells through real HTTP and real tokens.
func TestAuthorize(t *testing.T) {
	token := func(sub, client string, userBound bool, scopes ...string) caller {
		return caller{token: &TokenInfo{Subject: sub, ClientID: client, UserBound: userBound, Scopes: scopes}}
	}
	callers := map[string]caller{
		"nobody":                     {},
		"admin":                      {adminID: "root"},
		"user token":                 token("alice", "app", true),
		"user token with scope":      token("alice", "app", true, ScopeManagePermissions),
		"other user's token":         token("bob", "app", true),
		"user token of other client": token("alice", "other", true),
		"client token":               token("app", "app", false, "openid", ScopeManagePermissions),
		"client token without scope": token("app", "app", false, "openid"),
		"other client's token":       token("other", "other", false, ScopeManagePermissions),
	}
	want := map[operation]map[string]error{
		opRead: {
			"nobody": ErrNoCredentials, "admin": nil, "user token": nil, "user token with scope": nil,
			"other user's token": ErrSubjectMismatch, "user token of other client": ErrClientMismatch, "client token": nil,
			"client token without scope": ErrScopeMissing, "other client's token": ErrClientMismatch,
		},
		opClientWrite: {
			"nobody": ErrNoCredentials, "admin": ErrNoCredentials, "user token": ErrClientTokenRequired,
			"user token with scope": ErrClientTokenRequired, "other user's token": ErrClientTokenRequired,
			"user token of other client": ErrClientMismatch, "client token": nil,
			"client token without scope": ErrScopeMissing, "other client's token": ErrClientMismatch,
		},
		opRequestAccess: {
			"nobody": ErrNoCredentials, "admin": ErrNoCredentials, "user token": nil, "user token with scope": nil,
			"other user's token": ErrSubjectMismatch, "user token of other client": ErrClientMismatch,
			"client token": ErrUserTokenRequired, "client token without scope": ErrUserTokenRequired,
			"other client's token": ErrClientMismatch,
		},
		opAdmin: {
			"nobody": ErrNoSession, "admin": nil, "user token": ErrNoSession, "user token with scope": ErrNoSession,
			"other user's token": ErrNoSession, "user token of other client": ErrNoSession, "client token": ErrNoSession,
			"client token without scope": ErrNoSession, "other client's token": ErrNoSession,
		},
	}
	for op, cells := range want {
		for name, c := range callers {
			wantErr, ok := cells[name]
			if !ok {
				t.Errorf("operation %d: no cell for %s", op, name)
				continue
			}
			if err := authorize(op, c, "alice", "app"); !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
				t.Errorf("operation %d, %s: got %v, want %v", op, name, err, wantErr)
			}
		}
	}
}

// TestTransitions checks the state machine of SSO interface §3 and DESIGN §4.
func TestTransitions(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	admin := Actor{Kind: ActorAdmin, ID: "root"}
	app := Actor{Kind: ActorClient, ID: "app"}

	r := newRecord("alice", "app", t0)
	if out, err := applyRequest(r, t0); out != RequestCreated || err != nil || r.RequestedAt == nil || r.Status != StatusPending {
		t.Fatalf("first request: got %v, %v, %+v", out, err, r)
	}
	if out, err := applyRequest(r, t1); out != RequestPending || err != nil || !r.RequestedAt.Equal(t0) {
		t.Errorf("second request: got %v, %v, requestedAt %v; want pending and the first request kept", out, err, r.RequestedAt)
	}
	applyPut(r, StatusApproved, RoleUser, app, t1)
	if !r.HasAccess || r.GrantedBy != "client:app" || !r.GrantedAt.Equal(t1) {
		t.Errorf("client approval: got %+v", r)
	}
	applyPut(r, StatusApproved, RoleAdmin, admin, t1)
	if r.GrantedBy != "root" || r.Role != RoleAdmin {
		t.Errorf("admin promotion: got %+v", r)
	}
	if _, err := applyRequest(r, t1); !errors.Is(err, ErrAlreadyApproved) {
		t.Errorf("request when approved: got %v, want ErrAlreadyApproved", err)
	}
	applyPut(r, StatusApproved, RoleNone, admin, t1)
	if r.HasAccess {
		t.Errorf("approved with role none: got hasAccess true")
	}
	applyRevoke(r, t1)
	if r.Status != StatusRevoked || r.Role != RoleNone || r.HasAccess || r.GrantedBy != "root" {
		t.Errorf("revocation: got %+v, want revoked, role none, the last grant kept", r)
	}
	if out, err := applyRequest(r, t1); out != RequestCreated || err != nil || r.GrantedAt != nil || r.GrantedBy != "" || !r.RequestedAt.Equal(t1) {
		t.Errorf("request after revocation: got %v, %v, %+v; want a fresh pending request", out, err, r)
	}
	// A pending record set by a PUT has no request yet: the user's request stamps one.
	put := newRecord("bob", "app", t0)
	applyPut(put, StatusPending, RoleNone, app, t0)
	if out, _ := applyRequest(put, t1); out != RequestCreated || !put.RequestedAt.Equal(t1) {
		t.Errorf("request on a PUT-made pending record: got %v, %+v", out, put)
	}
}

// TestCursorRoundTrip: a cursor the service hands out is read back; anything else is a 400.
func TestCursorRoundTrip(t *testing.T) {
	c := Cursor{At: time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC), Key: "user-1"}
	got, err := decodeCursor(encodeCursor(c))
	if err != nil || !got.At.Equal(c.At) || got.Key != c.Key {
		t.Errorf("round trip: got %+v, %v; want %+v", got, err, c)
	}
	for _, bad := range []string{"!!", "bm9wZQ", encodeCursor(Cursor{Key: "k"})} {
		var inputErr *InputError
		if _, err := decodeCursor(bad); !errors.As(err, &inputErr) || inputErr.Field != "cursor" {
			t.Errorf("decodeCursor(%q): got %v, want an InputError on cursor", bad, err)
		}
	}
}
