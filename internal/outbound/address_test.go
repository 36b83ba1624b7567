package outbound

import (
	"errors"
	"net/http"
	"net/netip"
	"testing"
)

// TestRefused: every internal block is refused, in its IPv4-mapped, NAT64 and 6to4 forms
// too; public addresses are not. A pure decision: nothing is dialled.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"10.0.0.1", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"192.0.0.8", true},
		{"198.18.0.1", true},
		{"198.19.255.255", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},
		{"::", true},
		{"::1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"ff02::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::127.0.0.1", true},
		{"64:ff9b::7f00:1", true},    // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"2002:7f00:1::1", true},     // 6to4 of 127.0.0.1
		{"2002:c0a8:101::1", true},   // 6to4 of 192.168.1.1
		{"2001::1", true},            // Teredo
		{"64:ff9b:1::1", true},
		{"2001:db8::1", true},
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"93.184.215.14", false},
		{"100.63.255.255", false},
		{"100.128.0.0", false},
		{"172.32.0.1", false},
		{"2606:4700:4700::1111", false},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", false},  // 6to4 of 8.8.8.8
	} {
		t.Run(c.addr, func(t *testing.T) {
			addr := netip.MustParseAddr(c.addr)
			block, refused := Refused(addr)
			if refused != c.refused {
				t.Errorf("Refused(%s): got %v (%q), want %v", c.addr, refused, block, c.refused)
			}
			if refused && block == "" {
				t.Errorf("Refused(%s): no block named", c.addr)
			}
		})
	}
	if _, refused := Refused(netip.Addr{}); !refused {
		t.Error("Refused(zero Addr): got false, want true")
	}
}

// TestDialerRefusesByDecision: the strict dialer's Control refuses an internal address, as
// the dialer would call it once the address is resolved and before connecting; the call is
// made directly here, so no socket is connected to any address but loopback in any test.
func TestDialerRefusesByDecision(t *testing.T) {
	for _, address := range []string{"10.0.0.1:443", "169.254.169.254:80", "192.168.0.10:8080", "[fd00::1]:443",
		"[::ffff:10.1.2.3]:443", "127.0.0.1:9000", "[::1]:9000", "[64:ff9b::a00:1]:443", "garbage"} {
		err := refuseInternal("tcp", address, nil)
		if !errors.Is(err, ErrRefusedAddress) || Reason(err) != ReasonRefusedAddress {
			t.Errorf("Control(%s): got %v, want ErrRefusedAddress", address, err)
		}
	}
	for _, address := range []string{"93.184.215.14:443", "[2606:4700:4700::1111]:443"} {
		if err := refuseInternal("tcp", address, nil); err != nil {
			t.Errorf("Control(%s): got %v, want nil", address, err)
		}
	}
}

// TestPolicyNeverUsesEnvironmentProxy: the transport has no proxy, so HTTPS_PROXY cannot
// route a request past the address check.
func TestPolicyNeverUsesEnvironmentProxy(t *testing.T) {
	for _, p := range []Policy{{}, {AllowPrivate: true, AllowHTTP: true}} {
		c, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.http.Transport.(*http.Transport).Proxy != nil {
			t.Errorf("policy %+v: the transport has a proxy function", p)
		}
	}
}
