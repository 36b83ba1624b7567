package outbound_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/outbound"
)

// loopbackServer is an HTTP server on 127.0.0.1 that counts the connections it accepted.
type loopbackServer struct {
	*httptest.Server
	conns atomic.Int32
}

func newLoopbackServer(t *testing.T, h http.HandlerFunc) *loopbackServer {
	t.Helper()
	s := &loopbackServer{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func newClient(t *testing.T, p outbound.Policy) *outbound.Client {
	t.Helper()
	c, err := outbound.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var permissive = outbound.Policy{AllowPrivate: true, AllowHTTP: true}

// TestStrictRefusesLoopbackListener: a listener on 127.0.0.1 is refused by the strict policy
// (by a literal address and by a name that resolves to it) without a connection reaching
// it, and reached by the permissive policy.
func TestStrictRefusesLoopbackListener(t *testing.T) {
	srv := newLoopbackServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	for _, target := range []string{
		srv.URL,
		strings.Replace(srv.URL, "127.0.0.1", "localhost", 1),
		strings.Replace(srv.URL, "127.0.0.1", "[::ffff:127.0.0.1]", 1),
	} {
		// Plain http is allowed here so that the address, not the scheme, decides.
		strictHTTP := newClient(t, outbound.Policy{AllowHTTP: true})
		_, err := strictHTTP.Get(context.Background(), target+"/admin?action=delete_all", nil)
		if !errors.Is(err, outbound.ErrRefusedAddress) || outbound.Reason(err) != outbound.ReasonRefusedAddress {
			t.Errorf("strict GET %s: got %v, want ErrRefusedAddress", target, err)
		}
		_, err = strictHTTP.PostForm(context.Background(), target+"/quit", url.Values{"cmd": {"shutdown"}}, nil)
		if !errors.Is(err, outbound.ErrRefusedAddress) {
			t.Errorf("strict POST %s: got %v, want ErrRefusedAddress", target, err)
		}
	}
	if n := srv.conns.Load(); n != 0 {
		t.Fatalf("the loopback listener accepted %d connections from the strict client, want 0", n)
	}
	res, err := newClient(t, permissive).Get(context.Background(), srv.URL, nil)
	if err != nil || res.StatusCode != http.StatusOK || string(res.Body) != "hello" {
		t.Fatalf("permissive GET: got %+v, %v; want 200 hello", res, err)
	}
}

// TestStrictRefusesPlainHTTPAndUserInfo: the strict policy speaks https only and refuses
// credentials in the URL, before any connection.
func TestStrictRefusesPlainHTTPAndUserInfo(t *testing.T) {
	strict := newClient(t, outbound.Policy{})
	for _, target := range []string{"http://rp.example/jwks", "https://user:pw@rp.example/jwks", "ftp://rp.example/x", "/relative"} {
		if _, err := strict.Get(context.Background(), target, nil); !errors.Is(err, outbound.ErrURL) || outbound.Reason(err) != outbound.ReasonURL {
			t.Errorf("GET %s: got %v, want ErrURL", target, err)
		}
	}
	// A literal internal address is refused before any lookup or dial.
	for _, target := range []string{"https://10.0.0.1/", "https://169.254.169.254/latest/meta-data", "https://[fd00::1]/", "https://0.0.0.0/"} {
		if _, err := strict.Get(context.Background(), target, nil); !errors.Is(err, outbound.ErrRefusedAddress) {
			t.Errorf("GET %s: got %v, want ErrRefusedAddress", target, err)
		}
	}
}

// TestLimits: a redirect is the answer (never followed), a body over the cap is ErrTooLarge,
// and a server that accepts and never answers is a timeout within the total bound.
func TestLimits(t *testing.T) {
	var followed atomic.Int32
	srv := newLoopbackServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			followed.Add(1)
		case "/redirect":
			http.Redirect(w, r, "/moved", http.StatusFound)
		case "/big":
			_, _ = w.Write(make([]byte, 2048))
		case "/fits":
			_, _ = w.Write(make([]byte, 1024))
		}
	})
	c := newClient(t, outbound.Policy{AllowPrivate: true, AllowHTTP: true, MaxBodyBytes: 1024, Timeout: 300 * time.Millisecond})
	res, err := c.Get(context.Background(), srv.URL+"/redirect", nil)
	if err != nil || res.StatusCode != http.StatusFound || followed.Load() != 0 {
		t.Errorf("redirect: got %+v, %v, followed %d; want the 302 itself", res, err, followed.Load())
	}
	if err := res.Want(http.StatusOK); outbound.Reason(err) != outbound.ReasonStatus {
		t.Errorf("Want(200) of a 302: got %v, want a StatusError", err)
	}
	if _, err := c.Get(context.Background(), srv.URL+"/big", nil); !errors.Is(err, outbound.ErrTooLarge) || outbound.Reason(err) != outbound.ReasonTooLarge {
		t.Errorf("2 KiB body over a 1 KiB cap: got %v, want ErrTooLarge", err)
	}
	if res, err := c.Get(context.Background(), srv.URL+"/fits", nil); err != nil || len(res.Body) != 1024 {
		t.Errorf("1 KiB body under a 1 KiB cap: got %v", err)
	}

	// A black hole: accepts the connection, never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	_, err = c.Get(context.Background(), "http://"+ln.Addr().String()+"/", nil)
	if outbound.Reason(err) != outbound.ReasonTimeout {
		t.Errorf("black hole: got %v (reason %q), want a timeout", err, outbound.Reason(err))
	}
}

// TestNewRefusesBadPolicies: a connect timeout over three seconds or a negative limit is an
// error, and the defaults are filled in.
func TestNewRefusesBadPolicies(t *testing.T) {
	for _, p := range []outbound.Policy{{ConnectTimeout: 4 * time.Second}, {Timeout: -1}, {MaxBodyBytes: -1}} {
		if _, err := outbound.New(p); err == nil {
			t.Errorf("New(%+v): got no error", p)
		}
	}
	got := newClient(t, outbound.Policy{}).Policy()
	if got.ConnectTimeout != outbound.MaxConnectTimeout || got.Timeout != outbound.DefaultTimeout || got.MaxBodyBytes != outbound.DefaultMaxBodyBytes {
		t.Errorf("defaults: got %+v", got)
	}
}
