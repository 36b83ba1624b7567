package storagetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/permissions"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/ory/fosite"
)

// adminCases are the cases of what an operator changes: users deleted, clients updated,
// client secrets rotated.
func adminCases() []storageCase {
	return []storageCase{
		{"DeleteUser", testDeleteUser},
		{"AccountRowsWithoutUser", testAccountRowsWithoutUser},
		{"UpdateClient", testUpdateClient},
		{"SetClientSecretHash", testSetClientSecretHash},
		{"ClientAuthentication", testClientAuthentication},
	}
}

// testDeleteUser: DeleteUser removes the user with every row of theirs (tokens, codes,
// consents, sessions, one-time tokens, PIN challenges, identities, permission records,
// authorization requests they logged in to, queued mail) and nothing of another user; inside a
// transaction that fails it removes nothing; the audit log keeps its entries; the email is
// free again.
func testDeleteUser(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	client := mustCreateClient(t, s, "app")
	victim := mustCreateUser(t, s, "victim@example.com")
	other := mustCreateUser(t, s, "other@example.com")
	issued := time.Now() // of an access token of each user
	for _, u := range []*publicauth.User{victim, other} {
		req := newRequest(t, client, u.ID, t0)
		mustNoErr(t, "create code", s.CreateAuthorizeCodeSession(ctx, "code-"+u.ID, req))
		mustNoErr(t, "create PKCE row", s.CreatePKCERequestSession(ctx, "code-"+u.ID, req))
		mustNoErr(t, "create refresh token", s.CreateRefreshTokenSession(ctx, "rt-"+u.ID, "at-"+u.ID, req))
		mustNoErr(t, "save consent", s.SaveConsent(ctx, &storage.Consent{
			UserID: u.ID, ClientID: client.ID, Scopes: []string{"openid"}, GrantedAt: t0,
		}))
		mustNoErr(t, "create session", s.CreateSession(ctx, &publicauth.Session{
			IDHash: "sess-" + u.ID, UserID: u.ID, Kind: publicauth.SessionPublic, Method: publicauth.MethodPassword,
			AuthTime: t0.Add(-time.Hour), CreatedAt: t0.Add(-time.Hour), ExpiresAt: t0.Add(time.Hour),
		}))
		mustCreateToken(t, s, newToken("tok-"+u.ID, publicauth.PurposeMagicLink, u.ID, t0.Add(time.Hour)), false)
		mustCreateChallenge(t, s, newChallenge("pin-"+u.ID, u.ID, t0.Add(time.Hour)))
		_, err := s.LinkIdentity(ctx, u.ID, publicauth.Identity{Provider: "google", Subject: "g-" + u.ID, Email: u.Email})
		mustNoErr(t, "LinkIdentity", err)
		rec := record(u.ID, client.ID, permissions.StatusApproved, permissions.RoleUser, t0)
		mustNoErr(t, "SavePermission", s.SavePermission(ctx, rec, true))
		mustNoErr(t, "AddAuditEntry", s.AddAuditEntry(ctx, auditEntry("audit-"+u.ID, rec, nil, t0)))
		mustNoErr(t, "CreateAuthRequest", s.CreateAuthRequest(ctx, &storage.AuthRequest{
			IDHash: "ar-" + u.ID, ClientID: client.ID, ExpiresAt: t0.Add(time.Hour),
		}))
		mustNoErr(t, "CompleteAuthRequestLogin", s.CompleteAuthRequestLogin(ctx, "ar-"+u.ID, "ar-"+u.ID, u.ID, t0))
		m := queuedMail(0)
		m.ID, m.UserID = "mail-"+u.ID, u.ID
		mustNoErr(t, "EnqueueMail", s.EnqueueMail(ctx, m))
	}
	// queuedFor is nil when the outbox holds a mail for u, else ErrNotFound.
	queuedFor := func(u *publicauth.User) error {
		pending, err := s.PendingMail(ctx)
		if err != nil {
			return err
		}
		for _, m := range pending {
			if m.UserID == u.ID {
				return nil
			}
		}
		return storage.ErrNotFound
	}
	// check asserts every row of u present, or with gone every one absent.
	check := func(when string, u *publicauth.User, gone bool) {
		t.Helper()
		want := func(err error) error {
			if gone {
				return err
			}
			return nil
		}
		rows := []struct {
			what string
			err  error
			want error
		}{
			{"user", second(s.UserByID(ctx, u.ID)), want(publicauth.ErrUserNotFound)},
			{"code", second(s.GetAuthorizeCodeSession(ctx, "code-"+u.ID, newSession())), want(fosite.ErrNotFound)},
			{"PKCE row", second(s.GetPKCERequestSession(ctx, "code-"+u.ID, newSession())), want(fosite.ErrNotFound)},
			{"access token", revokedErr(s, tokenRef("grant-"+u.ID, u.ID, client.ID, issued)), want(errRevoked)},
			{"refresh token", second(s.GetRefreshTokenSession(ctx, "rt-"+u.ID, newSession())), want(fosite.ErrNotFound)},
			{"consent", second(s.ConsentFor(ctx, u.ID, client.ID)), want(storage.ErrNotFound)},
			{"session", third(s.SessionByIDHash(ctx, "sess-"+u.ID, t0)), want(publicauth.ErrSessionNotFound)},
			{"one-time token", second(s.UsableOneTimeToken(ctx, "tok-"+u.ID, publicauth.PurposeMagicLink, t0)), want(publicauth.ErrInvalidToken)},
			{"identity", second(s.UserByIdentity(ctx, "google", "g-"+u.ID)), want(publicauth.ErrIdentityNotFound)},
			{"permission", second(s.Permission(ctx, u.ID, client.ID)), want(permissions.ErrNoRecord)},
			{"authorization request", second(s.AuthRequestByIDHash(ctx, "ar-"+u.ID, t0)), want(storage.ErrNotFound)},
			{"queued mail", queuedFor(u), want(storage.ErrNotFound)},
		}
		for _, r := range rows {
			checkErr(t, when+": "+r.what+" of "+u.Email, r.err, r.want)
		}
		// Reserving an attempt changes the challenge: ask last, and only where it must fail.
		if gone {
			_, err := s.ReservePINAttempt(ctx, "pin-"+u.ID, 5, t0)
			checkErr(t, when+": PIN challenge of "+u.Email, err, publicauth.ErrChallengeInvalid)
		}
	}

	failed := errors.New("the change failed")
	err := s.InTx(ctx, func(ctx context.Context) error {
		mustNoErr(t, "DeleteUser in a transaction", s.DeleteUser(ctx, victim.ID))
		return failed
	})
	checkErr(t, "rolled-back transaction", err, failed)
	check("after a rolled-back DeleteUser", victim, false)

	mustNoErr(t, "DeleteUser", s.DeleteUser(ctx, victim.ID))
	check("after DeleteUser", victim, true)
	check("after DeleteUser of another user", other, false)
	checkErr(t, "DeleteUser again", s.DeleteUser(ctx, victim.ID), publicauth.ErrUserNotFound)

	entries, err := s.ListAuditEntries(ctx, permissions.AuditFilter{UserID: victim.ID}, permissions.Cursor{}, 10)
	mustNoErr(t, "ListAuditEntries", err)
	if len(entries) != 1 {
		t.Errorf("got %d audit entries of the deleted user, want the 1 written: the log is history", len(entries))
	}
	again := newUser(victim.Email)
	again.ID = "user-again"
	mustNoErr(t, "CreateUser with the deleted user's email", s.CreateUser(ctx, again))
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }

