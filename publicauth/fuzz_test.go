package publicauth

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzEmailKey feeds arbitrary addresses to the key every email lookup, uniqueness check,
// lockout and identity link compares. Properties: the key is a fixed point (EmailKey of a
// key is that key); it has no ASCII upper case; its domain is ASCII (the IDNA A-label);
// ASCII case in the input never changes the key; surrounding white space never does.
func FuzzEmailKey(f *testing.F) {
	for _, seed := range []string{
		"Alice@Example.COM", " bob@example.com ", "a@bücher.example", "a@xn--bcher-kva.example",
		"a@gmaİl.com", "a@K.example", "@example.com", "a@", "a@b..c", "a@b.", "a@.b",
		"a\x00@b.c", "a@b\xff.c", "a@b@c.d", "ä@ß.de", "a@xn--.com", "a@-x.com", "a@1.2.3.4",
		"\"a b\"@c.d", "a@[127.0.0.1]", "a@xn--ls8h.la", "a@ＡＢＣ.com",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		key, err := EmailKey(addr)
		if err != nil {
			return
		}
		if again, err := EmailKey(key); err != nil || again != key {
			t.Fatalf("EmailKey(%q) = %q, but EmailKey of that = %q, %v", addr, key, again, err)
		}
		if foldASCII(key) != key {
			t.Fatalf("EmailKey(%q) = %q has ASCII upper case", addr, key)
		}
		at := strings.LastIndexByte(key, '@')
		if at <= 0 {
			t.Fatalf("EmailKey(%q) = %q has no local part and domain", addr, key)
		}
		for _, c := range []byte(key[at+1:]) {
			if c >= utf8.RuneSelf {
				t.Fatalf("EmailKey(%q) = %q: domain is not ASCII", addr, key)
			}
		}
		if upper, err := EmailKey(strings.Map(asciiUpper, addr)); err != nil || upper != key {
			t.Fatalf("EmailKey of %q in ASCII upper case = %q, %v; want %q", addr, upper, err, key)
		}
		if spaced, err := EmailKey(" \t" + addr + "\n"); err != nil || spaced != key {
			t.Fatalf("EmailKey of %q with white space = %q, %v; want %q", addr, spaced, err, key)
		}
		if !sameEmail(addr, key) {
			t.Fatalf("sameEmail(%q, its key %q) = false", addr, key)
		}
	})
}

func asciiUpper(r rune) rune {
	if 'a' <= r && r <= 'z' {
		return r - 'a' + 'A'
	}
	return r
}

// FuzzNormalizeEmail feeds arbitrary registration and login addresses to the field check.
// Properties: an accepted address is the input trimmed, at most maxEmailBytes, has a key, and
// is accepted again unchanged (idempotent); a refusal is an *InputError for field "email".
func FuzzNormalizeEmail(f *testing.F) {
	for _, seed := range []string{
		"alice@example.com", " Alice@Example.com ", "Alice <alice@example.com>", "a@b", "a(c)@b.c",
		"\"quoted\"@example.com", "a@bücher.example", strings.Repeat("a", 250) + "@b.c", "a@b.c\r\n",
		"a@[127.0.0.1]", "a.@b.c", "a@b..c",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, email string) {
		got, err := normalizeEmail(email)
		if err != nil {
			ie, ok := err.(*InputError)
			if !ok || ie.Field != "email" {
				t.Fatalf("normalizeEmail(%q) error %T %v, want an *InputError for email", email, err, err)
			}
			return
		}
		if got != strings.TrimSpace(email) || len(got) > maxEmailBytes {
			t.Fatalf("normalizeEmail(%q) = %q: not the trimmed input within %d bytes", email, got, maxEmailBytes)
		}
		if again, err := normalizeEmail(got); err != nil || again != got {
			t.Fatalf("normalizeEmail not idempotent: %q -> %q -> %q, %v", email, got, again, err)
		}
		if _, err := EmailKey(got); err != nil {
			t.Fatalf("normalizeEmail accepted %q, which has no key: %v", got, err)
		}
	})
}

