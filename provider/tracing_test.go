package provider_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// sentMail records the mails handed to it.
type sentMail struct {
	mu   sync.Mutex
	sent []publicauth.Message
}

func (m *sentMail) Send(_ context.Context, msg publicauth.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, msg)
	return nil
}

func (m *sentMail) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sent)
}

// headerRecorder is the edge of the world for upstream calls: it records the headers
// Gatehouse sends before passing the request on.
type headerRecorder struct {
	mu      sync.Mutex
	headers []http.Header
}

func (h *headerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.headers = append(h.headers, r.Header.Clone())
	h.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// An embedder's WithTracerProvider traces the provider without globals: each request is
// one server span, the statements of a store opened with storage.WithTracerProvider are
// its descendants, a mail handed to the mailer and every call to an upstream identity
// provider are spans of the request that caused them, and no trace context leaks to the
// upstream, a third party.
func TestWithTracerProviderTracesRequestsStatementsMailAndUpstreams(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		mail := &sentMail{}
		upstreamCalls := &headerRecorder{}
		g := newFakeUpstream(t, "google")
		e := newEnvOnStore(t, b.OpenWith(t, storage.WithTracerProvider(tp)), func(string) provider.Config {
			return provider.Config{Social: provider.SocialConfig{Google: g.config(),
				HTTPClient: &http.Client{Transport: upstreamCalls, Timeout: 10 * time.Second}}}
		}, provider.WithTracerProvider(tp), provider.WithMailer(mail))

		// A social login through the fake Google.
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		g.signIn(fakeProfile{Sub: "g-ada", Email: "ada@example.com", Name: "Ada", Verified: true})
		br := socialBrowser(t, e, g.srv.URL)
		ar := rp.start(oauth2.SetAuthURLParam("provider", "google"))
		rp.exchange(t, ar, wantCode(t, e, ar, callback(t, br.get(t, ar.String()), rpRedirectURI)))

		// A reset mail to an account with a password, sent in the background after the answer.
		e.user(t, "bob@example.com", "Bob")
		if r := e.postJSON(t, nil, "/api/public/request-password-reset", map[string]string{"email": "bob@example.com"}); r.status != http.StatusOK {
			t.Fatalf("reset request: %v", r)
		}
		for i := 0; i < 400 && mail.count() == 0; i++ {
			time.Sleep(10 * time.Millisecond) // bounded: the log-free mailer returns at once
		}
		e.srv.Close() // every request and its background mail are done: their spans ended
		e.p.Close()

		spans := rec.Ended()
		byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		for _, s := range spans {
			byID[s.SpanContext().SpanID()] = s
		}
		// rootOf follows parents within the recorded spans to the request's server span.
		rootOf := func(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
			for i := 0; i < 64 && s.Parent().IsValid(); i++ {
				p, ok := byID[s.Parent().SpanID()]
				if !ok {
					return nil
				}
				s = p
			}
			return s
		}
		var statements, upstream, mails int
		for _, s := range spans {
			root := rootOf(s)
			isRequest := root != nil && root.SpanKind() == trace.SpanKindServer && root.InstrumentationScope().Name != ""
			switch {
			case strings.HasPrefix(s.Name(), "db."):
				// Statements outside a request (migrations, key loads at start) have no
				// request to belong to.
				if isRequest && root != s {
					statements++
				}
			case s.Name() == "mail.send":
				mails++
				if !isRequest {
					t.Errorf("mail span is not under a request's server span")
				}
			case s.SpanKind() == trace.SpanKindClient && strings.HasPrefix(s.Name(), "HTTP "):
				upstream++
				if !isRequest {
					t.Errorf("upstream call span %q (%v) is not under a request's server span", s.Name(), s.Attributes())
				}
			}
			if s.SpanKind() == trace.SpanKindServer && s.Parent().IsValid() && !s.Parent().IsRemote() {
				t.Errorf("server span %q has a local parent: a request got two server spans", s.Name())
			}
		}
		if statements == 0 || mails != 1 || upstream < 2 {
			t.Errorf("spans under requests: %d statements (want some), %d mails (want 1), %d upstream calls (want token and profile)",
				statements, mails, upstream)
		}
		upstreamCalls.mu.Lock()
		defer upstreamCalls.mu.Unlock()
		if len(upstreamCalls.headers) < 2 {
			t.Errorf("upstream calls: got %d, want the token and profile calls", len(upstreamCalls.headers))
		}
		for _, h := range upstreamCalls.headers {
			if h.Get("Traceparent") != "" || h.Get("Tracestate") != "" {
				t.Errorf("an upstream call carried trace context: %v", h)
			}
		}
	})
}

