package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// legacyUser is a user as a release before migration 5 stored it.
func legacyUser(id, email string) *publicauth.User {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	return &publicauth.User{
		ID: id, Email: email, EmailVerified: true, Name: id,
		Role: publicauth.RoleUser, Status: publicauth.StatusActive, CreatedAt: t0, UpdatedAt: t0,
	}
}

// openAtV4 returns a store on a fresh database migrated up to version 4, holding users
// (id → email) with the email keys releases before migration 5 computed.
func openAtV4(t *testing.T, b storagetest.Backend, users [][2]string) *storage.Store {
	t.Helper()
	ctx := context.Background()
	s, err := storage.Open(ctx, b.DSN(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.MigrateTo(ctx, 4); err != nil {
		t.Fatalf("MigrateTo(4): %v", err)
	}
	for _, u := range users {
		if err := s.CreateUserWithLegacyKey(ctx, legacyUser(u[0], u[1])); err != nil {
			t.Fatalf("insert legacy user %s <%s>: %v", u[0], u[1], err)
		}
	}
	return s
}

func wantSchemaVersion(t *testing.T, s *storage.Store, want int) {
	t.Helper()
	got, err := s.SchemaVersion(context.Background())
	if err != nil || got != want {
		t.Errorf("schema version: got %d, %v; want %d", got, err, want)
	}
}

// TestMigrationV5RekeysEmails: migration 5 replaces the Unicode-lower-cased keys with
// publicauth.EmailKey, after which the look-alike no longer finds the victim.
func TestMigrationV5RekeysEmails(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := openAtV4(t, b, [][2]string{
				{"victim", "Victim@Gmail.com"},
				{"lookalike", "other@GMAİL.com"},
				{"kelvin", "\u212Aim@Example.com"},
				{"idn", "anna@Bücher.example"},
				// a's new key is b's old one: updated first, it must not trip the index.
				{"a-fullwidth", "i@ｘ.example"},
				{"b-dotted", "İ@x.example"},
			})
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			wantSchemaVersion(t, s, storage.LatestSchemaVersion())
			for id, want := range map[string]string{
				"victim":      "victim@gmail.com",
				"lookalike":   "other@xn--gmail-bgd.com",
				"kelvin":      "\u212Aim@example.com",
				"idn":         "anna@xn--bcher-kva.example",
				"a-fullwidth": "i@x.example",
				"b-dotted":    "İ@x.example",
			} {
				if got, err := s.EmailKeyOf(ctx, id); err != nil || got != want {
					t.Errorf("email key of %s: got %q, %v; want %q", id, got, err, want)
				}
			}
			if _, err := s.UserByEmail(ctx, "other@gmail.com"); err == nil {
				t.Errorf("UserByEmail(other@gmail.com): found the look-alike's account, want none")
			}
			if u, err := s.UserByEmail(ctx, "other@xn--gmail-bgd.com"); err != nil || u.ID != "lookalike" {
				t.Errorf("UserByEmail(A-label): got %v, %v; want the look-alike's account", u, err)
			}
			if _, err := s.UserByEmail(ctx, "kim@example.com"); err == nil {
				t.Errorf("UserByEmail(kim@example.com): found the Kelvin-sign account, want none")
			}
		})
	}
}

// TestMigrationV5StopsOnCollisions: accounts whose emails now share a key, or an email
// with no key, stop migration 5 with a message naming the users by id and what to do, and
// leave the schema at version 4 with nothing changed.
func TestMigrationV5StopsOnCollisions(t *testing.T) {
	cases := []struct {
		name  string
		users [][2]string
		want  []string // in the error
	}{
		{
			name: "two accounts share a new key",
			users: [][2]string{
				{"u-ascii", "anna@bücher.example"},
				{"u-alabel", "anna@xn--bcher-kva.example"},
				{"u-other", "bob@example.com"},
			},
			want: []string{"[u-alabel, u-ascii]", "change the email of, or delete, all but one", "run the migration again"},
		},
		{
			name: "an email without a key",
			users: [][2]string{
				{"u-good", "carol@example.com"},
				{"u-bad", "dave@exa_mple.com"},
			},
			want: []string{"u-bad", "correct or delete", "run the migration again"},
		},
	}
	for _, b := range storagetest.Backends(t) {
		for _, c := range cases {
			t.Run(b.Name+"/"+c.name, func(t *testing.T) {
				ctx := context.Background()
				s := openAtV4(t, b, c.users)
				err := s.Migrate(ctx)
				if err == nil {
					t.Fatalf("Migrate: got no error, want one naming the users")
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Migrate: got error %q, want it to contain %q", err, w)
					}
				}
				for _, u := range c.users {
					if strings.Contains(err.Error(), u[1]) {
						t.Errorf("Migrate: got error %q, which names the email %q", err, u[1])
					}
					if got, kerr := s.EmailKeyOf(ctx, u[0]); kerr != nil || got != strings.ToLower(u[1]) {
						t.Errorf("email key of %s: got %q, %v; want the old key kept", u[0], got, kerr)
					}
				}
				wantSchemaVersion(t, s, 4)
			})
		}
	}
}
