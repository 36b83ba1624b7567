package provider

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v3"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/storage"
)

// keyStore is what the key set needs from storage.
type keyStore interface {
	// SigningKeys returns every stored key, oldest first.
	SigningKeys(ctx context.Context) ([]*storage.SigningKey, error)
	// AddSigningKey retires the active keys of k.Algorithm and inserts k, atomically.
	AddSigningKey(ctx context.Context, k *storage.SigningKey) error
	// RotateSigningKey is AddSigningKey only when the active key of k.Algorithm was created
	// at or before due, and reports whether it added k: of replicas racing to rotate, the
	// database lets exactly one do it.
	RotateSigningKey(ctx context.Context, k *storage.SigningKey, due time.Time) (bool, error)
	// InTx runs fn in one transaction carried by the context fn receives.
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// signingKey is a key of the set: a decrypted key of the database, or a key of the
// KeySource given with WithSigner (external).
type signingKey struct {
	kid    string
	alg    string
	public jose.JSONWebKey
	// signer is what signJWT hands go-jose: the bare private key of a database key, or a
	// keySigner over an external key's crypto.Signer.
	signer   any
	external bool
	// createdAt is when the key was made (or joined the source): it signs once the
	// activation delay has passed since.
	createdAt time.Time
	// retiredAt is when the key was replaced, nil while current: it leaves the set once
	// the retention has passed since. A database key of an algorithm the source took over
	// counts as retired when the source's first key of it was added.
	retiredAt *time.Time
}

// keySet holds the provider's signing keys in memory: the current keys plus the retired keys
// that are still published because tokens they signed may not have expired. It re-reads the
// database every reloadEvery, so a rotation on any replica reaches all.
//
// A rotated key is published at once but signs only after activation has passed: by then
// every replica has reloaded and publishes it too, so no replica (and no relying party
// fetching JWKS from any replica) meets a token whose key it does not know.
type keySet struct {
	store       keyStore
	sealer      sealer
	random      io.Reader
	now         func() time.Time
	retention   time.Duration
	reloadEvery time.Duration
	activation  time.Duration
	// rotateEvery is Config.KeyRotationInterval: a key that old is replaced (rotateDue);
	// 0 or negative never rotates on schedule.
	rotateEvery time.Duration
	log         *slog.Logger
	// events records (and delivers) a KeyAdded per key added; nil records nothing.
	events *events.Emitter
	// external is the KeySource of WithSigner, nil without one: its keys join the set at
	// every load, and the algorithms it has keys of are its own (externalAlgs).
	external KeySource

	mu         sync.RWMutex
	decrypted  map[string]*signingKey // every key ever decrypted, by kid; keys never change
	published  []*signingKey          // current and still-valid retired keys, oldest first
	byKID      map[string]*signingKey
	byAlg      map[string][]*signingKey // published keys per algorithm, oldest first
	jwksJSON   []byte
	lastReload time.Time
	// externalAlgs are the algorithms the external source listed keys of at the last load:
	// the database makes and rotates no key of them.
	externalAlgs map[string]bool
}

// unknownKIDReloadEvery bounds the reloads that tokens with an unknown kid can cause.
const unknownKIDReloadEvery = 5 * time.Second

// supportedAlgs are the algorithms the set keeps a key for: every one a client or the
// access tokens may be configured to use, so that choosing one needs no new key.
var supportedAlgs = []string{AlgRS256, AlgES256, AlgEdDSA}

// ensure loads the key set and creates an active key for every algorithm that has none
// (the first start of a deployment), in the database for the algorithms the external
// source has no key of.
func (ks *keySet) ensure(ctx context.Context) error {
	if err := ks.load(ctx); err != nil {
		return err
	}
	created := false
	for _, alg := range ks.databaseAlgs() {
		ks.mu.RLock()
		ok := slices.ContainsFunc(ks.byAlg[alg], func(k *signingKey) bool { return k.retiredAt == nil })
		ks.mu.RUnlock()
		if !ok {
			if err := ks.add(ctx, alg); err != nil {
				return err
			}
			created = true
		}
	}
	if created {
		return ks.load(ctx)
	}
	return nil
}

// rotate adds a new key for every algorithm whose keys the database holds (not the
// external source's). It signs once activation has passed; the previous ones sign until
// then and stay published until every token they signed has expired. The new keys and
// their key.added records commit together.
func (ks *keySet) rotate(ctx context.Context) error {
	err := ks.store.InTx(ctx, func(ctx context.Context) error {
		for _, alg := range ks.databaseAlgs() {
			k, err := ks.newKey(alg)
			if err != nil {
				return err
			}
			if err := ks.store.AddSigningKey(ctx, k); err != nil {
				return err
			}
			if err := ks.events.Emit(ctx, &events.KeyAdded{KID: k.KID, Algorithm: alg}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ks.load(ctx)
}

func (ks *keySet) add(ctx context.Context, alg string) error {
	k, err := ks.newKey(alg)
	if err != nil {
		return err
	}
	return ks.store.AddSigningKey(ctx, k)
}

// newKey generates a key for alg, sealed under the system secret, created now. Its kid is
// its RFC 7638 thumbprint.
func (ks *keySet) newKey(alg string) (*storage.SigningKey, error) {
	var priv crypto.Signer
	var err error
	switch alg {
	case AlgRS256:
		priv, err = rsa.GenerateKey(ks.random, 2048)
	case AlgES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), ks.random)
	case AlgEdDSA:
		_, priv, err = ed25519.GenerateKey(ks.random)
	default:
		err = fmt.Errorf("unsupported algorithm %q", alg)
	}
	if err != nil {
		return nil, fmt.Errorf("generate %s key: %w", alg, err)
	}
	pub := jose.JSONWebKey{Key: priv.Public(), Algorithm: alg, Use: "sig"}
	thumb, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	kid := base64.RawURLEncoding.EncodeToString(thumb)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	sealed, err := ks.sealer.seal(ks.random, der, kid)
	if err != nil {
		return nil, err
	}
	return &storage.SigningKey{KID: kid, Algorithm: alg, Sealed: sealed, CreatedAt: ks.now().UTC()}, nil
}

// databaseAlgs are the supported algorithms whose keys the database holds: those the
// external source listed no key of at the last load.
func (ks *keySet) databaseAlgs() []string {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return slices.DeleteFunc(slices.Clone(supportedAlgs), func(alg string) bool { return ks.externalAlgs[alg] })
}

// load re-reads the stored keys, and the external source's, and rebuilds the published set
// and the JWKS document. A database key of an algorithm the source has keys of counts as
// retired when the source's first key of that algorithm was added (or is left out when it
// was made after that); see WithSigner.
func (ks *keySet) load(ctx context.Context) error {
	rows, err := ks.store.SigningKeys(ctx)
	if err != nil {
		return fmt.Errorf("load signing keys: %w", err)
	}
	external, err := ks.loadExternal(ctx)
	if err != nil {
		return err
	}
	takenOver := map[string]time.Time{} // algorithm: CreatedAt of the source's first key of it
	for _, k := range external {
		if first, ok := takenOver[k.alg]; !ok || k.createdAt.Before(first) {
			takenOver[k.alg] = k.createdAt
		}
	}
	now := ks.now()
	// expired reports whether a key retired at retiredAt has left the set: what it signed
	// has expired.
	expired := func(retiredAt *time.Time) bool {
		return retiredAt != nil && !retiredAt.Add(ks.retention).After(now)
	}
	published := make([]*signingKey, 0, len(rows)+len(external))
	for _, row := range rows {
		retiredAt := row.RetiredAt
		if first, ok := takenOver[row.Algorithm]; ok {
			if !row.CreatedAt.Before(first) {
				continue // made after the source took the algorithm over: never signs
			}
			if retiredAt == nil || first.Before(*retiredAt) {
				retiredAt = &first
			}
		}
		if expired(retiredAt) {
			continue
		}
		k, err := ks.decrypt(row)
		if err != nil {
			return err
		}
		k.retiredAt = retiredAt
		published = append(published, k)
	}
	for _, k := range external {
		if !expired(k.retiredAt) {
			published = append(published, k)
		}
	}
	sort.SliceStable(published, func(i, j int) bool { return published[i].createdAt.Before(published[j].createdAt) })
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(published))}
	byKID := make(map[string]*signingKey, len(published))
	byAlg := map[string][]*signingKey{}
	for _, k := range published {
		if _, dup := byKID[k.kid]; dup {
			return fmt.Errorf("load signing keys: two keys have kid %q", k.kid)
		}
		set.Keys = append(set.Keys, k.public)
		byKID[k.kid] = k
		byAlg[k.alg] = append(byAlg[k.alg], k)
	}
	doc, err := json.Marshal(set)
	if err != nil {
		return err
	}
	externalAlgs := map[string]bool{}
	for alg := range takenOver {
		externalAlgs[alg] = true
	}
	ks.mu.Lock()
	ks.published, ks.byKID, ks.byAlg, ks.jwksJSON, ks.lastReload = published, byKID, byAlg, doc, now
	ks.externalAlgs = externalAlgs
	ks.mu.Unlock()
	return nil
}

// loadExternal lists and checks the external source's keys; none without a source.
func (ks *keySet) loadExternal(ctx context.Context) ([]*signingKey, error) {
	if ks.external == nil {
		return nil, nil
	}
	listed, err := ks.external.SigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("load external signing keys: %w", err)
	}
	keys := make([]*signingKey, 0, len(listed))
	for _, l := range listed {
		k, err := externalKey(l, ks.random)
		if err != nil {
			return nil, fmt.Errorf("load external signing keys: %w", err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func (ks *keySet) decrypt(row *storage.SigningKey) (*signingKey, error) {
	ks.mu.RLock()
	k, ok := ks.decrypted[row.KID]
	ks.mu.RUnlock()
	if ok {
		k2 := *k
		k2.retiredAt = row.RetiredAt
		return &k2, nil
	}
	der, err := ks.sealer.open(row.Sealed, row.KID)
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", row.KID, err)
	}
	priv, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("signing key %s: unsupported key type %T", row.KID, parsed)
	}
	k = &signingKey{
		kid:       row.KID,
		alg:       row.Algorithm,
		public:    jose.JSONWebKey{Key: priv.Public(), KeyID: row.KID, Algorithm: row.Algorithm, Use: "sig"},
		signer:    priv,
		createdAt: row.CreatedAt,
		retiredAt: row.RetiredAt,
	}
	ks.mu.Lock()
	if ks.decrypted == nil {
		ks.decrypted = map[string]*signingKey{}
	}
	ks.decrypted[row.KID] = k
	ks.mu.Unlock()
	k2 := *k
	return &k2, nil
}

// run reloads the set, and rotates the keys that are due, every reloadEvery until ctx ends.
func (ks *keySet) run(ctx context.Context) {
	t := time.NewTicker(ks.reloadEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := ks.load(ctx); err != nil && ctx.Err() == nil {
				ks.log.Error("reloading signing keys failed", "error", err)
				continue
			}
			if err := ks.rotateDue(ctx); err != nil && ctx.Err() == nil {
				ks.log.Error("rotating signing keys failed", "error", err)
			}
		}
	}
}

var errNoActiveKey = errors.New("no active signing key")

// activeKey returns the key that signs with alg now: the newest published key whose
// activation has passed or, when none has (the first keys of a deployment), the oldest one.
func (ks *keySet) activeKey(alg string) (*signingKey, error) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	keys := ks.byAlg[alg]
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w for %s", errNoActiveKey, alg)
	}
	signFrom := ks.now().Add(-ks.activation)
	for i := len(keys) - 1; i >= 0; i-- {
		if !keys[i].createdAt.After(signFrom) {
			return keys[i], nil
		}
	}
	return keys[0], nil
}

