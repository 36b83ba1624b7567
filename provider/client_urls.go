package provider

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-id/gatehouse/internal/outbound"
	"github.com/gatehouse-id/gatehouse/storage"
)

// URLs a client supplies that Gatehouse requests: its jwks_uri (GET) and its back-channel
// logout URI (POST). Each goes through an outbound.Client chosen by who created the client:
// a client an admin created is trusted with any address, a dynamically registered one gets
// the strict policy (public addresses, https), unless Config.InsecureAllowPrivateClientURLs.

// Purposes of outbound requests, the label Stats.OutboundFailures counts them by.
const (
	purposeJWKS              = "jwks_uri"
	purposeBackchannelLogout = "backchannel_logout_uri"
)

// outboundClients are the two clients for one purpose: strict for dynamically registered
// clients, trusted for the rest.
type outboundClients struct {
	strict, trusted *outbound.Client
}

// newOutboundClients makes the pair for requests bounded by timeout and maxBody; with
// insecure (Config.InsecureAllowPrivateClientURLs) both are permissive. Requests are traced
// under tp, when not nil.
func newOutboundClients(tp trace.TracerProvider, insecure bool, timeout time.Duration, maxBody int64) (outboundClients, error) {
	var opts []outbound.Option
	if tp != nil {
		opts = append(opts, outbound.WithTransport(func(next http.RoundTripper) http.RoundTripper {
			return tracedTransport(tp, next)
		}))
	}
	strict := outbound.Policy{Timeout: timeout, MaxBodyBytes: maxBody}
	trusted := outbound.Policy{AllowPrivate: true, AllowHTTP: true, Timeout: timeout, MaxBodyBytes: maxBody}
	if insecure {
		strict = trusted
	}
	s, err := outbound.New(strict, opts...)
	if err != nil {
		return outboundClients{}, err
	}
	t, err := outbound.New(trusted, opts...)
	if err != nil {
		return outboundClients{}, err
	}
	return outboundClients{strict: s, trusted: t}, nil
}

// forClient is the outbound client for c's URLs.
func (o outboundClients) forClient(c *storage.Client) *outbound.Client {
	if c.DynamicallyRegistered() {
		return o.strict
	}
	return o.trusted
}

// outboundFailed logs a failed request for the client clientID and counts it by purpose and
// reason (Stats.OutboundFailures). The client learns none of it: its answer is the same
// whatever the reason.
func (p *Provider) outboundFailed(ctx context.Context, purpose, clientID, reason string, err error) {
	p.stats.outboundFailed(purpose, reason)
	p.log.WarnContext(ctx, "request to a client's URL failed", "purpose", purpose, "client_id", clientID, "reason", reason, "error", err)
}

// checkRegisteredClientURL is the rule for a URL Gatehouse will request (jwks_uri,
// backchannel_logout_uri) in a dynamic registration (RFC 7591) or its update (RFC 7592):
// https, and a host that is neither localhost nor an address outbound.Refused lists, nor a
// number that resolvers read as an address (2130706433, 0x7f.1). With insecure
// (Config.InsecureAllowPrivateClientURLs) any URL passes, as for clients an admin creates;
// their own rules (checkJWKSURI, checkBackchannelLogoutURI) apply either way. The strict
// outbound client checks the address again at every request, after DNS resolution.
func checkRegisteredClientURL(raw string, insecure bool) error {
	if raw == "" || insecure {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("%q must use https", raw)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%q names the server's own host (localhost): Gatehouse sends no request there", raw)
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if block, refused := outbound.Refused(addr); refused {
			return fmt.Errorf("%q is a %s address: Gatehouse sends no request to loopback, private, link-local or reserved addresses", raw, block)
		}
		return nil
	}
	if numericHost(host) {
		return fmt.Errorf("%q has a numeric host that is not a plain IP address", raw)
	}
	return nil
}

// numericHost reports whether host's last label is a number (decimal, octal or 0x-hex),
// which no DNS name has and which C resolvers read as an IPv4 address (inet_aton).
func numericHost(host string) bool {
	last := host[strings.LastIndex(host, ".")+1:]
	if last == "" {
		return false
	}
	digits := strings.TrimPrefix(last, "0x")
	if digits == "" {
		return true
	}
	hex := len(digits) < len(last)
	for _, r := range digits {
		switch {
		case r >= '0' && r <= '9':
		case hex && (r >= 'a' && r <= 'f'):
		default:
			return false
		}
	}
	return true
}
