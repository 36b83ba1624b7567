// Package outbound is the one HTTP client for URLs a client of the provider supplied: its
// jwks_uri, its back-channel logout URI, and whatever else a registration may name later
// (a sector_identifier_uri, webhooks). Whoever registers a client chooses those URLs, so
// every request to one is a request the server makes on a stranger's behalf; without care it
// reaches what only the server can reach (server-side request forgery): a cloud metadata
// service at 169.254.169.254, an admin API on 127.0.0.1, a database on 10.0.0.5.
//
// A Client is made for one Policy. The strict policy (the zero value) refuses to connect to
// a loopback, private (RFC 1918, unique-local fc00::/7), link-local (169.254/16, fe80::/10),
// shared (100.64/10), unspecified, multicast, broadcast or otherwise reserved address, and
// to the IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 (2002::/16) forms of one (Refused lists
// them). It decides on the address the connection is about to go to, after DNS resolution,
// in the dialer's Control hook: a host name that resolves to an internal address, or is
// re-pointed at one after a first check (DNS rebinding), is refused the same way, and no
// packet leaves for a refused address. It speaks https only.
//
// Every Client connects within a few seconds (MaxConnectTimeout at most), bounds the whole
// request (Policy.Timeout), reads at most Policy.MaxBodyBytes of an answer, follows no
// redirect (a 3xx is the answer) and ignores HTTP_PROXY and its kin: the request goes to the
// address checked, not to a proxy that would reach what the check refused.
//
//	c, err := outbound.New(outbound.Policy{}) // strict: public https addresses only
//	if err != nil { … }
//	res, err := c.Get(ctx, "https://rp.example/jwks.json", nil)
//	if err == nil {
//		err = res.Want(http.StatusOK)
//	}
//	if err != nil {
//		metrics.failed(outbound.Reason(err)) // refused_address, timeout, status, too_large, …
//	}
//
// The permissive policy (AllowPrivate, AllowHTTP) is for URLs an operator configured, whom
// the operator trusts, and for development.
package outbound
