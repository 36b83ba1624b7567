package provider_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestScheduledKeyRotationAcrossReplicas: two providers, each with its own store on one
// shared database (an SQLite file, a Postgres schema), run on one test-driven clock.
// When the keys fall due both check at once and exactly one new key per algorithm appears;
// both publish it before either signs with it; a token signed with the old key just before
// the new one activates verifies on both replicas, in process and through each replica's
// JWKS with go-oidc, through the whole overlap until it expires; and the old key leaves
// both JWKS only after that, once its retention has passed. A check that finds nothing due
// runs no SQL.
func TestScheduledKeyRotationAcrossReplicas(t *testing.T) {
	t.Parallel()
	const (
		issuer   = "https://login.example"
		interval = 24 * time.Hour
		reload   = time.Minute
		lifespan = time.Hour
	)
	activation := reload + reload/2
	retention := 2*reload + lifespan + 5*time.Minute // Config.KeyRotationInterval's doc

	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		// fosite sets an access token's exp from the real clock, so the test's clock runs in
		// the past and reaches the moment the old key signs last at the real time: the keys
		// were made a rotation interval before the rotation, which is an activation delay ago.
		base := time.Now().Truncate(time.Second)
		rotatedAt := base.Add(-activation)
		t0 := rotatedAt.Add(-interval)
		var now atomic.Int64
		now.Store(t0.UnixNano())
		clock := func() time.Time { return time.Unix(0, now.Load()) }
		set := func(tm time.Time) { now.Store(tm.UnixNano()) }

		dsn := b.DSN(t)
		sqlLog := &statementLog{}
		type replica struct {
			name  string
			p     *provider.Provider
			srv   *httptest.Server
			store *storage.Store
		}
		newReplica := func(name string, logger *slog.Logger) replica {
			store, err := storage.Open(ctx, dsn, storage.WithLogger(logger))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = store.Close() })
			p, err := provider.New(provider.Config{Issuer: issuer, Secret: testSecret, JanitorInterval: -1,
				KeyReloadInterval: reload, KeyRotationInterval: interval,
				AccessTokenLifespan: lifespan, IDTokenLifespan: lifespan},
				provider.WithStore(store), provider.WithClock(clock), provider.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			t.Cleanup(func() { srv.Close(); _ = p.Close() })
			return replica{name, p, srv, store}
		}
		a := newReplica("A", slog.New(sqlLog))
		bRep := newReplica("B", discardLogger())
		replicas := []replica{a, bRep}
		secret := strings.Repeat("s", 32)
		if _, err := a.p.CreateClient(ctx, provider.ClientSpec{ID: "svc", Secret: secret,
			GrantTypes: []string{"client_credentials"}, AuthMethod: "client_secret_post"}); err != nil {
			t.Fatal(err)
		}

		// token issues a client_credentials access token at r and returns it with its kid.
		token := func(r replica) (string, string) {
			t.Helper()
			resp, err := http.PostForm(r.srv.URL+"/api/oauth/token", url.Values{"grant_type": {"client_credentials"},
				"client_id": {"svc"}, "client_secret": {secret}})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var tok struct {
				AccessToken string `json:"access_token"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
				t.Fatalf("token from replica %s: status %d, %v", r.name, resp.StatusCode, err)
			}
			h, _ := decodeJWT(t, tok.AccessToken)
			kid, _ := h["kid"].(string)
			return tok.AccessToken, kid
		}
		// jwks is the kids r publishes.
		jwks := func(r replica) []string {
			t.Helper()
			resp, err := http.Get(r.srv.URL + "/.well-known/jwks.json")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc struct {
				Keys []struct {
					KID string `json:"kid"`
				} `json:"keys"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, k := range doc.Keys {
				out = append(out, k.KID)
			}
			slices.Sort(out)
			return out
		}
		// verifies reports whether r accepts tok in process (VerifyAccessToken, the fast
		// path) and whether go-oidc accepts it through r's JWKS at the test's clock.
		verifies := func(r replica, tok string) (bool, bool) {
			t.Helper()
			_, err := r.p.VerifyAccessToken(ctx, tok)
			keys := oidc.NewRemoteKeySet(ctx, r.srv.URL+"/.well-known/jwks.json")
			v := oidc.NewVerifier(issuer, keys, &oidc.Config{SkipClientIDCheck: true, Now: clock,
				SupportedSigningAlgs: []string{provider.AlgRS256, provider.AlgES256, provider.AlgEdDSA}})
			_, oidcErr := v.Verify(ctx, tok)
			return err == nil, oidcErr == nil
		}
		wantVerifies := func(what, tok string) {
			t.Helper()
			for _, r := range replicas {
				if inProcess, viaJWKS := verifies(r, tok); !inProcess || !viaJWKS {
					t.Errorf("at %v: replica %s: %s: VerifyAccessToken accepts it: %v, go-oidc through the JWKS: %v; want both",
						clock().Sub(t0).Round(time.Second), r.name, what, inProcess, viaJWKS)
				}
			}
		}
		reloadAll := func() {
			t.Helper()
			for _, r := range replicas {
				if err := r.p.ReloadKeys(ctx); err != nil {
					t.Fatalf("replica %s: reload: %v", r.name, err)
				}
			}
		}
		first := jwks(a)
		if len(first) != 3 || !slices.Equal(first, jwks(bRep)) {
			t.Fatalf("at start: A publishes %v, B %v; want the same three keys, one per algorithm", first, jwks(bRep))
		}
		_, oldKID := token(a)

		// One second before the keys fall due: nothing to do, and not one SQL statement.
		set(t0.Add(interval - time.Second))
		if sqls := sqlLog.during(func() {
			if err := a.p.RotateDueKeys(ctx); err != nil {
				t.Fatal(err)
			}
		}); len(sqls) != 0 {
			t.Errorf("a rotation check with nothing due ran SQL: %q", sqls)
		}
		if err := bRep.p.RotateDueKeys(ctx); err != nil {
			t.Fatal(err)
		}
		if got := jwks(a); !slices.Equal(got, first) {
			t.Fatalf("rotation before the keys are due: A publishes %v, want %v", got, first)
		}

		// Due: both replicas check at the same moment.
		set(rotatedAt)
		var wg sync.WaitGroup
		errs := make([]error, len(replicas))
		for i, r := range replicas {
			wg.Go(func() { errs[i] = r.p.RotateDueKeys(ctx) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("replica %s: rotation: %v", replicas[i].name, err)
			}
		}
		reloadAll()
		published := jwks(a)
		if len(published) != 6 || !slices.Equal(published, jwks(bRep)) {
			t.Fatalf("after both replicas rotated: A publishes %v, B %v; want the same six keys: the three old and exactly one new per algorithm",
				published, jwks(bRep))
		}
		if rows, err := bRep.store.SigningKeys(ctx); err != nil || len(rows) != 6 {
			t.Fatalf("stored keys after both replicas rotated: got %d (%v), want 6", len(rows), err)
		}
		infos := a.p.Keys()
		var newKID string
		for _, k := range infos {
			if k.RetiredAt == nil && k.Algorithm == provider.DefaultAccessTokenAlg {
				newKID = k.KID
			}
		}
		if newKID == "" || newKID == oldKID {
			t.Fatalf("no new %s key after the rotation: %+v", provider.DefaultAccessTokenAlg, infos)
		}

		// Published on both before it signs: until the activation delay both sign with the old
		// key. The last token the old key signs is issued one second before.
		set(rotatedAt.Add(activation - time.Second))
		var lastOld []string
		var lastExp time.Time
		for _, r := range replicas {
			tok, kid := token(r)
			if kid != oldKID {
				t.Fatalf("replica %s signed with %s before the new key activated, want the old %s", r.name, kid, oldKID)
			}
			lastOld = append(lastOld, tok)
			_, claims := decodeJWT(t, tok)
			if exp := time.Unix(unixClaim(t, claims, "exp"), 0); exp.After(lastExp) {
				lastExp = exp
			}
		}
		if lastExp.Before(clock().Add(lifespan - time.Minute)) {
			t.Fatalf("the old key's last tokens expire at %v, want about %v", lastExp, clock().Add(lifespan))
		}
		set(rotatedAt.Add(activation))
		for _, r := range replicas {
			tok, kid := token(r)
			if kid != newKID {
				t.Errorf("replica %s signs with %s once the new key is active, want %s", r.name, kid, newKID)
			}
			wantVerifies("a token of the new key", tok)
		}

		// The overlap: the old key's last tokens verify on both replicas until they expire,
		// while each reloads its keys as its ticker would.
		var steps []time.Time
		for at := rotatedAt.Add(activation); at.Before(lastExp.Add(-time.Second)); at = at.Add(7 * time.Minute) {
			steps = append(steps, at)
		}
		for _, at := range append(steps, lastExp.Add(-time.Second)) {
			set(at)
			reloadAll()
			for _, tok := range lastOld {
				wantVerifies("a token the old key signed last", tok)
			}
			for _, r := range replicas {
				if !slices.Contains(jwks(r), oldKID) {
					t.Fatalf("at %v: replica %s dropped the old key while its tokens are valid", at.Sub(rotatedAt), r.name)
				}
			}
		}

		// Expired, the tokens are refused; the key stays for the rest of its retention.
		set(lastExp)
		reloadAll()
		for _, r := range replicas {
			if inProcess, _ := verifies(r, lastOld[0]); inProcess {
				t.Errorf("replica %s accepts the old key's token after it expired", r.name)
			}
		}
		set(rotatedAt.Add(retention - time.Second))
		reloadAll()
		for _, r := range replicas {
			if !slices.Contains(jwks(r), oldKID) {
				t.Errorf("replica %s dropped the old key before its retention ended", r.name)
			}
		}
		set(rotatedAt.Add(retention))
		reloadAll()
		for _, r := range replicas {
			got := jwks(r)
			if len(got) != 3 || slices.Contains(got, oldKID) || !slices.Contains(got, newKID) {
				t.Errorf("after the retention: replica %s publishes %v, want only the three new keys", r.name, got)
			}
		}
		// (fosite's real-clock exp has passed on the test's clock by now, so only the kid.)
		if _, kid := token(bRep); kid != newKID {
			t.Errorf("after the retention replica B signs with %s, want %s", kid, newKID)
		}
	})
}