// A request that arrives inside the embedder's own span keeps it: the provider adds no
// second server span, and its statements are children of the embedder's span.
func TestWithTracerProviderKeepsTheEmbeddersSpan(t *testing.T) {
	b := storagetest.Backends(t)[0]
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnvOnStore(t, b.OpenWith(t, storage.WithTracerProvider(tp)), func(string) provider.Config { return provider.Config{} },
		provider.WithTracerProvider(tp))
	e.user(t, "ann@example.com", "Ann")
	rec.Reset()

	ctx, span := tp.Tracer("embedder").Start(context.Background(), "embedder", trace.WithSpanKind(trace.SpanKindServer))
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, e.issuer+"/api/public/login",
		strings.NewReader(`{"email":"ann@example.com","password":"`+testPassword+`"}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	e.p.ServeHTTP(w, req)
	span.End()
	if w.Code != http.StatusOK {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	var statements int
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindServer && s.Name() != "embedder" {
			t.Errorf("the provider added server span %q under the embedder's", s.Name())
		}
		if strings.HasPrefix(s.Name(), "db.") {
			statements++
			if s.SpanContext().TraceID() != span.SpanContext().TraceID() {
				t.Errorf("statement %q is outside the embedder's trace", s.Name())
			}
		}
	}
	if statements == 0 {
		t.Error("no statement spans in the embedder's trace")
	}
}

// A private_key_jwt client's jwks_uri fetch is a client span of the token request that
// needed it.
func TestWithTracerProviderTracesClientJWKSFetch(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := storagetest.Backends(t)[0]
	e := newEnvOnStore(t, b.Open(t), func(string) provider.Config { return provider.Config{} }, provider.WithTracerProvider(tp))
	k1 := newECKey(t, "k1")
	keys := newJWKSServer(t, jwksOf(t, k1), 600)
	pk := e.client(t, provider.ClientSpec{ID: "pk", AuthMethod: "private_key_jwt", JWKSURI: keys.srv.URL + "/jwks.json",
		GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}})
	a := signWith(t, k1.alg, k1.priv, k1.kid, assertionClaims(pk.ClientID, e.issuer, time.Now()))
	if r := e.call(t, http.MethodPost, "/api/oauth/token", assertionForm(url.Values{"grant_type": {"client_credentials"}}, a), nil); r.status != http.StatusOK {
		t.Fatalf("token: %v", r)
	}
	e.srv.Close() // waits for the handler, which ends the server span after answering
	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	var fetches int
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if kv.Key != "url.full" || !strings.HasSuffix(kv.Value.AsString(), "/jwks.json") {
				continue
			}
			fetches++
			// Up through fosite's own spans to the token request's server span.
			root := s
			for i := 0; i < 64 && root != nil && root.Parent().IsValid(); i++ {
				root = byID[root.Parent().SpanID()]
			}
			if s.SpanKind() != trace.SpanKindClient || root == nil || root.SpanKind() != trace.SpanKindServer {
				t.Errorf("jwks fetch span %q (kind %v) is not a client span under the token request's server span", s.Name(), s.SpanKind())
			}
		}
	}
	if fetches != 1 {
		t.Errorf("jwks fetch spans: got %d, want 1", fetches)
	}
}