// testUpdateClient: UpdateClient writes the settings but neither the secret nor the public
// flag, and deletes exactly the unused codes bound to a removed redirect URI (or to none).
func testUpdateClient(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	c := mustCreateClient(t, s, "app")
	kept, removed := c.RedirectURIs[0], c.RedirectURIs[1]
	codes := []struct {
		signature, redirectURI string
		redeemed               bool // exchanged already: kept for reuse detection
		deleted                bool
	}{
		{"kept-uri", kept, false, false},
		{"removed-uri", removed, false, true},
		{"no-uri", "", false, true},
		{"redeemed-removed-uri", removed, true, false},
	}
	for _, code := range codes {
		req := newRequest(t, c, "user", t0)
		req.Form.Set("redirect_uri", code.redirectURI)
		if code.redirectURI == "" {
			req.Form.Del("redirect_uri")
		}
		mustNoErr(t, "create code", s.CreateAuthorizeCodeSession(ctx, code.signature, req))
		if code.redeemed {
			mustNoErr(t, "invalidate code", s.InvalidateAuthorizeCodeSession(ctx, code.signature))
		}
	}

	up := *c
	up.SecretHash = []byte("not written")
	up.Public = true // not written either
	up.Name = "Renamed"
	up.RedirectURIs = []string{kept, "https://new.example/cb"}
	up.PostLogoutRedirectURIs = nil
	up.Scopes = []string{"openid"}
	up.GrantTypes = []string{"authorization_code"}
	up.FirstParty = false
	up.ResourceServer = true
	up.IDTokenAlg = "RS256"
	mustNoErr(t, "UpdateClient", s.UpdateClient(ctx, &up))
	got, err := s.ClientByID(ctx, c.ID)
	mustNoErr(t, "ClientByID", err)
	if got.Name != "Renamed" || !slices.Equal(got.RedirectURIs, up.RedirectURIs) || len(got.PostLogoutRedirectURIs) != 0 ||
		!slices.Equal(got.Scopes, up.Scopes) || !slices.Equal(got.GrantTypes, up.GrantTypes) || got.FirstParty ||
		!got.ResourceServer || got.IDTokenAlg != "RS256" {
		t.Errorf("client after UpdateClient: got %+v, want the update's settings", got)
	}
	if !bytes.Equal(got.SecretHash, c.SecretHash) || got.Public {
		t.Errorf("client after UpdateClient: secret hash %x and public %v, want %x and false unchanged", got.SecretHash, got.Public, c.SecretHash)
	}
	if !got.CreatedAt.Equal(c.CreatedAt) || got.UpdatedAt.Equal(c.UpdatedAt) {
		t.Errorf("client after UpdateClient: created %v, updated %v; want created kept and updated changed", got.CreatedAt, got.UpdatedAt)
	}
	for _, code := range codes {
		_, err := s.GetAuthorizeCodeSession(ctx, code.signature, newSession())
		switch {
		case code.deleted:
			checkErr(t, "code "+code.signature, err, fosite.ErrNotFound)
		case code.redeemed:
			checkErr(t, "code "+code.signature, err, fosite.ErrInvalidatedAuthorizeCode)
		default:
			checkErr(t, "code "+code.signature, err, nil)
		}
	}
	missing := newClient("nope")
	checkErr(t, "UpdateClient of an unknown client", s.UpdateClient(ctx, missing), storage.ErrNotFound)
}

