package storagetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// profileCases are the cases of the users' standard profile (migration 18).
func profileCases() []storageCase {
	return []storageCase{
		{"UserProfileRoundTrip", testUserProfileRoundTrip},
	}
}

// testUserProfileRoundTrip: every profile field, the address and non-ASCII text survive
// CreateUser, UserByID, UserByEmail, the session join and ChangeUser; a user without one
// reads back the empty profile; ChangeUser writes name and profile and nothing else.
func testUserProfileRoundTrip(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	full := publicauth.Profile{
		GivenName: "Zoë", FamilyName: "Ærø", MiddleName: "Q", Nickname: "zo", PreferredUsername: "zoe",
		Profile: "https://example.com/zoe", Picture: "https://example.com/zoe.png", Website: "http://zoe.example",
		Gender: "female", Birthdate: "1990-02-28", Zoneinfo: "Europe/Paris", Locale: "fr-FR",
		PhoneNumber: "+33123456789", PhoneNumberVerified: true,
		Address: &publicauth.Address{Formatted: "1 rue X\n75001 Paris", StreetAddress: "1 rue X", Locality: "Paris",
			Region: "IDF", PostalCode: "75001", Country: "FR"},
	}
	u := &publicauth.User{ID: "profile-user", Email: "zoe@example.com", Name: "Zoë Ærø", Role: publicauth.RoleUser,
		Status: publicauth.StatusActive, Profile: full}
	mustNoErr(t, "CreateUser", s.CreateUser(ctx, u))
	plain := &publicauth.User{ID: "plain-user", Email: "plain@example.com", Role: publicauth.RoleUser, Status: publicauth.StatusActive}
	mustNoErr(t, "CreateUser plain", s.CreateUser(ctx, plain))

	got, err := s.UserByID(ctx, u.ID)
	mustNoErr(t, "UserByID", err)
	if !reflect.DeepEqual(got.Profile, full) {
		t.Errorf("UserByID profile: got %+v, want %+v", got.Profile, full)
	}
	got, err = s.UserByEmail(ctx, u.Email)
	mustNoErr(t, "UserByEmail", err)
	if !reflect.DeepEqual(got.Profile, full) {
		t.Errorf("UserByEmail profile: got %+v, want %+v", got.Profile, full)
	}
	got, err = s.UserByID(ctx, plain.ID)
	mustNoErr(t, "UserByID plain", err)
	if !reflect.DeepEqual(got.Profile, publicauth.Profile{}) {
		t.Errorf("profile of a user without one: got %+v, want the empty profile", got.Profile)
	}

	sess := &publicauth.Session{IDHash: "profile-session", UserID: u.ID, Kind: publicauth.SessionPublic,
		Method: publicauth.MethodPassword, AuthTime: now, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	mustNoErr(t, "CreateSession", s.CreateSession(ctx, sess))
	_, su, err := s.SessionByIDHash(ctx, sess.IDHash, now)
	mustNoErr(t, "SessionByIDHash", err)
	if su == nil || !reflect.DeepEqual(su.Profile, full) {
		t.Errorf("session's user profile: got %+v, want %+v", su, full)
	}

	changed := publicauth.Profile{GivenName: "Zed", Zoneinfo: "Asia/Tokyo"}
	name := "Zed"
	got, err = s.ChangeUser(ctx, u.ID, publicauth.UserChange{Name: &name, Profile: &changed})
	mustNoErr(t, "ChangeUser", err)
	if got.Name != "Zed" || !reflect.DeepEqual(got.Profile, changed) || got.Email != u.Email || got.Status != publicauth.StatusActive {
		t.Errorf("after ChangeUser: got %+v, want name Zed and profile %+v, the rest kept", got, changed)
	}
	empty := publicauth.Profile{}
	got, err = s.ChangeUser(ctx, u.ID, publicauth.UserChange{Profile: &empty})
	mustNoErr(t, "ChangeUser clear", err)
	if !reflect.DeepEqual(got.Profile, empty) || got.Name != "Zed" {
		t.Errorf("after clearing: got %+v", got)
	}
}
