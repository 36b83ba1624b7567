package dpop

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"
)

// NormalizeURI is raw as a proof's htu is compared (RFC 9449 §4.3 step 9): an absolute
// http(s) URI without its query and fragment, after syntax-based and scheme-based
// normalisation (RFC 3986 §6.2.2, §6.2.3): scheme and host in lower case, the scheme's
// default port dropped, an empty path made "/", percent-encodings in upper case with the
// unreserved characters decoded, and dot segments removed. A URI with user information is
// refused: no request is addressed that way.
func NormalizeURI(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", errors.New("not an http(s) URI")
	}
	// Hostname, not Host: "http://:" has a Host (":") but no host.
	if u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return "", errors.New("not an absolute URI with a host and no user information")
	}
	// strings.ToLower turns each byte of invalid UTF-8 into U+FFFD, which would make the
	// result another host, and one whose escaped zone does not parse back (found by
	// FuzzNormalizeURI: "http://[::%25\x80]").
	if !utf8.ValidString(u.Hostname()) {
		return "", errors.New("host is not valid UTF-8")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	// url.URL escapes the host again: url.Parse unescaped it, and a "%" left bare (an IPv6
	// zone, a percent-encoded name) would make the result no URI at all.
	origin := (&url.URL{Scheme: scheme, Host: host}).String()
	path, err := normalizeEscapes(u.EscapedPath())
	if err != nil {
		return "", err
	}
	path = removeDotSegments(path)
	if path == "" {
		path = "/"
	}
	return origin + path, nil
}

// normalizeEscapes writes every percent-encoding of p in upper case and decodes those of
// unreserved characters (RFC 3986 §6.2.2.1, §6.2.2.2).
func normalizeEscapes(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			b.WriteByte(p[i])
			continue
		}
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return "", errors.New("bad percent-encoding")
		}
		c := unhex(p[i+1])<<4 | unhex(p[i+2])
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(p[i+1:i+3]))
		}
		i += 2
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// removeDotSegments is RFC 3986 §5.2.4.
func removeDotSegments(in string) string {
	var out []string // output segments, each with its leading "/"
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "/..":
			in = "/"
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "." || in == "..":
			in = ""
		default:
			j := strings.IndexByte(in[1:], '/')
			if j < 0 {
				out = append(out, in)
				in = ""
			} else {
				out = append(out, in[:j+1])
				in = in[j+1:]
			}
		}
	}
	return strings.Join(out, "")
}
