package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/internal/sameorigin"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
)

// ErrRegistrationTokenSettings: CreateRegistrationToken was given an expiry or a use count
// out of range.
var ErrRegistrationTokenSettings = errors.New("invalid registration token settings")

// MaxRegistrationTokenLifetime is the longest an initial access token may live.
const MaxRegistrationTokenLifetime = 365 * 24 * time.Hour

// RegistrationTokenSpec describes an initial access token to issue (CreateRegistrationToken).
type RegistrationTokenSpec struct {
	// ExpiresIn is required: how long the token is accepted, at most
	// MaxRegistrationTokenLifetime.
	ExpiresIn time.Duration
	// MaxUses is optional: how many clients the token may register; 0 (the default) for any
	// number until it expires.
	MaxUses int
}

// RegistrationTokenInfo is an issued initial access token. Token is shown this once: only
// its SHA-256 is stored.
type RegistrationTokenInfo struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
	MaxUses   int       `json:"maxUses"`
}

// CreateRegistrationToken issues an initial access token (RFC 7591 §3): sent as
// "Authorization: Bearer" to POST /api/oauth/register, it lets a client register itself,
// up to spec.MaxUses times until it expires. ErrRegistrationTokenSettings for an expiry not
// in (0, MaxRegistrationTokenLifetime] or a negative MaxUses.
func (p *Provider) CreateRegistrationToken(ctx context.Context, spec RegistrationTokenSpec) (RegistrationTokenInfo, error) {
	if spec.ExpiresIn <= 0 || spec.ExpiresIn > MaxRegistrationTokenLifetime {
		return RegistrationTokenInfo{}, fmt.Errorf("%w: the expiry must be more than 0 and at most %s", ErrRegistrationTokenSettings, MaxRegistrationTokenLifetime)
	}
	if spec.MaxUses < 0 {
		return RegistrationTokenInfo{}, fmt.Errorf("%w: the maximum number of uses must be 0 (unlimited) or more", ErrRegistrationTokenSettings)
	}
	token, err := randomToken(p.random)
	if err != nil {
		return RegistrationTokenInfo{}, err
	}
	now := p.now().UTC()
	t := &storage.RegistrationToken{Hash: registrationTokenHash(token), ExpiresAt: now.Add(spec.ExpiresIn), MaxUses: spec.MaxUses, CreatedAt: now}
	if err := p.store.CreateRegistrationToken(ctx, t); err != nil {
		return RegistrationTokenInfo{}, err
	}
	return RegistrationTokenInfo{Token: token, ExpiresAt: t.ExpiresAt.Truncate(time.Second), MaxUses: spec.MaxUses}, nil
}

// registrationTokenRequest is the body of POST /api/admin/registration-tokens.
type registrationTokenRequest struct {
	// ExpiresIn is the token's lifetime in seconds (required).
	ExpiresIn int64 `json:"expiresIn"`
	// MaxUses is how many clients it may register; 0 or absent for any number.
	MaxUses int `json:"maxUses"`
}

// adminRegistrationTokens returns the handler of POST /api/admin/registration-tokens for
// admins (an `admin-session`, or the public session of an admin: 401 without, 403 for a
// non-admin), guarded against cross-origin cookie requests like every admin route:
// {"expiresIn": SECONDS, "maxUses": N} issues an initial access token and answers 201 with
// RegistrationTokenInfo, the token shown this once; 400 for settings out of range.
func (p *Provider) adminRegistrationTokens() http.Handler {
	guard, _ := sameorigin.New(p.cfg.Issuer)
	return guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError := func(err error) {
			status, message := publicauth.Describe(err)
			if status >= http.StatusInternalServerError {
				p.log.ErrorContext(r.Context(), "registration token request failed", "error", err)
			}
			httpjson.WriteError(w, status, message)
		}
		if _, err := p.auth.Admin(r); err != nil {
			writeError(err)
			return
		}
		var req registrationTokenRequest
		err := httpjson.Decode(w, r, &req, 4<<10, func(field, reason string) error {
			return &publicauth.InputError{Field: field, Reason: reason}
		})
		if err != nil {
			writeError(err)
			return
		}
		if req.ExpiresIn <= 0 || req.ExpiresIn > int64(MaxRegistrationTokenLifetime/time.Second) {
			writeError(&publicauth.InputError{Field: "expiresIn", Reason: fmt.Sprintf("must be a number of seconds from 1 to %d", int64(MaxRegistrationTokenLifetime/time.Second))})
			return
		}
		if req.MaxUses < 0 {
			writeError(&publicauth.InputError{Field: "maxUses", Reason: "must be 0 (unlimited) or more"})
			return
		}
		info, err := p.CreateRegistrationToken(r.Context(), RegistrationTokenSpec{ExpiresIn: time.Duration(req.ExpiresIn) * time.Second, MaxUses: req.MaxUses})
		if err != nil {
			writeError(err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		httpjson.Write(w, http.StatusCreated, info)
	}))
}
