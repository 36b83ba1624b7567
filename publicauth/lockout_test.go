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

// TestLockoutKeyedByEmailKey: the lockout of an address is shared by its ASCII case
// variants and by nothing else, so failures on a Unicode look-alike (another mailbox) do
// not lock its victim out; an address without a key locks like an unknown one.
func TestLockoutKeyedByEmailKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		const lockout = 3
		e := newEnv(t, b, publicauth.Config{Limits: publicauth.RateLimits{
			PerIP:   publicauth.Rate{Limit: -1},
			Lockout: publicauth.Rate{Limit: lockout, Window: time.Minute},
		}})
		const password = "correct horse battery"
		e.register(t, "victim@gmail.com", password, "Victim")
		login := func(email, pw string) int {
			return e.postJSON(t, "/api/public/login", map[string]string{"email": email, "password": pw}).status
		}
		for _, email := range []string{"victim@gmaİl.com", "\u212Aim@gmail.com", "victim@ex_ample.com"} {
			for i := range lockout {
				if got := login(email, "wrong guess"); got != http.StatusUnauthorized {
					t.Fatalf("wrong password #%d for %+q: status %d, want 401", i+1, email, got)
				}
			}
			if got := login(email, "wrong guess"); got != http.StatusTooManyRequests {
				t.Errorf("over the lockout for %+q: status %d, want 429", email, got)
			}
		}
		if got := login("victim@gmail.com", password); got != http.StatusOK {
			t.Fatalf("victim's login after failures on look-alikes: status %d, want 200", got)
		}
		for range lockout {
			login("VICTIM@Gmail.COM", "wrong guess")
		}
		if got := login("victim@gmail.com", password); got != http.StatusTooManyRequests {
			t.Errorf("login after failures on an ASCII case variant: status %d, want 429", got)
		}
	})
}
