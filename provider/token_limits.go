package provider

import (
	"net/http"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// failedRequestsLimited wraps an endpoint that authenticates clients (token, revocation,
// introspection, PAR) with the per-IP limit on failed client authentication
// (PublicAuthConfig.TokenErrorLimit, DESIGN §5): a 401 answer (invalid_client) counts one
// failure of the caller's IP, and an IP over the limit gets 429 slow_down with Retry-After
// before the endpoint runs. Only 401s count: codes, refresh and access tokens are too long
// to guess, while a relying party whose users' grants expired (400 invalid_grant) must not
// be locked out of refreshing the others. Successes cost one counter read. A limiter
// failure lets the request through: the limit guards against guessing, and must not take
// the endpoints down with it.
func (p *Provider) failedRequestsLimited(next http.HandlerFunc) http.HandlerFunc {
	rate := p.cfg.PublicAuth.TokenErrorLimit
	if rate.Limit < 0 {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := "oauth-failures:" + publicauth.LimitKeyForIP(publicauth.ClientIP(r, p.cfg.PublicAuth.TrustedProxies))
		exceeded, retryAfter, err := p.limiter.Exceeded(ctx, key, rate.Limit, rate.Window)
		if err != nil {
			p.log.Log(ctx, publicauth.LimiterLogLevel(err), "rate limiter failed; request let through", "error", err)
		}
		if exceeded {
			writeSlowDown(w, &publicauth.RateLimitError{RetryAfter: retryAfter},
				"Too many failed client authentications from this address; retry after the Retry-After delay.")
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		next(rec, r)
		if rec.status == http.StatusUnauthorized {
			if _, _, err := p.limiter.Hit(ctx, key, rate.Limit, rate.Window); err != nil {
				p.log.Log(ctx, publicauth.LimiterLogLevel(err), "rate limiter failed; failure not counted", "error", err)
			}
		}
	}
}

// statusRecorder remembers the status an endpoint answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