// TestKeyRotationInterval: Config.KeyRotationInterval's default rotates a key 30 days old
// and not a second younger, a negative value turns scheduled rotation off, and a value
// within the activation delay (so a key would be replaced before it ever signed) is refused.
func TestKeyRotationInterval(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		interval time.Duration
		age      time.Duration // of the keys when the check runs
		wantErr  string
		want     int // keys stored after the check
	}{
		{"the default rotates keys 30 days old", 0, provider.DefaultKeyRotationInterval, "", 6},
		{"the default keeps keys a second younger", 0, provider.DefaultKeyRotationInterval - time.Second, "", 3},
		{"a shorter interval rotates sooner", 2 * time.Hour, 2 * time.Hour, "", 6},
		{"negative turns scheduled rotation off", -1, 10 * 365 * 24 * time.Hour, "", 3},
		{"within the activation delay is refused", 90 * time.Second, 0, "key rotation interval", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := storagetest.Backends(t)[0].Open(t)
			var now atomic.Int64
			start := time.Now()
			now.Store(start.UnixNano())
			p, err := provider.New(provider.Config{Secret: testSecret, JanitorInterval: -1, KeyRotationInterval: c.interval},
				provider.WithStore(store), provider.WithLogger(discardLogger()),
				provider.WithClock(func() time.Time { return time.Unix(0, now.Load()) }))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("New: got error %v, want one about %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			now.Store(start.Add(c.age).UnixNano())
			if err := p.RotateDueKeys(ctx); err != nil {
				t.Fatal(err)
			}
			if rows, err := store.SigningKeys(ctx); err != nil || len(rows) != c.want {
				t.Errorf("stored keys after a check at age %v: got %d (%v), want %d", c.age, len(rows), err, c.want)
			}
		})
	}
}
