package storagetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/permissions"
	"github.com/gatehouse-id/gatehouse/storage"
)

// permissionCases are the cases of permission records and their audit log.
func permissionCases() []storageCase {
	return []storageCase{
		{"PermissionRoundTrip", testPermissionRoundTrip},
		{"PermissionWriteErrors", testPermissionWriteErrors},
		{"PermissionChangeRollsBackWithItsAudit", testPermissionRollback},
		{"ConcurrentPermissionChanges", testConcurrentPermissionChanges},
		{"ListPermissionsKeyset", testListPermissions},
		{"ListAuditEntriesKeyset", testListAuditEntries},
		{"PermissionsCascadeAuditStays", testPermissionCascade},
	}
}

// record is a permission record of (userID, clientID) created and updated at `at`.
func record(userID, clientID, status, role string, at time.Time) *permissions.Record {
	return &permissions.Record{
		UserID: userID, ClientID: clientID, Status: status, Role: role,
		HasAccess: status == permissions.StatusApproved && role != permissions.RoleNone,
		CreatedAt: at, UpdatedAt: at,
	}
}

func testPermissionRoundTrip(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	u := mustCreateUser(t, s, "perm@example.com")
	_, err := s.Permission(ctx, u.ID, "app")
	checkErr(t, "Permission before any write", err, permissions.ErrNoRecord)

	requested := t0.In(otherZone)
	want := record(u.ID, "app", permissions.StatusPending, permissions.RoleNone, t0)
	want.RequestedAt = &requested
	mustNoErr(t, "SavePermission(created)", s.SavePermission(ctx, want, true))
	got, err := s.Permission(ctx, u.ID, "app")
	mustNoErr(t, "Permission", err)
	want.RequestedAt = ptr(t0) // read back in UTC
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Permission:\ngot  %+v\nwant %+v", got, want)
	}

	granted := t0.Add(time.Hour)
	want.Status, want.Role, want.HasAccess = permissions.StatusApproved, permissions.RoleAdmin, true
	want.GrantedAt, want.GrantedBy, want.UpdatedAt = &granted, "client:app", granted
	mustNoErr(t, "SavePermission(update)", s.SavePermission(ctx, want, false))
	got, err = s.Permission(ctx, u.ID, "app")
	mustNoErr(t, "Permission after update", err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Permission after update:\ngot  %+v\nwant %+v", got, want)
	}
	// The lock a read takes inside a transaction does not change what it reads.
	mustNoErr(t, "InTx", s.InTx(ctx, func(ctx context.Context) error {
		got, err := s.Permission(ctx, u.ID, "app")
		if err == nil && !reflect.DeepEqual(got, want) {
			err = fmt.Errorf("got %+v, want %+v", got, want)
		}
		return err
	}))
}

func ptr[T any](v T) *T { return &v }

func testPermissionWriteErrors(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	u := mustCreateUser(t, s, "errors@example.com")
	pending := func(userID, clientID string) *permissions.Record {
		return record(userID, clientID, permissions.StatusPending, permissions.RoleNone, t0)
	}
	checkErr(t, "update of a missing record", s.SavePermission(ctx, pending(u.ID, "app"), false), permissions.ErrNoRecord)
	checkErr(t, "insert for an unknown client", s.SavePermission(ctx, pending(u.ID, "nope"), true), permissions.ErrUnknownClient)
	mustNoErr(t, "insert", s.SavePermission(ctx, pending(u.ID, "app"), true))
	// A second insert is refused and leaves the transaction usable for the retry.
	mustNoErr(t, "InTx", s.InTx(ctx, func(ctx context.Context) error {
		if err := s.SavePermission(ctx, pending(u.ID, "app"), true); !errors.Is(err, permissions.ErrRecordExists) {
			return fmt.Errorf("second insert: got %v, want ErrRecordExists", err)
		}
		_, err := s.Permission(ctx, u.ID, "app")
		return err
	}))
}

func testPermissionRollback(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	u := mustCreateUser(t, s, "rollback@example.com")
	failed := errors.New("the change failed after its writes")
	err := s.InTx(ctx, func(ctx context.Context) error {
		r := record(u.ID, "app", permissions.StatusApproved, permissions.RoleUser, t0)
		if err := s.SavePermission(ctx, r, true); err != nil {
			return err
		}
		if err := s.AddAuditEntry(ctx, auditEntry("e1", r, nil, t0)); err != nil {
			return err
		}
		return failed
	})
	checkErr(t, "InTx", err, failed)
	_, err = s.Permission(ctx, u.ID, "app")
	checkErr(t, "Permission after rollback", err, permissions.ErrNoRecord)
	entries, err := s.ListAuditEntries(ctx, permissions.AuditFilter{}, permissions.Cursor{}, 10)
	mustNoErr(t, "ListAuditEntries", err)
	if len(entries) != 0 {
		t.Errorf("got %d audit entries after rollback, want 0", len(entries))
	}
}

