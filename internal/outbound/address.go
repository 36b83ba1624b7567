package outbound

import (
	"net/netip"
)

// addressRange is a block of addresses a strict Client never connects to, and what it is.
type addressRange struct {
	prefix netip.Prefix
	name   string
}

func block(cidr, name string) addressRange {
	return addressRange{netip.MustParsePrefix(cidr), name}
}

// refusedIPv4 are the IPv4 blocks that are not the public internet (RFC 6890's special
// purpose registry, less the few globally reachable entries).
var refusedIPv4 = []addressRange{
	block("0.0.0.0/8", "this network (unspecified)"),
	block("10.0.0.0/8", "private (RFC 1918)"),
	block("100.64.0.0/10", "shared address space (carrier-grade NAT, RFC 6598)"),
	block("127.0.0.0/8", "loopback"),
	block("169.254.0.0/16", "link-local"),
	block("172.16.0.0/12", "private (RFC 1918)"),
	block("192.0.0.0/24", "IETF protocol assignments"),
	block("192.0.2.0/24", "documentation"),
	block("192.88.99.0/24", "6to4 relay anycast"),
	block("192.168.0.0/16", "private (RFC 1918)"),
	block("198.18.0.0/15", "benchmarking"),
	block("198.51.100.0/24", "documentation"),
	block("203.0.113.0/24", "documentation"),
	block("224.0.0.0/4", "multicast"),
	block("240.0.0.0/4", "reserved (and the broadcast address)"),
}

// refusedIPv6 are the IPv6 blocks that are not the public internet. The IPv4-mapped block
// (::ffff:0:0/96) is not among them: such an address is checked as the IPv4 address it maps,
// and so are the IPv4 addresses NAT64 and 6to4 embed (embeddedIPv4).
var refusedIPv6 = []addressRange{
	block("::/128", "unspecified"),
	block("::1/128", "loopback"),
	block("::/96", "IPv4-compatible (deprecated)"),
	block("::ffff:0:0:0/96", "IPv4-translated"),
	block("64:ff9b:1::/48", "local-use NAT64"),
	block("100::/64", "discard-only"),
	block("2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID)"),
	block("2001:db8::/32", "documentation"),
	block("3fff::/20", "documentation"),
	block("fc00::/7", "unique-local"),
	block("fe80::/10", "link-local"),
	block("fec0::/10", "site-local (deprecated)"),
	block("ff00::/8", "multicast"),
}

// Blocks whose addresses carry an IPv4 address, which decides.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: the last 32 bits
	sixToFour = netip.MustParsePrefix("2002::/16")    // RFC 3056: bits 16 to 47
)

// Refused reports whether a strict Client refuses to connect to addr, and names the block
// it lies in ("loopback", "private (RFC 1918)", "link-local", …). An IPv4-mapped IPv6
// address (::ffff:a.b.c.d) is judged as its IPv4 address, and so is the IPv4 address a
// NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address embeds. An IPv6 zone is ignored. The
// invalid zero Addr is refused.
func Refused(addr netip.Addr) (block string, refused bool) {
	if !addr.IsValid() {
		return "invalid", true
	}
	addr = addr.WithZone("").Unmap()
	if addr.Is4() {
		return refusedIn(refusedIPv4, addr)
	}
	if v4, ok := embeddedIPv4(addr); ok {
		if name, refused := refusedIn(refusedIPv4, v4); refused {
			return name + ", embedded in " + addr.String(), true
		}
		return "", false
	}
	if name, refused := refusedIn(refusedIPv6, addr); refused {
		return name, true
	}
	// Belt and braces: whatever the standard library also calls special.
	switch {
	case addr.IsLoopback():
		return "loopback", true
	case addr.IsPrivate():
		return "private", true
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast(), addr.IsMulticast():
		return "link-local or multicast", true
	case addr.IsUnspecified():
		return "unspecified", true
	}
	return "", false
}

func refusedIn(ranges []addressRange, addr netip.Addr) (string, bool) {
	for _, r := range ranges {
		if r.prefix.Contains(addr) {
			return r.name, true
		}
	}
	return "", false
}

// embeddedIPv4 returns the IPv4 address a NAT64 or 6to4 address carries.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}
