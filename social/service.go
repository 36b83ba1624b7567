package social

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gatehouse-id/gatehouse/internal/mountpath"
	"github.com/gatehouse-id/gatehouse/publicauth"
)

// Host is what a social login needs from the OpenID provider it runs in; package provider
// implements it.
type Host interface {
	// CheckPausedRequest returns nil when token names an authorization request paused for
	// login that has not expired, publicauth.ErrRequestExpired when it names none, or a store failure.
	CheckPausedRequest(ctx context.Context, token string) error
	// IsRegisteredRedirectURI reports whether uri is a redirect URI some client registered.
	IsRegisteredRedirectURI(ctx context.Context, uri string) (bool, error)
	// CompleteLogin finishes the login of u, authenticated upstream by method, and answers
	// w: behind the PIN gate when it is on for u, as for every other first factor; then it
	// starts u's public session and, with token set, binds the login to that paused
	// authorization request and resumes it, or goes to returnTo (a checked return URL), or
	// shows the signed-in page.
	CompleteLogin(w http.ResponseWriter, r *http.Request, u *publicauth.User, method, token, returnTo string)
	// ErrorPage answers with the hosted error page for err: the hosted pages' one table of
	// page errors knows this package's (ErrBadState, ErrReturnTo) and publicauth's.
	ErrorPage(w http.ResponseWriter, r *http.Request, err error)
}

// Service serves the social login routes. It is safe for concurrent use.
type Service struct {
	issuer *url.URL
	// mount is the issuer's path (mountpath.Of), the prefix of every path the service
	// serves, redirects to or accepts as a return path.
	mount     string
	auth      *publicauth.Service
	ids       *publicauth.Identities
	host      Host
	state     stateCodec
	o         options
	upstreams map[string]*upstream // by login method
	ordered   []*upstream          // as configured: the order of the login buttons
}

// maxReturnTo caps return_to, which travels in the state cookie.
const maxReturnTo = 1024