// auditEntry is an entry by the client of after recording the change before → after.
func auditEntry(id string, after, before *permissions.Record, at time.Time) *permissions.AuditEntry {
	return &permissions.AuditEntry{
		ID: id, UserID: after.UserID, ClientID: after.ClientID,
		Actor:  permissions.Actor{Kind: permissions.ActorClient, ID: after.ClientID},
		Action: permissions.ActionUpdate, Before: before, After: after, At: at,
	}
}

// testConcurrentPermissionChanges runs 50 changes of one (user, client) pair at once the
// way permissions.Service does (lock or insert, write, audit, retry a lost insert race): one
// record remains, in a state one of them wrote, and the audit log is one chain in which each
// entry's "before" is the previous entry's "after", so no change was lost or interleaved.
func testConcurrentPermissionChanges(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	u := mustCreateUser(t, s, "race@example.com")
	const writers = 50
	roles := []string{permissions.RoleNone, permissions.RoleUser, permissions.RoleAdmin}
	errs := runConcurrently(writers, func(i int) error {
		for range 3 {
			err := s.InTx(ctx, func(ctx context.Context) error {
				before, err := s.Permission(ctx, u.ID, "app")
				created := errors.Is(err, permissions.ErrNoRecord)
				if err != nil && !created {
					return err
				}
				at := t0.Add(time.Duration(i) * time.Second)
				after := record(u.ID, "app", permissions.StatusApproved, roles[i%3], at)
				after.GrantedBy = fmt.Sprintf("writer-%d", i)
				if before != nil {
					after.CreatedAt = before.CreatedAt
				}
				if err := s.SavePermission(ctx, after, created); err != nil {
					return err
				}
				return s.AddAuditEntry(ctx, auditEntry(fmt.Sprintf("entry-%02d", i), after, before, at))
			})
			if !errors.Is(err, permissions.ErrRecordExists) {
				return err
			}
		}
		return errors.New("lost the insert race three times")
	})
	for i, err := range errs {
		checkErr(t, fmt.Sprintf("writer %d", i), err, nil)
	}
	got, err := s.Permission(ctx, u.ID, "app")
	mustNoErr(t, "Permission", err)
	var writer int
	if _, err := fmt.Sscanf(got.GrantedBy, "writer-%d", &writer); err != nil || got.Role != roles[writer%3] {
		t.Errorf("got record %+v, want the state one writer wrote", got)
	}
	entries, err := s.ListAuditEntries(ctx, permissions.AuditFilter{UserID: u.ID, ClientID: "app"}, permissions.Cursor{}, writers+1)
	mustNoErr(t, "ListAuditEntries", err)
	if len(entries) != writers {
		t.Fatalf("got %d audit entries, want %d", len(entries), writers)
	}
	// Follow the chain from the entry that created the record.
	next := map[string]*permissions.AuditEntry{} // by the GrantedBy of the state it started from
	var first *permissions.AuditEntry
	for _, e := range entries {
		if e.Before == nil {
			if first != nil {
				t.Fatalf("two entries created the record: %s and %s", first.ID, e.ID)
			}
			first = e
			continue
		}
		if dup := next[e.Before.GrantedBy]; dup != nil {
			t.Fatalf("entries %s and %s both changed the state written by %s", dup.ID, e.ID, e.Before.GrantedBy)
		}
		next[e.Before.GrantedBy] = e
	}
	if first == nil {
		t.Fatal("no entry created the record")
	}
	last, n := first, 1
	for e := next[last.After.GrantedBy]; e != nil; e = next[last.After.GrantedBy] {
		if !reflect.DeepEqual(e.Before, last.After) {
			t.Errorf("entry %s: before %+v, want the previous after %+v", e.ID, e.Before, last.After)
		}
		last, n = e, n+1
	}
	if n != writers || last.After.GrantedBy != got.GrantedBy {
		t.Errorf("the audit chain has %d links ending at %s, want %d ending at the record's %s", n, last.After.GrantedBy, writers, got.GrantedBy)
	}
}

func testListPermissions(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	mustCreateClient(t, s, "other")
	statuses := []string{permissions.StatusPending, permissions.StatusApproved, permissions.StatusPending, permissions.StatusRevoked, permissions.StatusPending}
	var pending []string
	for i, status := range statuses {
		u := mustCreateUser(t, s, fmt.Sprintf("list-%d@example.com", i))
		// Users 0 and 1 share a creation time: the user id breaks the tie.
		at := t0.Add(time.Duration(max(i, 1)) * time.Minute)
		mustNoErr(t, "SavePermission", s.SavePermission(ctx, record(u.ID, "app", status, permissions.RoleNone, at), true))
		mustNoErr(t, "SavePermission(other)", s.SavePermission(ctx, record(u.ID, "other", status, permissions.RoleNone, at), true))
		if status == permissions.StatusPending {
			pending = append(pending, u.ID)
		}
	}
	all := pageAll(t, func(after permissions.Cursor) ([]*permissions.Record, error) {
		return s.ListPermissions(ctx, "app", "", after, 2)
	}, func(r *permissions.Record) permissions.Cursor {
		return permissions.Cursor{At: r.CreatedAt, Key: r.UserID}
	})
	if len(all) != len(statuses) {
		t.Fatalf("got %d records in pages of 2, want %d", len(all), len(statuses))
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.CreatedAt.After(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.UserID >= b.UserID) {
			t.Errorf("records %d and %d are out of (createdAt, userId) order", i-1, i)
		}
		if b.ClientID != "app" {
			t.Errorf("got a record of client %q", b.ClientID)
		}
	}
	got := pageAll(t, func(after permissions.Cursor) ([]*permissions.Record, error) {
		return s.ListPermissions(ctx, "app", permissions.StatusPending, after, 1)
	}, func(r *permissions.Record) permissions.Cursor {
		return permissions.Cursor{At: r.CreatedAt, Key: r.UserID}
	})
	var ids []string
	for _, r := range got {
		ids = append(ids, r.UserID)
	}
	if !slices.Equal(sortedCopy(ids), sortedCopy(pending)) {
		t.Errorf("pending records: got users %v, want %v", ids, pending)
	}
}

