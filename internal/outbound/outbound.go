package outbound

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Limits of a Policy.
const (
	// MaxConnectTimeout is the longest Policy.ConnectTimeout, and its default: a server that
	// does not accept a connection within it is not going to answer in time either.
	MaxConnectTimeout = 3 * time.Second
	// DefaultTimeout is Policy.Timeout's default.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBodyBytes is Policy.MaxBodyBytes's default.
	DefaultMaxBodyBytes = 64 << 10
	// maxHeaderBytes caps an answer's header.
	maxHeaderBytes = 16 << 10
)

// Policy is what a Client may reach, and how long and how much a request may take. The zero
// value is the strict policy with the default limits.
type Policy struct {
	// AllowPrivate lets the Client connect to any address, those Refused lists included: for
	// URLs of clients the operator created, and for development. Default false.
	AllowPrivate bool
	// AllowHTTP lets the Client use plain http. Default false: https only.
	AllowHTTP bool
	// ConnectTimeout bounds the TCP connection, and the TLS handshake after it: default and
	// at most MaxConnectTimeout (3 seconds).
	ConnectTimeout time.Duration
	// Timeout bounds a whole request, from the connection to the last byte of the body read:
	// default DefaultTimeout (10 seconds).
	Timeout time.Duration
	// MaxBodyBytes is the longest answer body the Client reads; a longer one is ErrTooLarge:
	// default DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64
}

// Option adjusts a Client beyond its Policy.
type Option func(*Client)

// WithTransport wraps the Client's transport in wrap, which must pass every request on to
// the transport it is given (tracing does): the checks stay in the transport underneath.
func WithTransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(c *Client) { c.http.Transport = wrap(c.http.Transport) }
}

// Client sends requests to URLs clients supplied, under one Policy. Safe for concurrent use;
// it keeps connections for reuse, as http.Client does.
type Client struct {
	policy Policy
	http   *http.Client
}

// New returns a Client for p with its defaults filled in. A negative limit, or a
// ConnectTimeout over MaxConnectTimeout, is an error.
func New(p Policy, opts ...Option) (*Client, error) {
	if p.ConnectTimeout < 0 || p.ConnectTimeout > MaxConnectTimeout || p.Timeout < 0 || p.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("outbound: invalid policy: timeouts and the size cap must be positive, the connect timeout at most %v", MaxConnectTimeout)
	}
	if p.ConnectTimeout == 0 {
		p.ConnectTimeout = MaxConnectTimeout
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.MaxBodyBytes == 0 {
		p.MaxBodyBytes = DefaultMaxBodyBytes
	}
	dialer := &net.Dialer{Timeout: p.ConnectTimeout, KeepAlive: 30 * time.Second}
	if !p.AllowPrivate {
		dialer.Control = refuseInternal
	}
	transport := &http.Transport{
		Proxy:                  nil, // never HTTP_PROXY: the proxy would connect where the check cannot see
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    p.ConnectTimeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
	}
	c := &Client{policy: p, http: &http.Client{
		Transport: transport,
		Timeout:   p.Timeout,
		// A redirect is answered as itself: the URL registered, and no other, is where the
		// client's resource lives, and a redirect must not lead the request elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	for _, opt := range opts {
		opt(c)
	}
	return c, nil
}

// Policy returns the Client's policy, defaults filled in.
func (c *Client) Policy() Policy { return c.policy }

// refuseInternal is a strict dialer's Control: it runs once the address is resolved and the
// socket made, before the connection is attempted, and refuses the addresses Refused lists.
func refuseInternal(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read the address %q", ErrRefusedAddress, address)
	}
	if block, refused := Refused(ap.Addr()); refused {
		return &AddressError{Addr: ap.Addr(), Block: block}
	}
	return nil
}

// Response is an answer with its body read.
type Response struct {
	StatusCode int
	// Status is the status line's text, e.g. "200 OK".
	Status string
	Header http.Header
	// Body is the whole body, at most Policy.MaxBodyBytes.
	Body []byte
}

// Want returns nil when the answer's status is one of codes, else a *StatusError.
func (r *Response) Want(codes ...int) error {
	if slices.Contains(codes, r.StatusCode) {
		return nil
	}
	return &StatusError{Code: r.StatusCode, Status: r.Status}
}

// Do sends req and reads its answer: the whole body, up to Policy.MaxBodyBytes (over it:
// ErrTooLarge). A redirect is not followed: it is the answer. The request fails with ErrURL
// for a URL the policy does not allow, with ErrRefusedAddress (an *AddressError) when a
// strict Client would connect to a refused address, and with the transport's error
// otherwise; Reason classifies them.
func (c *Client) Do(req *http.Request) (*Response, error) {
	if err := c.checkURL(req.URL); err != nil {
		return nil, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, c.policy.MaxBodyBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > c.policy.MaxBodyBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, c.policy.MaxBodyBytes)
	}
	return &Response{StatusCode: res.StatusCode, Status: res.Status, Header: res.Header, Body: body}, nil
}

// Get sends a GET to rawURL with header (which may be nil); see Do.
func (c *Client) Get(ctx context.Context, rawURL string, header http.Header) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrURL, err)
	}
	addHeader(req, header)
	return c.Do(req)
}

// PostForm sends form, form-encoded, in a POST to rawURL with header (which may be nil);
// see Do.
func (c *Client) PostForm(ctx context.Context, rawURL string, form url.Values, header http.Header) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrURL, err)
	}
	addHeader(req, header)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.Do(req)
}

func addHeader(req *http.Request, header http.Header) {
	for name, values := range header {
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
}

// checkURL refuses, before any connection, a URL the policy does not allow: under the
// strict policy first a host that is a refused address written out (the dialer would
// refuse it anyway, but this says so without a lookup), then a scheme other than https.
func (c *Client) checkURL(u *url.URL) error {
	switch {
	case u == nil || !u.IsAbs() || u.Host == "":
		return fmt.Errorf("%w: not an absolute URL with a host", ErrURL)
	case u.User != nil:
		return fmt.Errorf("%w: user info in the URL", ErrURL)
	}
	if !c.policy.AllowPrivate {
		if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
			if block, refused := Refused(addr); refused {
				return &AddressError{Addr: addr, Block: block}
			}
		}
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !c.policy.AllowHTTP) {
		return fmt.Errorf("%w: scheme %q (want https)", ErrURL, u.Scheme)
	}
	return nil
}