// New returns the service of cfg over the public authentication service auth and its
// identity login ids, inside host. It fails on an invalid cfg.
func New(cfg Config, auth *publicauth.Service, ids *publicauth.Identities, host Host, opts ...Option) (*Service, error) {
	issuer, err := url.Parse(cfg.Issuer)
	if err != nil || issuer.Host == "" {
		return nil, fmt.Errorf("social: issuer %q is not an absolute URL", cfg.Issuer)
	}
	mount, err := mountpath.Of(cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("social: %w", err)
	}
	if err := Validate(cfg.Upstreams); err != nil {
		return nil, fmt.Errorf("social: %w", err)
	}
	if auth == nil || ids == nil || host == nil {
		return nil, errors.New("social: auth, identities and host are required")
	}
	s := &Service{issuer: issuer, mount: mount, auth: auth, ids: ids, host: host, upstreams: map[string]*upstream{}}
	for _, opt := range opts {
		opt(&s.o)
	}
	if s.o.random == nil {
		s.o.random = rand.Reader
	}
	if s.o.logger == nil {
		s.o.logger = slog.Default()
	}
	if s.state, err = newStateCodec(cfg.Secret, !cfg.InsecureCookies, mount+stateCookiePath); err != nil {
		return nil, fmt.Errorf("social: %w", err)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	base := strings.TrimRight(cfg.Issuer, "/")
	for _, c := range cfg.Upstreams {
		u, err := newUpstream(c, base, client)
		if err != nil {
			return nil, fmt.Errorf("social: %w", err)
		}
		s.upstreams[u.provider] = u
		s.ordered = append(s.ordered, u)
	}
	return s, nil
}

// Routes registers the login and callback routes of every provider kind on r, relative to
// the issuer's path: r routes what follows that path (the provider strips it first).
// Those of a provider that is not configured answer 404.
func (s *Service) Routes(r *mux.Router) {
	for _, prefix := range []string{"/api/auth/{kind:google|facebook}", "/api/auth/oidc/{name}"} {
		r.HandleFunc(prefix+"/login", s.login).Methods(http.MethodGet)
		r.HandleFunc(prefix+"/callback", s.callback).Methods(http.MethodGet)
	}
}

// Button is one login button of the hosted login page.
type Button struct {
	// Provider is the login method ("google", "facebook", "oidc:<name>").
	Provider string
	// Label is the provider's display name.
	Label string
	// URL starts the provider's login, carrying the paused authorization request.
	URL string
}

// Buttons lists a button per enabled provider, in configuration order; none when none is.
func (s *Service) Buttons(requestToken string) []Button {
	out := make([]Button, 0, len(s.ordered))
	for _, u := range s.ordered {
		out = append(out, Button{Provider: u.provider, Label: u.label, URL: s.loginURL(u, requestToken)})
	}
	return out
}

// LoginURL is the path that starts a login with the named provider (a login method, as the
// authorization request's `provider` parameter names it) for the paused request token;
// false when no such provider is enabled.
func (s *Service) LoginURL(provider, requestToken string) (string, bool) {
	u, ok := s.upstreams[provider]
	if !ok {
		return "", false
	}
	return s.loginURL(u, requestToken), true
}

// loginURL is the path of u's login route, under the mount path, for the paused request
// requestToken names.
func (s *Service) loginURL(u *upstream, requestToken string) string {
	if requestToken == "" {
		return s.mount + u.base + "/login"
	}
	return s.mount + u.base + "/login?" + url.Values{"request": {requestToken}}.Encode()
}

// upstreamOf is the enabled provider r's route names, or nil.
func (s *Service) upstreamOf(r *http.Request) *upstream {
	v := mux.Vars(r)
	name := v["kind"]
	if name == "" {
		name = "oidc:" + v["name"]
	}
	return s.upstreams[name]
}

// login serves GET …/login: it checks `request` and `return_to`, binds a fresh state to the
// browser and redirects to the provider.
func (s *Service) login(w http.ResponseWriter, r *http.Request) {
	u := s.upstreamOf(r)
	if u == nil {
		notFound(w)
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	request, returnTo := q.Get("request"), q.Get("return_to")
	if request != "" {
		if err := s.host.CheckPausedRequest(ctx, request); err != nil {
			s.fail(w, r, u, "", err)
			return
		}
	}
	if returnTo != "" {
		if err := s.checkReturnTo(ctx, returnTo); err != nil {
			s.fail(w, r, u, request, err)
			return
		}
	}
	st, err := newLoginState(s.o.random, u.provider, request, returnTo)
	if err != nil {
		s.fail(w, r, u, request, err)
		return
	}
	target, err := u.authorizationURL(ctx, st)
	if err != nil {
		s.fail(w, r, u, request, &upstreamError{provider: u.provider, err: err})
		return
	}
	if err := s.state.set(w, st); err != nil {
		s.fail(w, r, u, request, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusFound)
}

// callback serves GET …/callback: see the package doc.
func (s *Service) callback(w http.ResponseWriter, r *http.Request) {
	u := s.upstreamOf(r)
	if u == nil {
		notFound(w)
		return
	}
	st, ok := s.state.read(r)
	s.state.clear(w) // single use, whatever happens next
	q := r.URL.Query()
	got := q.Get("state")
	if !ok || st.Provider != u.provider || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(st.State)) != 1 {
		s.fail(w, r, u, "", ErrBadState)
		return
	}
	if e := q.Get("error"); e != "" {
		if e == "access_denied" {
			s.fail(w, r, u, st.Request, errDenied)
		} else {
			s.fail(w, r, u, st.Request, &upstreamError{provider: u.provider, err: fmt.Errorf("authorization error %q", e)})
		}
		return
	}
	ctx := r.Context()
	id, err := u.identity(ctx, q.Get("code"), st)
	if err != nil {
		s.fail(w, r, u, st.Request, err)
		return
	}
	_, signedIn, err := s.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil && !errors.Is(err, publicauth.ErrSessionNotFound) {
		s.fail(w, r, u, st.Request, err)
		return
	}
	res, err := s.ids.Login(ctx, id, signedIn)
	if err != nil {
		s.fail(w, r, u, st.Request, err)
		return
	}
	s.o.logger.InfoContext(ctx, "social login", "provider", u.provider, "user_id", res.User.ID,
		"created", res.Created, "linked", res.Linked)
	returnTo := st.ReturnTo
	if st.Request != "" {
		returnTo = ""
	}
	s.host.CompleteLogin(w, r, res.User, u.provider, st.Request, returnTo)
}

// checkReturnTo accepts a path under the issuer's (mountpath.Contains: at the root any
// "/…" but "//…"), an absolute URL on the issuer's origin whose path is such a path, or a
// redirect URI some client registered. Under a mount path, a path of the embedding site
// outside it ("/login", "/auth/../login") is no return path of ours.
func (s *Service) checkReturnTo(ctx context.Context, raw string) error {
	if len(raw) > maxReturnTo || strings.ContainsAny(raw, "\\\x00\r\n\t") {
		return ErrReturnTo
	}
	ru, err := url.Parse(raw)
	if err != nil {
		return ErrReturnTo
	}
	if ru.Scheme == "" && ru.Host == "" && ru.User == nil && mountpath.Contains(s.mount, raw) {
		return nil
	}
	if ru.Scheme == s.issuer.Scheme && ru.Host == s.issuer.Host && ru.User == nil &&
		(s.mount == "" || mountpath.Contains(s.mount, ru.EscapedPath())) {
		return nil
	}
	ok, err := s.host.IsRegisteredRedirectURI(ctx, raw)
	if err != nil {
		return err
	}
	if !ok {
		return ErrReturnTo
	}
	return nil
}

// fail answers a failed login: back to the hosted login page (keeping the paused request)
// with the message code loginCode gives, or the host's error page, which logs server faults.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, u *upstream, request string, err error) {
	var up *upstreamError
	if errors.As(err, &up) {
		s.o.logger.WarnContext(r.Context(), "social login: provider failed", "provider", u.provider, "error", err)
	}
	if code, ok := loginCode(err); ok {
		q := url.Values{"social_error": {code}}
		if request != "" {
			q.Set("request", request)
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, s.mount+"/login?"+q.Encode(), http.StatusSeeOther)
		return
	}
	s.host.ErrorPage(w, r, err)
}

// notFound answers a route of a provider that is not enabled, in the JSON error shape.
func notFound(w http.ResponseWriter) {
	httpjson.WriteError(w, http.StatusNotFound, "this sign-in provider is not enabled")
}
