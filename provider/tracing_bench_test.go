package provider_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage"
)

// BenchmarkTokenObserved measures the client_credentials token endpoint as the server runs
// it: bare, with an events sink counting metrics (what the server installs), and with an
// events sink and tracing on but sampling nothing. Compare allocs/op: with tracing off the
// provider must not pay for it.
func BenchmarkTokenObserved(b *testing.B) {
	count := func(context.Context, provider.Event) {}
	for _, bc := range []struct {
		name string
		opts []provider.Option
	}{
		{"bare", nil},
		{"events", []provider.Option{provider.WithEvents(count)}},
		{"events+tracing-unsampled", []provider.Option{provider.WithEvents(count),
			provider.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			st, err := storage.Open(ctx, "sqlite:"+benchDir(b)+"/bench.db")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			srv := httptest.NewUnstartedServer(nil)
			issuer := "http://" + srv.Listener.Addr().String()
			cfg := provider.Config{Issuer: issuer, Secret: []byte(strings.Repeat("k", 32)), JanitorInterval: -1, AccessTokenAlg: provider.AlgES256}
			p, err := provider.New(cfg, append([]provider.Option{provider.WithStore(st), provider.WithLogger(discardLogger())}, bc.opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			srv.Config.Handler = p
			srv.Start()
			b.Cleanup(func() { srv.Close(); _ = p.Close() })
			c, err := p.CreateClient(ctx, provider.ClientSpec{ID: "svc", Name: "Service", GrantTypes: []string{"client_credentials"}})
			if err != nil {
				b.Fatal(err)
			}
			form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"svc"}, "client_secret": {c.ClientSecret}}
			hc := &http.Client{}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				postForm(b, hc, issuer+"/api/oauth/token", form)
			}
		})
	}
}
