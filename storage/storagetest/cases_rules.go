package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// errRevoked stands for "a revocation rule matches the token" in tables of errors.
var errRevoked = errors.New("access token revoked")

// tokenRef is an access token of grantID, subject and clientID issued at issued, with a jti
// of its own.
func tokenRef(grantID, subject, clientID string, issued time.Time) storage.AccessTokenRef {
	return storage.AccessTokenRef{JTI: "jti-" + grantID + "-" + issued.String(), GrantID: grantID,
		Subject: subject, ClientID: clientID, IssuedAt: issued}
}

// revokedErr is errRevoked when a rule matches ref, nil when none does, or the store's error.
func revokedErr(s *storage.Store, ref storage.AccessTokenRef) error {
	revoked, err := s.AccessTokenRevoked(context.Background(), ref)
	if err == nil && revoked {
		err = errRevoked
	}
	return err
}

// wantRevoked fails t unless AccessTokenRevoked answers want for ref.
func wantRevoked(t *testing.T, s *storage.Store, what string, ref storage.AccessTokenRef, want bool) {
	t.Helper()
	revoked, err := s.AccessTokenRevoked(context.Background(), ref)
	mustNoErr(t, what, err)
	if revoked != want {
		t.Errorf("%s: revoked %v, want %v", what, revoked, want)
	}
}

func ruleCases() []storageCase {
	return []storageCase{
		{"RevocationRuleKinds", testRevocationRuleKinds},
		{"RevocationRuleSameSecond", testRevocationRuleSameSecond},
		{"RevocationRuleExpiry", testRevocationRuleExpiry},
		{"RevocationUnderConcurrentChecks", testRevocationUnderConcurrentChecks},
		{"UserChangeUnderConcurrentReads", testUserChangeUnderConcurrentReads},
		{"SessionEndUnderConcurrentReads", testSessionEndUnderConcurrentReads},
	}
}

// testRevocationRuleKinds: each kind of rule revokes the tokens it names issued before it,
// and no other.
func testRevocationRuleKinds(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	before := time.Now().Add(-time.Minute)
	mustNoErr(t, "RevokeAccessTokenID", s.RevokeAccessTokenID(ctx, "j-revoked", time.Now().Add(time.Hour)))
	mustNoErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, "g-revoked"))
	mustNoErr(t, "RevokeTokensOf", s.RevokeTokensOf(ctx, "ab", "c"))
	mustNoErr(t, "RevokeUserGrants", s.RevokeUserGrants(ctx, "u-revoked"))
	after := time.Now().Add(time.Minute)

	ref := func(jti, grant, sub, client string, issued time.Time) storage.AccessTokenRef {
		return storage.AccessTokenRef{JTI: jti, GrantID: grant, Subject: sub, ClientID: client, IssuedAt: issued}
	}
	for _, c := range []struct {
		name string
		ref  storage.AccessTokenRef
		want bool
	}{
		{"the revoked jti", ref("j-revoked", "g", "u", "c", before), true},
		{"the revoked jti, whenever issued", ref("j-revoked", "g", "u", "c", after), true},
		{"another jti", ref("j-other", "g", "u", "c", before), false},
		{"the revoked grant", ref("j", "g-revoked", "u", "c", before), true},
		{"the revoked grant, issued after the rule", ref("j", "g-revoked", "u", "c", after), false},
		{"the revoked subject at the client", ref("j", "g", "ab", "c", before), true},
		{"the revoked subject at the client, issued after the rule", ref("j", "g", "ab", "c", after), false},
		{"the revoked subject at another client", ref("j", "g", "ab", "d", before), false},
		{"a pair spelling the same characters", ref("j", "g", "a", "bc", before), false},
		{"another subject at the client", ref("j", "g", "u", "c", before), false},
		{"the revoked subject anywhere", ref("j", "g", "u-revoked", "any", before), true},
		{"the revoked subject, issued after the rule", ref("j", "g", "u-revoked", "any", after), false},
		{"nothing revoked", ref("j", "g", "u", "c", before), false},
	} {
		wantRevoked(t, s, c.name, c.ref, c.want)
	}
}