// FuzzClientIP feeds arbitrary peers, X-Forwarded-For headers and trusted-proxy lists to
// ClientIP, which the rate limits and the audit trail key on. Properties: an untrusted peer
// is the client whatever the header says; the answer is the peer or an entry of the header,
// unmapped and without a zone; and, the property that keeps a client from choosing its
// address, entries a client prepends to the header never change an answer that lies
// outside the trusted proxies.
func FuzzClientIP(f *testing.F) {
	for _, seed := range []struct{ remote, xff, trusted, prepend string }{
		{"10.0.0.1:1234", "203.0.113.7", "10.0.0.0/8", "1.1.1.1"},
		{"10.0.0.1:1234", "203.0.113.7, 10.0.0.2", "10.0.0.0/8", "1.1.1.1,"},
		{"192.0.2.1:80", "203.0.113.7", "10.0.0.0/8", ""},
		{"[::ffff:10.0.0.1]:80", "[2001:db8::1]:443", "10.0.0.0/8", "x"},
		{"[fe80::1%eth0]:80", "fe80::2%eth1", "fe80::/10", "fe80::3"},
		{"10.0.0.1:1", "garbage, 10.0.0.3", "10.0.0.0/8", ""},
		{"10.0.0.1:1", "10.0.0.2,10.0.0.3", "10.0.0.0/8", "198.51.100.1"},
		{"@unix", "1.2.3.4", "0.0.0.0/0", ""},
		{"10.0.0.1:1", "", "10.0.0.1", ""},
	} {
		f.Add(seed.remote, seed.xff, seed.trusted, seed.prepend)
	}
	f.Fuzz(func(t *testing.T, remote, xff, trustedList, prepend string) {
		trusted, err := ParseTrustedProxies(trustedList)
		if err != nil {
			return
		}
		r := &http.Request{RemoteAddr: remote, Header: http.Header{"X-Forwarded-For": {xff}}}
		got := ClientIP(r, trusted)
		peer, peerOK := parseHostAddr(remote)
		if !peerOK {
			if got.IsValid() {
				t.Fatalf("ClientIP with peer %q (not an address) = %v, want the zero Addr", remote, got)
			}
			return
		}
		if got.Zone() != "" || got.Is4In6() {
			t.Fatalf("ClientIP = %v: mapped or zoned", got)
		}
		if !inPrefixes(peer, trusted) && got != peer {
			t.Fatalf("ClientIP with untrusted peer %q and X-Forwarded-For %q = %v, want the peer", remote, xff, got)
		}
		fromHeader := got == peer
		for _, hop := range forwardedFor(r.Header) {
			if a, ok := parseHostAddr(hop); ok && a == got {
				fromHeader = true
			}
		}
		if !fromHeader {
			t.Fatalf("ClientIP(peer %q, X-Forwarded-For %q) = %v: neither the peer nor an entry", remote, xff, got)
		}
		if inPrefixes(got, trusted) {
			return
		}
		spoofed := &http.Request{RemoteAddr: remote, Header: http.Header{"X-Forwarded-For": {prepend + "," + xff}}}
		if again := ClientIP(spoofed, trusted); again != got {
			t.Fatalf("prepending %q to X-Forwarded-For %q moved the client from %v to %v", prepend, xff, got, again)
		}
	})
}

// FuzzParseTrustedProxies feeds arbitrary --trusted-proxies lists to their parser.
// Properties: every accepted prefix is masked and unmapped; the list re-encoded from the
// prefixes parses back to the same prefixes; an accepted bare address is inside its prefix.
func FuzzParseTrustedProxies(f *testing.F) {
	for _, seed := range []string{
		"10.0.0.0/8, 192.168.0.1", "fd00::/8 ::1", "::ffff:10.0.0.0/104", "::ffff:10.0.0.0/95",
		"10.1.2.3/8", "fe80::1%eth0", "1.2.3.4/33", "", " , ,", "10.0.0.0/08", "::ffff:1.2.3.4",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, list string) {
		prefixes, err := ParseTrustedProxies(list)
		if err != nil {
			return
		}
		encoded := make([]string, len(prefixes))
		for i, p := range prefixes {
			if p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
				t.Fatalf("ParseTrustedProxies(%q): prefix %v is not masked, or is mapped or zoned", list, p)
			}
			encoded[i] = p.String()
		}
		again, err := ParseTrustedProxies(strings.Join(encoded, ","))
		if err != nil || len(again) != len(prefixes) {
			t.Fatalf("re-encoded %q: %v, %v", encoded, again, err)
		}
		for i := range again {
			if again[i] != prefixes[i] {
				t.Fatalf("re-encoded %q parses to %v, want %v", encoded, again, prefixes)
			}
		}
		for _, entry := range strings.FieldsFunc(list, func(r rune) bool { return strings.ContainsRune(", \t\n\r", r) }) {
			if a, err := netip.ParseAddr(entry); err == nil && !inPrefixes(a.Unmap().WithZone(""), prefixes) {
				t.Fatalf("ParseTrustedProxies(%q) does not contain its entry %q", list, entry)
			}
		}
	})
}

