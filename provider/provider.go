package provider

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/ory/fosite"

	"github.com/gatehouse-id/gatehouse/dpop"
	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/internal/mountpath"
	"github.com/gatehouse-id/gatehouse/permissions"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/social"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/ui"
)

// Provider is a complete OpenID Connect provider: an http.Handler serving the OAuth 2.0 and
// OpenID Connect endpoints under /api/oauth/ and /.well-known/, the public authentication
// API under /api/public/, and the hosted login, registration and consent pages, all under
// the issuer's path (Config.Issuer).
type Provider struct {
	cfg Config
	// mount is the issuer's path (mountpath.Of), "" at the root: the prefix of every route
	// and of every path the provider redirects to.
	mount    string
	log      *slog.Logger
	now      func() time.Time
	random   io.Reader
	store    *storage.Store
	ownStore bool
	events   *events.Emitter // records to the audit trail, and delivers to WithEvents's sink

	keys     *keySet
	verifier *accessTokenVerifier
	// dpop checks DPoP proofs at the token endpoint and the resource endpoints.
	dpop     *dpop.Verifier
	oauth    *fosite.Fosite
	idSigner *jwtSigner
	auth     *publicauth.Service
	social   *social.Service
	perms    *permissions.Service
	ui       *ui.UI
	// claims is the WithClaims function, or nil.
	claims func(context.Context, ClaimsRequest) (map[string]any, error)
	// router serves every endpoint under the mount path (routes).
	router http.Handler
	// limiter counts attempts for every rate limit: WithLimiter's, which the caller
	// closes, or one in memory.
	limiter publicauth.Limiter
	// stats counts what Stats reports and no event does.
	stats *opsCounters
	// tracer is the WithTracerProvider, nil when tracing is off; outbound HTTP clients are
	// wrapped by tracedClient with it.
	tracer trace.TracerProvider

	// keySets fetches and caches the key sets at clients' jwks_uri (client_jwks.go).
	keySets *clientKeySets
	// logouts delivers back-channel logout tokens (backchannel.go).
	logouts *logoutSender

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New validates cfg, opens (and unless cfg.SkipMigrate, migrates) the database, loads or
// creates the signing keys and returns a ready Provider. Close releases what it started.
func New(cfg Config, opts ...Option) (*Provider, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	o := options{}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.random == nil {
		o.random = rand.Reader
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	ctx := context.Background()

	if o.accounts != nil && len(cfg.Social.upstreams()) > 0 {
		return nil, errors.New("provider: social and upstream login need Gatehouse's own accounts: drop Config.Social or WithAccounts")
	}
	p := &Provider{cfg: cfg, log: o.logger, now: o.now, random: o.random, store: o.store, claims: o.claims, stats: newOpsCounters(), tracer: o.tracer}
	p.mount, _ = mountpath.Of(cfg.Issuer) // withDefaults checked it
	if p.store == nil {
		if p.store, err = storage.Open(ctx, cfg.DSN, storage.WithLogger(o.logger), storage.WithPool(cfg.DBPool),
			storage.WithClientCacheRefresh(cfg.ClientCacheRefresh), storage.WithTracerProvider(o.tracer)); err != nil {
			return nil, fmt.Errorf("provider: open database: %w", err)
		}
		p.ownStore = true
	}
	fail := func(err error) (*Provider, error) {
		if p.auth != nil {
			p.auth.Close()
		}
		if p.ownStore {
			_ = p.store.Close()
		}
		return nil, err
	}
	if !cfg.SkipMigrate {
		if err := p.store.Migrate(ctx); err != nil {
			return fail(fmt.Errorf("provider: migrate: %w", err))
		}
	}

	seal, err := newSealer(cfg.Secret)
	if err != nil {
		return fail(err)
	}
	p.events = o.emitter(p.store)
	p.keys = &keySet{
		store: p.store, events: p.events, sealer: seal, random: o.random, now: o.now, log: o.logger, external: o.keySource,
		// Every replica publishes a rotated key before any signs with it: one reload
		// interval, plus slack for a reload that runs late.
		activation: keyActivation(cfg),
		// A retired key keeps signing until its successor activates and stays published
		// while any token it signed can still be valid.
		retention:   keyRetention(cfg),
		reloadEvery: cfg.KeyReloadInterval,
		rotateEvery: cfg.KeyRotationInterval,
	}
	if err := p.keys.ensure(ctx); err != nil {
		return fail(fmt.Errorf("provider: signing keys: %w", err))
	}
	// A deployment that was down when its keys fell due rotates at start; the reload
	// ticker checks again every interval.
	if err := p.keys.rotateDue(ctx); err != nil {
		o.logger.Error("rotating signing keys failed", "error", err)
	}
	// Revocation rules must outlive the longest access token issued before them.
	p.store.CoverAccessTokenLifespan(cfg.AccessTokenLifespan)
	p.store.SetRefreshReuseGrace(cfg.RefreshReuseGrace)
	p.store.SetSecurityEventRetention(max(cfg.SecurityEventRetention, 0)) // negative: forever
	p.store.SetSecurityEventIPTruncation(cfg.TruncateEventIPs)
	p.verifier = &accessTokenVerifier{keys: p.keys, store: p.store, issuer: cfg.Issuer, now: o.now,
		verified: newVerifiedTokens(cfg.VerifiedTokenCacheSize)}
	if p.dpop, err = newDPoPVerifier(cfg, p.store, o.now); err != nil {
		return fail(err)
	}
	if cfg.InsecureAllowPrivateClientURLs {
		o.logger.Warn("InsecureAllowPrivateClientURLs is on: dynamically registered clients may make this server send requests to loopback and private addresses; for development only")
	}
	jwksClients, err := newOutboundClients(o.tracer, cfg.InsecureAllowPrivateClientURLs, jwksFetchTimeout, jwksMaxBytes)
	if err != nil {
		return fail(err)
	}
	p.keySets = newClientKeySets(jwksClients, o.now, func(ctx context.Context, clientID, reason string, err error) {
		p.outboundFailed(ctx, purposeJWKS, clientID, reason, err)
	})
	p.oauth, p.idSigner = newOAuth2Provider(cfg, p.fositeStore(), p.verifier, p.keySets)

	p.limiter = countingLimiter{Limiter: newLimiter(o), counts: p.stats}
	if p.auth, err = newPublicAuth(cfg, p.store, p.limiter, p.stats, o); err != nil {
		return fail(err)
	}
	if p.social, err = p.newSocial(cfg); err != nil {
		return fail(err)
	}
	if p.perms, err = p.newPermissions(); err != nil {
		return fail(err)
	}
	if p.ui, err = p.newUI(cfg); err != nil {
		return fail(err)
	}
	p.router = traceRequests(o.tracer, p.routes())
	if p.logouts, err = newLogoutSender(cfg.BackchannelLogout, o.tracer, cfg.InsecureAllowPrivateClientURLs); err != nil {
		return fail(err)
	}

	bg, stop := context.WithCancel(context.Background())
	p.stop = stop
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.keys.run(bg) }()
	p.wg.Add(1)
	go func() { defer p.wg.Done(); _ = p.store.ListenClientChanges(bg) }()
	if cfg.BackchannelLogout.Interval > 0 {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.runLogoutDelivery(bg) }()
	}
	if cfg.JanitorInterval > 0 {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.store.RunJanitor(bg, cfg.JanitorInterval, 500, o.now, o.logger)
		}()
	}
	return p, nil
}

