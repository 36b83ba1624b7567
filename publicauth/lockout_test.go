package publicauth_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestLockoutHoldsUnderParallelGuesses: a burst of parallel wrong passwords for one account
// gets no more attempts than the lockout allows, because each attempt is counted before its
// password is checked.
func TestLockoutHoldsUnderParallelGuesses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		const lockout, guesses = 5, 20
		e := newEnv(t, b, publicauth.Config{Limits: publicauth.RateLimits{
			PerIP:   publicauth.Rate{Limit: -1},
			Lockout: publicauth.Rate{Limit: lockout, Window: time.Minute},
		}})
		u := e.register(t, "kim@example.com", "correct horse battery", "Kim")
		statuses := make([]int, guesses)
		var wg sync.WaitGroup
		for i := range guesses {
			wg.Go(func() {
				statuses[i] = e.postJSON(t, "/api/public/login", map[string]string{"email": u.Email, "password": "wrong guess " + string(rune('a'+i))}).status
			})
		}
		wg.Wait()
		counts := map[int]int{}
		for _, s := range statuses {
			counts[s]++
		}
		if counts[http.StatusUnauthorized] != lockout || counts[http.StatusTooManyRequests] != guesses-lockout {
			t.Errorf("answers %v, want exactly %d × 401 and the rest 429", counts, lockout)
		}
		if res := e.postJSON(t, "/api/public/login", map[string]string{"email": u.Email, "password": "correct horse battery"}); res.status != http.StatusTooManyRequests {
			t.Errorf("right password while locked: status %d, want 429", res.status)
		}
	})
}
