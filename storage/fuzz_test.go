package storage_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
)

// FuzzIsRegisteredRedirectURI feeds arbitrary URIs to the check that lets a magic link lead
// to a client's redirect URI, on a real SQLite file. Property: a URI is accepted exactly
// when it equals, byte for byte, a registered one: a URI differing in scheme, host, port,
// path, query or case never passes.
func FuzzIsRegisteredRedirectURI(f *testing.F) {
	ctx := context.Background()
	store, err := storage.Open(ctx, "sqlite:"+filepath.Join(f.TempDir(), "gatehouse.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = store.Close() })
	if err := store.Migrate(ctx); err != nil {
		f.Fatal(err)
	}
	registered := []string{
		"https://app.example/callback", "https://app.example:8443/cb?tenant=1", "http://127.0.0.1/cb",
		"com.example.app:/oauth2redirect", "https://xn--bcher-kva.example/cb",
	}
	for i, uris := range [][]string{registered[:2], registered[2:]} {
		if err := store.CreateClient(ctx, &storage.Client{ID: "client" + string(rune('a'+i)), RedirectURIs: uris}); err != nil {
			f.Fatal(err)
		}
	}
	for _, seed := range append(slices.Clone(registered),
		"", "https://APP.example/callback", "https://app.example/callback/", "https://app.example:443/callback",
		"https://app.example/callback?x=1", "https://app.example/Callback", "http://app.example/callback",
		"https://app.example/callback#f", "https://app.example/%63allback", "https://bücher.example/cb",
		"https://app.example/callback\x00", `["https://app.example/callback"]`, "%", "'",
	) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		ok, err := store.IsRegisteredRedirectURI(ctx, uri)
		if err != nil {
			t.Fatalf("IsRegisteredRedirectURI(%q): %v", uri, err)
		}
		if want := slices.Contains(registered, uri); ok != want {
			t.Fatalf("IsRegisteredRedirectURI(%q) = %v, want %v", uri, ok, want)
		}
	})
}
