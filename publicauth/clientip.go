package publicauth

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP returns the address of the client that sent r. It is the peer of the connection
// (r.RemoteAddr) unless that peer is a trusted proxy: then X-Forwarded-For is walked from the
// right, each proxy having appended the address it received from, past every address inside
// trustedProxies, and the first address outside them is the client. When every address in the
// header is trusted, the leftmost is the client; an entry that is not an IP address (or
// IP:port) stops the walk, and the last address reached is the client, since what lies beyond
// it was written by no proxy we trust. Only trusted proxies are believed, so a client cannot
// choose its address by sending the header itself.
//
// IPv4-mapped IPv6 addresses are returned as IPv4, and zones are dropped. When r.RemoteAddr is
// not an IP address (a Unix socket), ClientIP returns the zero Addr.
func ClientIP(r *http.Request, trustedProxies []netip.Prefix) netip.Addr {
	client, ok := parseHostAddr(r.RemoteAddr)
	if !ok {
		return netip.Addr{}
	}
	if !inPrefixes(client, trustedProxies) {
		return client
	}
	hops := forwardedFor(r.Header)
	for i := len(hops) - 1; i >= 0; i-- {
		hop, ok := parseHostAddr(hops[i])
		if !ok {
			break
		}
		client = hop
		if !inPrefixes(client, trustedProxies) {
			break
		}
	}
	return client
}

// forwardedFor returns the entries of every X-Forwarded-For header of h, in order (several
// header lines are one list, as RFC 9110 §5.3 combines them).
func forwardedFor(h http.Header) []string {
	var hops []string
	for _, line := range h.Values("X-Forwarded-For") {
		for hop := range strings.SplitSeq(line, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	return hops
}

// parseHostAddr reads an IP address, bare or with a port (192.0.2.1:443, [2001:db8::1]:443),
// unmapped and without its zone.
func parseHostAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}

func inPrefixes(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies reads a list of trusted proxies separated by commas and/or spaces, each a
// CIDR prefix (10.0.0.0/8, fd00::/8) or a bare IP address (one host: /32 or /128). Host bits
// in a prefix are cleared, and IPv4-mapped IPv6 entries become IPv4, as ClientIP compares
// unmapped addresses. An empty list trusts no proxy. The error names the first bad entry.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for _, entry := range strings.FieldsFunc(list, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}) {
		p, err := parseTrustedProxy(entry)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is not an IP address or CIDR prefix: %w", entry, err)
		}
		prefixes = append(prefixes, p)
	}
	return prefixes, nil
}

func parseTrustedProxy(entry string) (netip.Prefix, error) {
	if !strings.Contains(entry, "/") {
		a, err := netip.ParseAddr(entry)
		if err != nil {
			return netip.Prefix{}, err
		}
		a = a.Unmap().WithZone("")
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(entry)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("an IPv4-mapped prefix needs at least 96 bits")
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// LimitKeyForIP is the rate-limit key of a client address: an IPv4 address as it is, an IPv6
// address as its /64 (2001:db8:1:2::/64), since one subscriber usually holds a whole /64 and
// could otherwise dodge a limit by changing addresses within it. The zero Addr (no IP known)
// is "unknown", one key for all such clients.
func LimitKeyForIP(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}