// testRevocationRuleSameSecond: iat has whole seconds, a rule does not: within one second,
// a token issued before the rule is revoked and one issued after it is not. A refresh's rule
// spares the token issued with it (issued at the rule's time) but not one a microsecond
// older; a rule made "now" revokes what was issued up to it.
func testRevocationRuleSameSecond(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	second := time.Now().Truncate(time.Second)
	rule := second.Add(500 * time.Millisecond)
	mustNoErr(t, "RevokeGrantAccessTokensBefore", s.RevokeGrantAccessTokensBefore(ctx, "g", rule))
	for _, c := range []struct {
		name   string
		issued time.Time
		want   bool
	}{
		{"the second's start", second, true},
		{"a microsecond before the rule", rule.Add(-time.Microsecond), true},
		{"the new token, at the rule's time", rule, false},
		{"a microsecond after the rule", rule.Add(time.Microsecond), false},
		{"the second's end", second.Add(time.Second - time.Microsecond), false},
	} {
		wantRevoked(t, s, c.name, tokenRef("g", "u", "c", c.issued), c.want)
	}
	// A later refresh moves the rule on; an earlier one (a late writer) never moves it back.
	later := rule.Add(200 * time.Millisecond)
	mustNoErr(t, "RevokeGrantAccessTokensBefore later", s.RevokeGrantAccessTokensBefore(ctx, "g", later))
	mustNoErr(t, "RevokeGrantAccessTokensBefore earlier", s.RevokeGrantAccessTokensBefore(ctx, "g", rule))
	wantRevoked(t, s, "the token the first refresh spared", tokenRef("g", "u", "c", rule), true)
	wantRevoked(t, s, "the token of the later refresh", tokenRef("g", "u", "c", later), false)

	// A rule made at the store's now: a token issued just before is revoked, one issued after
	// the call returned is not, though both share the rule's second.
	for _, c := range []struct {
		name   string
		revoke func(ctx context.Context) error
		ref    func(issued time.Time) storage.AccessTokenRef
	}{
		{"user", func(ctx context.Context) error { return s.RevokeUserGrants(ctx, "u") },
			func(issued time.Time) storage.AccessTokenRef { return tokenRef("g1", "u", "c", issued) }},
		{"user at client", func(ctx context.Context) error { return s.RevokeTokensOf(ctx, "v", "c") },
			func(issued time.Time) storage.AccessTokenRef { return tokenRef("g2", "v", "c", issued) }},
		{"grant", func(ctx context.Context) error { return s.RevokeAccessToken(ctx, "g3") },
			func(issued time.Time) storage.AccessTokenRef { return tokenRef("g3", "w", "c", issued) }},
	} {
		issuedBefore := time.Now()
		mustNoErr(t, c.name, c.revoke(ctx))
		issuedAfter := time.Now().Add(time.Microsecond)
		wantRevoked(t, s, c.name+": a token issued just before the rule", c.ref(issuedBefore), true)
		wantRevoked(t, s, c.name+": a token issued in the same second before the rule", c.ref(issuedBefore.Truncate(time.Second)), true)
		wantRevoked(t, s, c.name+": a token issued just after the rule", c.ref(issuedAfter), false)
	}
}

// testRevocationRuleExpiry: a rule lives until the longest token it can match has expired (a
// jti rule: the token's exp; the others: the longest access-token lifespan after the rule),
// then the janitor deletes it.
func testRevocationRuleExpiry(t *testing.T, s *storage.Store) {
	ctx := context.Background()
	s.CoverAccessTokenLifespan(2 * time.Hour)
	s.CoverAccessTokenLifespan(time.Minute) // never lowers it
	now := time.Now()
	issued := now.Add(-time.Second)
	mustNoErr(t, "RevokeAccessTokenID", s.RevokeAccessTokenID(ctx, "j", now.Add(10*time.Minute)))
	mustNoErr(t, "RevokeUserGrants", s.RevokeUserGrants(ctx, "u"))
	jti := storage.AccessTokenRef{JTI: "j", GrantID: "g", Subject: "x", ClientID: "c", IssuedAt: issued}
	user := tokenRef("g", "u", "c", issued)

	for _, step := range []struct {
		at              time.Duration
		jtiKept, userOK bool
	}{
		{at: 9 * time.Minute, jtiKept: true, userOK: true},
		{at: 11 * time.Minute, jtiKept: false, userOK: true},
		{at: time.Hour + 10*time.Minute, jtiKept: false, userOK: true},
		{at: 2*time.Hour + time.Minute, jtiKept: false, userOK: false},
	} {
		_, err := s.DeleteExpired(ctx, now.Add(step.at), 0)
		mustNoErr(t, "DeleteExpired", err)
		wantRevoked(t, s, "jti rule after the janitor at +"+step.at.String(), jti, step.jtiKept)
		wantRevoked(t, s, "user rule after the janitor at +"+step.at.String(), user, step.userOK)
	}
}

