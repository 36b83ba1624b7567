package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v3"

	"github.com/gatehouse-id/gatehouse/storage"
)

// TestClientKeySetsBounded: past its maximum the cache drops the entries whose set expired
// first, then the least recently used, so it never holds more than the maximum; Forget
// drops a client's entry.
func TestClientKeySetsBounded(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age="+r.URL.Query().Get("max-age"))
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	clients, err := newOutboundClients(nil, true, time.Second, jwksMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	k := newClientKeySets(clients, func() time.Time { return now }, func(context.Context, string, string, error) {})
	k.max = 4
	resolve := func(id string, maxAge int) {
		t.Helper()
		c := &storage.Client{ID: id, ClientAuthentication: storage.ClientAuthentication{JWKSURI: fmt.Sprintf("%s/?max-age=%d", srv.URL, maxAge)}}
		if _, err := k.ResolveClient(context.Background(), c, false); err != nil {
			t.Fatalf("ResolveClient(%s): %v", id, err)
		}
	}
	// One short-lived entry (a minute), three long-lived ones.
	resolve("short", 60)
	for i := range 3 {
		now = now.Add(time.Second)
		resolve(fmt.Sprint("long-", i), 3600)
	}
	now = now.Add(2 * time.Minute) // the short one has expired
	resolve("new-0", 3600)
	if _, ok := k.entries["short"]; ok || k.len() != 4 {
		t.Errorf("after the fifth client: %d entries, short kept %v; want 4, the expired one dropped", k.len(), ok)
	}
	resolve("long-1", 3600) // used: long-0 is now the least recently used
	resolve("new-1", 3600)
	if _, ok := k.entries["long-0"]; ok || k.len() != 4 {
		t.Errorf("after the sixth client: %d entries, long-0 kept %v; want 4, the least recently used dropped", k.len(), ok)
	}
	for i := range 20 {
		resolve(fmt.Sprint("burst-", i), 3600)
		if k.len() > 4 {
			t.Fatalf("the cache holds %d entries, over its maximum 4", k.len())
		}
	}
	k.Forget("burst-19")
	if _, ok := k.entries["burst-19"]; ok {
		t.Error("Forget kept the client's entry")
	}
}