// testSetClientSecretHash: the hash of a confidential client is replaced; a public or
// unknown client is not found.
func testSetClientSecretHash(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	c := mustCreateClient(t, s, "conf")
	pub := newClient("pub")
	pub.Public, pub.SecretHash = true, nil
	mustNoErr(t, "CreateClient(pub)", s.CreateClient(ctx, pub))

	mustNoErr(t, "SetClientSecretHash", s.SetClientSecretHash(ctx, c.ID, []byte("new hash")))
	got, err := s.ClientByID(ctx, c.ID)
	mustNoErr(t, "ClientByID", err)
	if string(got.SecretHash) != "new hash" {
		t.Errorf("secret hash: got %q, want %q", got.SecretHash, "new hash")
	}
	checkErr(t, "SetClientSecretHash of a public client", s.SetClientSecretHash(ctx, pub.ID, []byte("x")), storage.ErrNotFound)
	checkErr(t, "SetClientSecretHash of an unknown client", s.SetClientSecretHash(ctx, "nope", []byte("x")), storage.ErrNotFound)
	got, err = s.ClientByID(ctx, pub.ID)
	mustNoErr(t, "ClientByID(pub)", err)
	if len(got.SecretHash) != 0 {
		t.Errorf("public client secret hash: got %x, want none", got.SecretHash)
	}
}