// FuzzSessionCookie feeds arbitrary Cookie headers and session tokens to the signed
// session cookies. Properties: any token encodes into a value that verifies back to that
// token under its own cookie's name and never under the other session kind's; a header the
// codec did not sign never yields a token (a quoted value, as in the seed corpus, verifies
// like the bare one).
func FuzzSessionCookie(f *testing.F) {
	secret := []byte("fuzz session cookie secret, 32 bytes+")
	public, err := newCookieCodec(secret, SessionPublic, time.Hour, "/")
	if err != nil {
		f.Fatal(err)
	}
	admin, err := newCookieCodec(secret, SessionAdmin, time.Hour, "/")
	if err != nil {
		f.Fatal(err)
	}
	signed, err := public.encode("seed-session-token")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct{ header, token string }{
		{CookiePublic + "=" + signed, "t"},
		{CookieAdmin + "=" + signed, "t"},
		{CookiePublic + "=" + signed[:len(signed)-2] + "AA", "t"},
		{CookiePublic + "=; " + CookiePublic + "=" + signed, ""},
		{CookiePublic + `="` + signed + `"`, "\x00"},
		{CookiePublic + "=MTAw|x|y", strings.Repeat("long", 2000)},
		{"a=b; c", "ünïcode"},
	} {
		f.Add(seed.header, seed.token)
	}
	f.Fuzz(func(t *testing.T, header, token string) {
		r := &http.Request{Header: http.Header{"Cookie": {header}}}
		// The only value ever signed outside this function is the seeds' public cookie of
		// "seed-session-token" (signed again, at another second, by each run).
		if got, ok := public.token(r); ok && got != "seed-session-token" {
			t.Fatalf("header %q, never signed, verified as %q", header, got)
		}
		if got, ok := admin.token(r); ok {
			t.Fatalf("header %q verified as an admin session %q", header, got)
		}
		if token == "" {
			return
		}
		value, err := public.encode(token)
		if err != nil {
			return // securecookie refuses values over its length limit
		}
		for name, c := range map[string]cookieCodec{CookiePublic: public, CookieAdmin: admin} {
			r := &http.Request{Header: http.Header{"Cookie": {name + "=" + value}}}
			got, ok := c.token(r)
			if c.name == CookiePublic && (!ok || got != token) {
				t.Fatalf("public cookie of %q verifies as %q, %v", token, got, ok)
			}
			if c.name == CookieAdmin && ok {
				t.Fatalf("public cookie of %q verified as an admin session %q", token, got)
			}
		}
	})
}

// FuzzMagicLinkOrigin feeds arbitrary redirect_uri values to the comparison with
// Config.MagicLinkAllowedOrigins that lets a magic link lead to an allowed origin. Property:
// an accepted URI is the allowed origin (scheme and host case aside) followed by nothing or by
// a path, query or fragment: no URI that a browser would send to another scheme, host or
// port passes.
func FuzzMagicLinkOrigin(f *testing.F) {
	const allowed = "https://app.example:8443"
	for _, seed := range []string{
		"https://app.example:8443/welcome", "HTTPS://APP.example:8443", "https://app.example:8443@evil.net/",
		"https://evil.net\\@app.example:8443/", "https://app.example:8443\\.evil.net/", "https://app.example:8443#x",
		"https://app.example:08443/", "https://app.example.:8443/", "https://%61pp.example:8443/", "//app.example:8443/",
		"https://app.example:8443?x", "https://[::1]:8443/", "https://app.example:8443\t/",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		origin, ok := originOf(uri)
		if !ok || origin != allowed {
			return
		}
		if len(uri) < len(allowed) || !strings.EqualFold(uri[:len(allowed)], allowed) {
			t.Fatalf("originOf(%q) = %q, but the URI does not begin with it", uri, origin)
		}
		if rest := uri[len(allowed):]; rest != "" && !strings.ContainsRune("/?#", rune(rest[0])) {
			t.Fatalf("originOf(%q) = %q, but the authority goes on with %q", uri, origin, rest)
		}
		u, err := url.Parse(uri)
		if err != nil || u.Port() != "8443" || !strings.EqualFold(u.Hostname(), "app.example") {
			t.Fatalf("originOf(%q) = %q, but it parses to host %q", uri, origin, u.Host)
		}
	})
}