// ServeHTTP routes a request to the provider's endpoints and pages. Each request reads an
// authorization code or refresh token at most once (storage.WithRequestMemo).
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := p.eventRequest(storage.WithRequestMemo(r.Context()), r)
	p.router.ServeHTTP(w, r.WithContext(ctx))
}

// Ready reports whether the database answers.
func (p *Provider) Ready(ctx context.Context) error { return p.store.Ping(ctx) }

// Close stops the background work (janitor, key reload, logout and mail delivery) and closes the database when New
// opened it.
func (p *Provider) Close() error {
	p.stop()
	p.wg.Wait()
	p.auth.Close() // mail being queued reaches the outbox; sends in flight finish
	if p.ownStore {
		return p.store.Close()
	}
	return nil
}

// Migrate applies the pending database migrations of dsn and returns.
func Migrate(ctx context.Context, dsn string) error {
	s, err := storage.Open(ctx, dsn)
	if err != nil {
		return err
	}
	return errors.Join(s.Migrate(ctx), s.Close())
}

// secureCookies reports whether cookies must carry the Secure attribute: always, except
// when the issuer is plain http on a loopback host (local development).
func secureCookies(issuer string) bool {
	u, err := url.Parse(issuer)
	if err != nil {
		return true
	}
	if u.Scheme == "https" {
		return true
	}
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		return false
	}
	return true
}
