package publicauth

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrInvalidEmail: an address EmailKey cannot turn into a key (not UTF-8, control
// characters, no '@', an empty local part, a domain that is not a valid IDNA domain name). EmailKey's errors wrap it with the reason.
var ErrInvalidEmail = errors.New("invalid email address")

// EmailKey returns the key under which addr is compared with other addresses: every
// lookup by email, the uniqueness of an account's email, the lockout key and the linking of
// an upstream identity to an account use it, and nothing else.
//
// Surrounding white space is trimmed (as the account's stored address is). ASCII letters
// are folded to lower case in the local part and the domain; no other character is, since
// Unicode case mapping makes distinct addresses equal (U+0130 "İ" lowers to "i", the Kelvin
// sign U+212A to "k"). The domain becomes its IDNA A-label (golang.org/x/net/idna, Lookup
// profile), so "bücher.example" and "xn--bcher-kva.example", which name one DNS domain,
// share a key, while "gmaİl.com" (xn--gmail-bgd.com) stays apart from "gmail.com". The
// local part is kept otherwise as it is, since its meaning belongs to the receiving server.
//
// An address that is not valid UTF-8, or has a control character, no '@', an empty local
// part, or a domain that fails the IDNA conversion or has an empty label
// yields an error wrapping ErrInvalidEmail.
func EmailKey(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return "", fmt.Errorf("%w: no @", ErrInvalidEmail)
	}
	local, domain := addr[:at], addr[at+1:]
	switch {
	case local == "":
		return "", fmt.Errorf("%w: empty local part", ErrInvalidEmail)
	case !utf8.ValidString(addr):
		// idna would turn an invalid byte of the domain into U+FFFD and accept it.
		return "", fmt.Errorf("%w: not valid UTF-8", ErrInvalidEmail)
	case strings.IndexFunc(addr, unicode.IsControl) >= 0:
		return "", fmt.Errorf("%w: control character", ErrInvalidEmail)
	}
	ascii, err := idna.Lookup.ToASCII(foldASCII(domain))
	if err != nil {
		return "", fmt.Errorf("%w: domain: %v", ErrInvalidEmail, err)
	}
	// The Lookup profile lets empty labels through ("", "a..b", a trailing dot), which
	// would give one domain several keys or none.
	for label := range strings.SplitSeq(ascii, ".") {
		if label == "" {
			return "", fmt.Errorf("%w: domain has an empty label", ErrInvalidEmail)
		}
	}
	return foldASCII(local) + "@" + ascii, nil
}

// foldASCII maps A–Z to a–z and leaves every other byte as it is (strings.ToLower would
// map non-ASCII letters too).
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// sameEmail reports whether a and b have one key; an address without a key equals none.
func sameEmail(a, b string) bool {
	ka, err := EmailKey(a)
	if err != nil {
		return false
	}
	kb, err := EmailKey(b)
	return err == nil && ka == kb
}
