package social

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"time"
)

// Kinds of upstream provider.
const (
	KindGoogle   = "google"
	KindFacebook = "facebook"
	KindOIDC     = "oidc"
)

// DefaultHTTPTimeout bounds every call to a provider (discovery, token, profile, keys) when
// Config.HTTPClient is nil.
const DefaultHTTPTimeout = 10 * time.Second

// stateLifespan is how long a started social login may take before its callback.
const stateLifespan = 10 * time.Minute

// Upstream configures one provider.
type Upstream struct {
	// Kind is KindGoogle, KindFacebook or KindOIDC.
	Kind string
	// Name names an OpenID Connect upstream: its routes are /api/auth/oidc/{Name}/… and its
	// login method "oidc:{Name}". Lower-case letters, digits and '-', at most 32. Ignored
	// for Google and Facebook.
	Name string
	// Label is the text of the login button: default "Google", "Facebook", or Name.
	Label string
	// ClientID and ClientSecret are Gatehouse's credentials at the provider. Required.
	ClientID     string
	ClientSecret string
	// Issuer is the OpenID Connect upstream's issuer URL; its discovery document is
	// Issuer + "/.well-known/openid-configuration". Required for KindOIDC, else ignored.
	Issuer string
	// Scopes requested: default "openid email profile" (Google, OIDC) and "email"
	// (Facebook, plus its default public_profile).
	Scopes []string
	// AuthURL, TokenURL and ProfileURL replace Google's or Facebook's endpoints, for tests
	// and private deployments. Empty means the provider's real endpoint. Ignored for OIDC
	// upstreams, which are discovered.
	AuthURL, TokenURL, ProfileURL string
}

// Config configures a Service.
type Config struct {
	// Issuer is Gatehouse's public base URL, and its path the mount path every route lies
	// under (package internal/mountpath): callbacks are Issuer + "/api/auth/…/callback",
	// the login buttons and the way back to the login page are paths under it, and a
	// return URL must be a path under it or an absolute URL on its origin under it (or a
	// registered redirect URI). Required.
	Issuer string
	// Secret is the system secret (at least 32 bytes); the state cookie's keys are derived
	// from it. Required.
	Secret []byte
	// InsecureCookies leaves Secure off the state cookie (plain-http loopback issuers only).
	// Default false: the cookie is Secure.
	InsecureCookies bool
	// Upstreams are the enabled providers; at most one Google and one Facebook, OIDC names
	// unique (see Validate). Default none.
	Upstreams []Upstream
	// HTTPClient makes every call to a provider: default a client with DefaultHTTPTimeout.
	HTTPClient *http.Client
}

// Option supplies a collaborator of a Service.
type Option func(*options)

type options struct {
	random io.Reader
	logger *slog.Logger
}

// WithRandom makes the service draw states, nonces and PKCE verifiers from r (crypto/rand
// when nil or not given).
func WithRandom(r io.Reader) Option { return func(o *options) { o.random = r } }

// WithLogger makes the service log provider failures to l (slog.Default() when nil).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// oidcName is the rule of an OpenID Connect upstream's name.
var oidcName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate reports every invalid field of the upstreams, joined; nil when all are usable.
func Validate(ups []Upstream) error {
	var errs []error
	seen := map[string]bool{}
	for _, u := range ups {
		what := u.Kind
		switch u.Kind {
		case KindGoogle, KindFacebook:
		case KindOIDC:
			what = fmt.Sprintf("OIDC upstream %q", u.Name)
			if !oidcName.MatchString(u.Name) {
				errs = append(errs, fmt.Errorf("%s: name must be 1-32 lower-case letters, digits or '-'", what))
			}
			if err := checkURL(u.Issuer, true); err != nil {
				errs = append(errs, fmt.Errorf("%s: issuer %w", what, err))
			}
		default:
			errs = append(errs, fmt.Errorf("unknown provider kind %q", u.Kind))
			continue
		}
		if p := providerName(u); seen[p] {
			errs = append(errs, fmt.Errorf("%s is configured twice", what))
		} else {
			seen[p] = true
		}
		if u.ClientID == "" || u.ClientSecret == "" {
			errs = append(errs, fmt.Errorf("%s: client id and client secret are both required", what))
		}
		for field, raw := range map[string]string{"auth URL": u.AuthURL, "token URL": u.TokenURL, "profile URL": u.ProfileURL} {
			if raw != "" {
				if err := checkURL(raw, false); err != nil {
					errs = append(errs, fmt.Errorf("%s: %s %w", what, field, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute https URL, or plain http on a loopback host (tests, local
// development), without query or fragment when issuer is set.
func checkURL(raw string, issuer bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%q must be an absolute http(s) URL", raw)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return fmt.Errorf("%q must use https (plain http only on a loopback host)", raw)
	}
	if issuer && (u.RawQuery != "" || u.Fragment != "") {
		return fmt.Errorf("%q must have no query or fragment", raw)
	}
	return nil
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// providerName is the login method of u: "google", "facebook" or "oidc:<name>".
func providerName(u Upstream) string {
	if u.Kind == KindOIDC {
		return "oidc:" + u.Name
	}
	return u.Kind
}

// routeBase is the path prefix of u's login and callback routes.
func routeBase(u Upstream) string {
	if u.Kind == KindOIDC {
		return "/api/auth/oidc/" + u.Name
	}
	return "/api/auth/" + u.Kind
}
