package publicauth_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

func TestClientIP(t *testing.T) {
	trusted := mustTrustedProxies(t, "10.0.0.0/8, 192.0.2.10 fd00::/8")
	for _, c := range []struct {
		name       string
		remoteAddr string
		xff        []string // X-Forwarded-For header lines
		trusted    []netip.Prefix
		want       string // "" for the zero Addr
	}{
		{"direct client", "203.0.113.7:5123", nil, trusted, "203.0.113.7"},
		{"spoofed header from an untrusted peer is ignored", "203.0.113.7:5123", []string{"198.51.100.1"}, trusted, "203.0.113.7"},
		{"no trusted proxies configured", "10.0.0.5:443", []string{"198.51.100.1"}, nil, "10.0.0.5"},
		{"one trusted proxy", "10.0.0.5:443", []string{"198.51.100.1"}, trusted, "198.51.100.1"},
		{"chain through two trusted proxies", "10.0.0.5:443", []string{"198.51.100.1, 192.0.2.10"}, trusted, "198.51.100.1"},
		{"client's own spoofed entries left of the first untrusted hop are ignored", "10.0.0.5:443",
			[]string{"1.1.1.1, 10.9.9.9, 198.51.100.1, 192.0.2.10"}, trusted, "198.51.100.1"},
		{"header split over several lines", "10.0.0.5:443", []string{"1.1.1.1, 198.51.100.1", "192.0.2.10"}, trusted, "198.51.100.1"},
		{"every hop trusted: the leftmost", "10.0.0.5:443", []string{"10.1.1.1, 10.2.2.2"}, trusted, "10.1.1.1"},
		{"trusted peer without the header", "10.0.0.5:443", nil, trusted, "10.0.0.5"},
		{"trusted peer with an empty header", "10.0.0.5:443", []string{""}, trusted, "10.0.0.5"},
		{"garbage header: the trusted peer", "10.0.0.5:443", []string{"not an ip"}, trusted, "10.0.0.5"},
		{"garbage past a trusted hop: that hop", "10.0.0.5:443", []string{"198.51.100.1, unknown, 10.2.2.2"}, trusted, "10.2.2.2"},
		{"garbage left of the client does not matter", "10.0.0.5:443", []string{"<script>, 198.51.100.1"}, trusted, "198.51.100.1"},
		{"empty entry stops the walk", "10.0.0.5:443", []string{"198.51.100.1,,10.2.2.2"}, trusted, "10.2.2.2"},
		{"entries with ports", "10.0.0.5:443", []string{"[2001:db8::1]:4711, 198.51.100.1:80"}, trusted, "198.51.100.1"},
		{"IPv6 peer", "[2001:db8::7]:5123", []string{"198.51.100.1"}, trusted, "2001:db8::7"},
		{"IPv6 trusted proxy and client", "[fd00::1]:443", []string{"2001:db8:aa::1, fd12::2"}, trusted, "2001:db8:aa::1"},
		{"IPv4-mapped peer is unmapped", "[::ffff:203.0.113.7]:5123", nil, trusted, "203.0.113.7"},
		{"IPv4-mapped trusted peer and hop", "[::ffff:10.0.0.5]:443", []string{"::ffff:198.51.100.1"}, trusted, "198.51.100.1"},
		{"zone dropped", "[fe80::1%eth0]:443", nil, trusted, "fe80::1"},
		{"peer without a port", "203.0.113.7", nil, trusted, "203.0.113.7"},
		{"peer that is not an IP", "@", []string{"198.51.100.1"}, trusted, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.remoteAddr
			for _, line := range c.xff {
				r.Header.Add("X-Forwarded-For", line)
			}
			got := publicauth.ClientIP(r, c.trusted)
			var want netip.Addr
			if c.want != "" {
				want = netip.MustParseAddr(c.want)
			}
			if got != want {
				t.Errorf("ClientIP = %v, want %v", got, want)
			}
		})
	}
}

// ClientIP over real HTTP: the peer is the test client on loopback.
func TestClientIPOverHTTP(t *testing.T) {
	var got []netip.Addr
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got,
			publicauth.ClientIP(r, nil),
			publicauth.ClientIP(r, mustTrustedProxies(t, "127.0.0.1")))
	}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", "198.51.100.1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("198.51.100.1")}
	if !slices.Equal(got, want) {
		t.Errorf("ClientIP untrusted, trusted = %v, want %v", got, want)
	}
}

func mustTrustedProxies(t *testing.T, list string) []netip.Prefix {
	t.Helper()
	p, err := publicauth.ParseTrustedProxies(list)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseTrustedProxies(t *testing.T) {
	for _, c := range []struct {
		list string
		want []string
	}{
		{"", nil},
		{"  ,, ", nil},
		{"10.0.0.0/8", []string{"10.0.0.0/8"}},
		{"10.0.0.0/8,192.168.1.1 2001:db8::/32,\t::1", []string{"10.0.0.0/8", "192.168.1.1/32", "2001:db8::/32", "::1/128"}},
		{"10.1.2.3/8", []string{"10.0.0.0/8"}},             // host bits cleared
		{"::ffff:10.0.0.1", []string{"10.0.0.1/32"}},       // mapped bare IP unmapped
		{"::ffff:10.0.0.0/104", []string{"10.0.0.0/8"}},    // mapped prefix unmapped
		{"fe80::1%eth0", []string{"fe80::1/128"}},          // zone dropped
		{"0.0.0.0/0, ::/0", []string{"0.0.0.0/0", "::/0"}}, // trust all: the operator's call
		{"172.16.0.0/12\n172.20.0.1", []string{"172.16.0.0/12", "172.20.0.1/32"}},
	} {
		got, err := publicauth.ParseTrustedProxies(c.list)
		if err != nil {
			t.Errorf("ParseTrustedProxies(%q): %v", c.list, err)
			continue
		}
		var gotStrings []string
		for _, p := range got {
			gotStrings = append(gotStrings, p.String())
		}
		if !slices.Equal(gotStrings, c.want) {
			t.Errorf("ParseTrustedProxies(%q) = %v, want %v", c.list, gotStrings, c.want)
		}
	}
}

func TestParseTrustedProxiesNamesTheBadEntry(t *testing.T) {
	for _, c := range []struct{ list, bad string }{
		{"10.0.0.0/8, proxy.internal", "proxy.internal"},
		{"10.0.0.0/33", "10.0.0.0/33"},
		{"10.0.0.0/8,10.0.0.0/", "10.0.0.0/"},
		{"256.1.1.1", "256.1.1.1"},
		{"10.0.0.1:8080", "10.0.0.1:8080"},
		{"::ffff:0:0/80", "::ffff:0:0/80"},
		{"fe80::/10%eth0", "fe80::/10%eth0"},
	} {
		_, err := publicauth.ParseTrustedProxies(c.list)
		if err == nil {
			t.Errorf("ParseTrustedProxies(%q) succeeded", c.list)
			continue
		}
		if !strings.Contains(err.Error(), `"`+c.bad+`"`) {
			t.Errorf("ParseTrustedProxies(%q) error %q does not name %q", c.list, err, c.bad)
		}
	}
}

func TestLimitKeyForIP(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"}, // same /64, same key
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::1", "::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"", "unknown"},
	} {
		var a netip.Addr
		if c.addr != "" {
			a = netip.MustParseAddr(c.addr)
		}
		if got := publicauth.LimitKeyForIP(a); got != c.want {
			t.Errorf("LimitKeyForIP(%v) = %q, want %q", c.addr, got, c.want)
		}
	}
}