// testAccountRowsWithoutUser: an account kept outside Gatehouse (provider.WithAccounts) has
// no row in users, and its sessions, consents, permission records, PIN challenges, mailed
// links and linked identities are stored and read by its id alone; SessionByIDHash answers
// such a session with a nil user; RevokeUserGrants revokes what it granted.
func testAccountRowsWithoutUser(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	client := mustCreateClient(t, s, "app")
	const id = "42"
	mustNoErr(t, "create session", s.CreateSession(ctx, &publicauth.Session{
		IDHash: "sess-42", UserID: id, Kind: publicauth.SessionPublic, Method: publicauth.MethodPassword,
		AuthTime: t0.Add(-time.Hour), CreatedAt: t0.Add(-time.Hour), ExpiresAt: t0.Add(time.Hour),
	}))
	mustNoErr(t, "save consent", s.SaveConsent(ctx, &storage.Consent{
		UserID: id, ClientID: client.ID, Scopes: []string{"openid"}, GrantedAt: t0,
	}))
	mustNoErr(t, "SavePermission", s.SavePermission(ctx, record(id, client.ID, permissions.StatusApproved, permissions.RoleUser, t0), true))
	mustCreateChallenge(t, s, newChallenge("pin-42", id, t0.Add(time.Hour)))
	mustCreateToken(t, s, newToken("tok-42", publicauth.PurposeMagicLink, id, t0.Add(time.Hour)), false)
	checkErr(t, "SavePermission for an unknown client",
		s.SavePermission(ctx, record(id, "nope", permissions.StatusPending, permissions.RoleNone, t0), true), permissions.ErrUnknownClient)

	sess, u, err := s.SessionByIDHash(ctx, "sess-42", t0)
	mustNoErr(t, "SessionByIDHash", err)
	if sess.UserID != id || u != nil {
		t.Errorf("SessionByIDHash: got session of %q and user %+v, want %q and no user", sess.UserID, u, id)
	}
	c, err := s.ConsentFor(ctx, id, client.ID)
	mustNoErr(t, "ConsentFor", err)
	if !slices.Equal(c.Scopes, []string{"openid"}) {
		t.Errorf("ConsentFor: got scopes %v, want [openid]", c.Scopes)
	}
	rec, err := s.Permission(ctx, id, client.ID)
	mustNoErr(t, "Permission", err)
	if rec.UserID != id || rec.Status != permissions.StatusApproved {
		t.Errorf("Permission: got %+v, want the approved record of %q", rec, id)
	}
	_, err = s.UsableOneTimeToken(ctx, "tok-42", publicauth.PurposeMagicLink, t0)
	mustNoErr(t, "UsableOneTimeToken", err)

	mustNoErr(t, "RevokeUserGrants", s.RevokeUserGrants(ctx, id))
	checkErr(t, "consent after RevokeUserGrants", second(s.ConsentFor(ctx, id, client.ID)), storage.ErrNotFound)
	checkErr(t, "mailed link after RevokeUserGrants",
		second(s.UsableOneTimeToken(ctx, "tok-42", publicauth.PurposeMagicLink, t0)), publicauth.ErrInvalidToken)
	_, err = s.ReservePINAttempt(ctx, "pin-42", 5, t0)
	checkErr(t, "PIN challenge after RevokeUserGrants", err, publicauth.ErrChallengeInvalid)
	mustNoErr(t, "DeleteUserSessions", s.DeleteUserSessions(ctx, id))
	checkErr(t, "session after DeleteUserSessions", third(s.SessionByIDHash(ctx, "sess-42", t0)), publicauth.ErrSessionNotFound)
}
