package provider

import (
	"context"
	"errors"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
)

// rotateDue adds a new key for every algorithm whose active key is rotateEvery old: the
// scheduled rotation of Config.KeyRotationInterval. The new key is published at once and
// signs after the activation delay, as with `keys rotate`; its predecessor stays
// published for the retention, until everything it signed has expired.
//
// It is cheap when nothing is due: the check reads the in-memory set only. When a key is
// due it reloads the set (another replica may have rotated since the last reload) and asks
// the database to rotate, which lets exactly one of the replicas racing for the same key
// add its successor (storage.Store.RotateSigningKey); the others reload and publish it.
func (ks *keySet) rotateDue(ctx context.Context) error {
	if ks.rotateEvery <= 0 || len(ks.dueAlgs()) == 0 {
		return nil
	}
	if err := ks.load(ctx); err != nil {
		return err
	}
	due := ks.dueAlgs()
	if len(due) == 0 {
		return nil
	}
	var errs []error
	for _, alg := range due {
		k, err := ks.newKey(alg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rotated, err := ks.store.RotateSigningKey(ctx, k, k.CreatedAt.Add(-ks.rotateEvery))
		switch {
		case err != nil:
			errs = append(errs, err)
		case rotated:
			ks.log.InfoContext(ctx, "rotated signing key on schedule", "alg", alg, "kid", k.KID,
				"signs_from", k.CreatedAt.Add(ks.activation))
			// RotateSigningKey decides the race among replicas in its own statement; the
			// record follows it, by the one replica that won.
			if err := ks.events.Emit(ctx, &events.KeyAdded{KID: k.KID, Algorithm: alg, Scheduled: true}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Publish the new keys, ours or the winner's, now rather than at the next reload.
	return errors.Join(append(errs, ks.load(ctx))...)
}

// dueAlgs lists the algorithms of the database whose newest key was created rotateEvery ago
// or earlier; the external source rotates its own.
func (ks *keySet) dueAlgs() []string {
	due := ks.now().Add(-ks.rotateEvery)
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	var out []string
	for _, alg := range supportedAlgs {
		if ks.externalAlgs[alg] {
			continue
		}
		keys := ks.byAlg[alg]
		if len(keys) > 0 && !keys[len(keys)-1].createdAt.After(due) {
			out = append(out, alg)
		}
	}
	return out
}

// keyRetention is how long a replaced key stays published after its successor was
// created. It still signs until the successor activates (the activation delay, one and a
// half reload intervals, or on a replica whose reload runs late up to half an interval
// more); what it signed last then lives as long as the longest-lived thing it signs, an
// access or an ID token; five more minutes cover clocks that disagree. After that nothing
// it signed can still be valid, so it leaves the JWKS. Refresh tokens and codes are opaque
// and signed by no key.
func keyRetention(cfg Config) time.Duration {
	return 2*cfg.KeyReloadInterval + max(cfg.AccessTokenLifespan, cfg.IDTokenLifespan) + 5*time.Minute
}

// keyActivation is how long after its creation a new key starts signing: one key reload
// interval, by when every replica publishes it, plus half of one for a reload that runs
// late.
func keyActivation(cfg Config) time.Duration {
	return cfg.KeyReloadInterval + cfg.KeyReloadInterval/2
}