// lookup finds a published key by kid. An unknown kid may be a key rotated on another
// replica since the last reload, so it reloads once (at most every unknownKIDReloadEvery,
// so forged kids cannot flood the database) and looks again.
func (ks *keySet) lookup(kid string) (*signingKey, bool) {
	ks.mu.RLock()
	k, ok := ks.byKID[kid]
	stale := ks.now().Sub(ks.lastReload) >= unknownKIDReloadEvery
	ks.mu.RUnlock()
	if ok || !stale {
		return k, ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ks.load(ctx); err != nil {
		ks.log.Error("reloading signing keys for an unknown kid failed", "error", err)
	}
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	k, ok = ks.byKID[kid]
	return k, ok
}

// publishes reports whether the key kid names is published now. Unlike lookup it never
// reloads: it is the cheap check that a key found before is still there.
func (ks *keySet) publishes(kid string) bool {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	_, ok := ks.byKID[kid]
	return ok
}

// jwks returns the JSON Web Key Set document: public keys only.
func (ks *keySet) jwks() []byte {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return ks.jwksJSON
}

// infos describes the published keys for the admin CLI.
func (ks *keySet) infos() []KeyInfo {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	out := make([]KeyInfo, 0, len(ks.published))
	for _, k := range ks.published {
		out = append(out, KeyInfo{KID: k.kid, Algorithm: k.alg, CreatedAt: k.createdAt, RetiredAt: k.retiredAt, External: k.external})
	}
	return out
}

// KeyInfo describes one published signing key.
type KeyInfo struct {
	KID       string     `json:"kid"`
	Algorithm string     `json:"alg"`
	CreatedAt time.Time  `json:"created_at"`
	RetiredAt *time.Time `json:"retired_at,omitempty"`
	// External is true for a key of the KeySource given with WithSigner, false for a key
	// of the database.
	External bool `json:"external,omitempty"`
}