func testListAuditEntries(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	mustCreateClient(t, s, "other")
	alice := mustCreateUser(t, s, "alice-audit@example.com")
	bob := mustCreateUser(t, s, "bob-audit@example.com")
	var wantAliceApp []string
	for i := range 7 {
		userID, clientID := alice.ID, "app"
		switch i % 3 {
		case 1:
			userID = bob.ID
		case 2:
			clientID = "other"
		}
		// Pairs of entries share a time: the id breaks the tie.
		at := t0.Add(time.Duration(i/2) * time.Second)
		id := fmt.Sprintf("entry-%d", i)
		after := record(userID, clientID, permissions.StatusApproved, permissions.RoleUser, at)
		mustNoErr(t, "AddAuditEntry", s.AddAuditEntry(ctx, auditEntry(id, after, nil, at)))
		if userID == alice.ID && clientID == "app" {
			wantAliceApp = append(wantAliceApp, id)
		}
	}
	key := func(e *permissions.AuditEntry) permissions.Cursor { return permissions.Cursor{At: e.At, Key: e.ID} }
	for _, c := range []struct {
		name   string
		filter permissions.AuditFilter
		want   int
	}{
		{"all", permissions.AuditFilter{}, 7},
		{"alice", permissions.AuditFilter{UserID: alice.ID}, 5},
		{"other client", permissions.AuditFilter{ClientID: "other"}, 2},
		{"alice at app", permissions.AuditFilter{UserID: alice.ID, ClientID: "app"}, len(wantAliceApp)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := pageAll(t, func(after permissions.Cursor) ([]*permissions.AuditEntry, error) {
				return s.ListAuditEntries(ctx, c.filter, after, 2)
			}, key)
			if len(got) != c.want {
				t.Fatalf("got %d entries, want %d", len(got), c.want)
			}
			for i := 1; i < len(got); i++ {
				if got[i-1].ID >= got[i].ID { // ids were written in (at, id) order
					t.Errorf("entries %s and %s are out of order", got[i-1].ID, got[i].ID)
				}
			}
			if c.filter.UserID == alice.ID && c.filter.ClientID == "app" {
				var ids []string
				for _, e := range got {
					ids = append(ids, e.ID)
				}
				if !reflect.DeepEqual(ids, wantAliceApp) {
					t.Errorf("got %v, want %v", ids, wantAliceApp)
				}
			}
		})
	}
	got, err := s.ListAuditEntries(ctx, permissions.AuditFilter{}, permissions.Cursor{}, 1)
	mustNoErr(t, "ListAuditEntries", err)
	e := got[0]
	if e.Before != nil || e.After == nil || e.After.UserID != alice.ID || !e.At.Equal(t0) || e.Actor.Kind != permissions.ActorClient {
		t.Errorf("got entry %+v, want the first one written, read back whole", e)
	}
}

// pageAll reads a keyset listing page by page to its end; the loop is bounded.
func pageAll[T any](t *testing.T, list func(after permissions.Cursor) ([]T, error), key func(T) permissions.Cursor) []T {
	t.Helper()
	var all []T
	after := permissions.Cursor{}
	for range 100 {
		page, err := list(after)
		mustNoErr(t, "list", err)
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = key(page[len(page)-1])
	}
	t.Fatal("listing did not end after 100 pages")
	return nil
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }

func testPermissionCascade(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	mustCreateClient(t, s, "app")
	u := mustCreateUser(t, s, "cascade@example.com")
	r := record(u.ID, "app", permissions.StatusApproved, permissions.RoleUser, t0)
	mustNoErr(t, "SavePermission", s.SavePermission(ctx, r, true))
	mustNoErr(t, "AddAuditEntry", s.AddAuditEntry(ctx, auditEntry("kept", r, nil, t0)))
	mustNoErr(t, "DeleteClient", s.DeleteClient(ctx, "app"))
	_, err := s.Permission(ctx, u.ID, "app")
	checkErr(t, "Permission after the client was deleted", err, permissions.ErrNoRecord)
	entries, err := s.ListAuditEntries(ctx, permissions.AuditFilter{ClientID: "app"}, permissions.Cursor{}, 10)
	mustNoErr(t, "ListAuditEntries", err)
	if len(entries) != 1 {
		t.Errorf("got %d audit entries after the client was deleted, want the 1 written", len(entries))
	}
}