// underLoad runs work without pause in 8 goroutines, half on a and half on b (i is the
// goroutine's number), until the returned function is called, which waits for them. work
// returns an error to stop its goroutine.
func underLoad(t *testing.T, a, b *storage.Store, work func(s *storage.Store, i int) error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		s := []*storage.Store{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := work(s, i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// inRounds runs 40 rounds of a write on one store followed by 4 concurrent reads, two on
// each store, that must see it; the stores swap roles each round. write returns what
// read must find; read reports how it differs.
func inRounds(t *testing.T, a, b *storage.Store, write func(round int, on *storage.Store) (want string),
	read func(s *storage.Store, want string) error) {
	for round := range 40 {
		on, other := a, b
		if round%2 == 1 {
			on, other = b, a
		}
		want := write(round, on)
		var reads sync.WaitGroup
		for i := range 4 {
			s := []*storage.Store{on, other}[i%2]
			reads.Add(1)
			go func() {
				defer reads.Done()
				if err := read(s, want); err != nil {
					t.Errorf("round %d: a read begun after the write returned: %v", round, err)
				}
			}()
		}
		reads.Wait()
	}
}

// revocationUnderLoad: while checks run without pause on both stores, each kind of rule
// recorded on one store is seen by every check that begins after the recording returned,
// on either store, though concurrent checks share queries (the store coalesces them). One
// store may stand for both.
func revocationUnderLoad(t *testing.T, a, b *storage.Store) {
	ctx := context.Background()
	defer underLoad(t, a, b, func(s *storage.Store, i int) error {
		ref := tokenRef(fmt.Sprint("noise-", i), fmt.Sprint("noise-user-", i), "noise-client", time.Now())
		if _, err := s.AccessTokenRevoked(ctx, ref); err != nil {
			return fmt.Errorf("concurrent check: %w", err)
		}
		return nil
	})()

	revokes := []struct {
		kind   string
		revoke func(s *storage.Store, ref storage.AccessTokenRef) error
	}{
		{"jti", func(s *storage.Store, ref storage.AccessTokenRef) error {
			return s.RevokeAccessTokenID(ctx, ref.JTI, time.Now().Add(time.Hour))
		}},
		{"grant", func(s *storage.Store, ref storage.AccessTokenRef) error { return s.RevokeAccessToken(ctx, ref.GrantID) }},
		{"subject at client", func(s *storage.Store, ref storage.AccessTokenRef) error {
			return s.RevokeTokensOf(ctx, ref.Subject, ref.ClientID)
		}},
		{"subject", func(s *storage.Store, ref storage.AccessTokenRef) error { return s.RevokeUserGrants(ctx, ref.Subject) }},
	}
	refs := map[string]storage.AccessTokenRef{}
	inRounds(t, a, b, func(round int, on *storage.Store) string {
		r := revokes[round%len(revokes)]
		ref := tokenRef(fmt.Sprint("g-", round), fmt.Sprint("u-", round), "c", time.Now().Add(-time.Second))
		wantRevoked(t, on, fmt.Sprintf("round %d (%s) before the rule", round, r.kind), ref, false)
		mustNoErr(t, "revoke "+r.kind, r.revoke(on, ref))
		refs[r.kind] = ref
		return r.kind
	}, func(s *storage.Store, kind string) error {
		if revoked, err := s.AccessTokenRevoked(ctx, refs[kind]); err != nil || !revoked {
			return fmt.Errorf("after the %s rule: revoked %v, %v; want revoked", kind, revoked, err)
		}
		return nil
	})
}

// testRevocationUnderConcurrentChecks is revocationUnderLoad on one store.
func testRevocationUnderConcurrentChecks(t *testing.T, s *storage.Store) {
	revocationUnderLoad(t, s, s)
}

// testRevocationAcrossReplicas is revocationUnderLoad on two replicas: a rule recorded on
// one is seen at once on the other.
func testRevocationAcrossReplicas(t *testing.T, a, b *storage.Store) { revocationUnderLoad(t, a, b) }

// userChangeUnderLoad: while users are read without pause on both stores, a change of a
// user on one store is read by every UserByID that begins after it returned, on either
// store, though concurrent reads share queries; each read gets its own user, and an unknown
// id read in the same batch is publicauth.ErrUserNotFound.
func userChangeUnderLoad(t *testing.T, a, b *storage.Store) {
	ctx := context.Background()
	users := []*publicauth.User{mustCreateUser(t, a, "one@example.com"), mustCreateUser(t, a, "two@example.com")}
	defer underLoad(t, a, b, func(s *storage.Store, i int) error {
		if i%4 == 3 {
			if _, err := s.UserByID(ctx, "no-such-user"); !errors.Is(err, publicauth.ErrUserNotFound) {
				return fmt.Errorf("unknown user: %v, want ErrUserNotFound", err)
			}
			return nil
		}
		id := users[i%2].ID
		if u, err := s.UserByID(ctx, id); err != nil || u.ID != id {
			return fmt.Errorf("UserByID(%s): %+v, %v", id, u, err)
		}
		return nil
	})()

	var changed *publicauth.User
	inRounds(t, a, b, func(round int, on *storage.Store) string {
		changed = users[round%2]
		name := fmt.Sprint("name ", round)
		_, err := on.ChangeUser(ctx, changed.ID, publicauth.UserChange{Name: &name})
		mustNoErr(t, "ChangeUser", err)
		return name
	}, func(s *storage.Store, name string) error {
		if got, err := s.UserByID(ctx, changed.ID); err != nil || got.Name != name || got.Email != changed.Email {
			return fmt.Errorf("%+v, %v; want name %q", got, err, name)
		}
		return nil
	})
}

// testUserChangeUnderConcurrentReads is userChangeUnderLoad on one store.
func testUserChangeUnderConcurrentReads(t *testing.T, s *storage.Store) { userChangeUnderLoad(t, s, s) }

// testUserChangeAcrossReplicas is userChangeUnderLoad on two replicas.
func testUserChangeAcrossReplicas(t *testing.T, a, b *storage.Store) { userChangeUnderLoad(t, a, b) }

// sessionEndUnderLoad: while sessions are read without pause on both stores, a session
// ended on one store is not found by any SessionByIDHash that begins after the end
// returned, on either store; each read gets its own session and user, and expiry is judged
// by each read's own clock. It holds whether or not the store shares queries between
// concurrent reads (it did for a while: see the README's "Performance").
func sessionEndUnderLoad(t *testing.T, a, b *storage.Store) {
	ctx := context.Background()
	u := mustCreateUser(t, a, "reader@example.com")
	exp := time.Now().Add(time.Hour)
	kept := []*publicauth.Session{mustSession(t, a, u.ID, exp), mustSession(t, a, "account-"+u.ID, exp)}
	defer underLoad(t, a, b, func(s *storage.Store, i int) error {
		switch i % 4 {
		case 3:
			if _, _, err := s.SessionByIDHash(ctx, "no-such-session", time.Now()); !errors.Is(err, publicauth.ErrSessionNotFound) {
				return fmt.Errorf("unknown session: %v, want ErrSessionNotFound", err)
			}
			return nil
		case 2:
			// A read whose clock is past the session's expiry, batched with reads before it.
			if _, _, err := s.SessionByIDHash(ctx, kept[0].IDHash, exp); !errors.Is(err, publicauth.ErrSessionNotFound) {
				return fmt.Errorf("session read at its expiry: %v, want ErrSessionNotFound", err)
			}
			return nil
		}
		want := kept[i%2]
		got, user, err := s.SessionByIDHash(ctx, want.IDHash, time.Now())
		switch {
		case err != nil:
			return fmt.Errorf("SessionByIDHash(%s): %v", want.IDHash, err)
		case got.SID != want.SID || got.UserID != want.UserID:
			return fmt.Errorf("SessionByIDHash(%s): got session %+v, want %+v", want.IDHash, got, want)
		case want.UserID == u.ID && (user == nil || user.ID != u.ID || user.Email != u.Email):
			return fmt.Errorf("SessionByIDHash(%s): got user %+v, want %s", want.IDHash, user, u.ID)
		case want.UserID != u.ID && user != nil:
			return fmt.Errorf("SessionByIDHash(%s): got user %+v for an account outside users", want.IDHash, user)
		}
		return nil
	})()

	inRounds(t, a, b, func(round int, on *storage.Store) string {
		sess := mustSession(t, on, u.ID, exp)
		if _, _, err := on.SessionByIDHash(ctx, sess.IDHash, time.Now()); err != nil {
			t.Fatalf("round %d: the new session: %v", round, err)
		}
		mustNoErr(t, "DeleteSession", on.DeleteSession(ctx, sess.IDHash))
		return sess.IDHash
	}, func(s *storage.Store, idHash string) error {
		if sess, _, err := s.SessionByIDHash(ctx, idHash, time.Now()); !errors.Is(err, publicauth.ErrSessionNotFound) {
			return fmt.Errorf("ended session read as %+v, %v; want ErrSessionNotFound", sess, err)
		}
		return nil
	})
}

// testSessionEndUnderConcurrentReads is sessionEndUnderLoad on one store.
func testSessionEndUnderConcurrentReads(t *testing.T, s *storage.Store) { sessionEndUnderLoad(t, s, s) }

// testSessionEndAcrossReplicas is sessionEndUnderLoad on two replicas.
func testSessionEndAcrossReplicas(t *testing.T, a, b *storage.Store) { sessionEndUnderLoad(t, a, b) }
