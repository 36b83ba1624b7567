package publicauth

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	_ "embed" // the breached-password list
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/gatehouse-id/gatehouse/internal/argon2id"
)

// argon2Params are the cost parameters of one argon2id hash (RFC 9106 §3.1).
type argon2Params struct {
	memory  uint32 // KiB
	time    uint32 // passes
	threads uint8
}

// defaultArgon2 returns the parameters new password hashes are made with.
func defaultArgon2() argon2Params {
	return argon2Params{memory: argon2Memory, time: argon2Time, threads: argon2Threads}
}

// Parameters for new password hashes: 7 MiB, 5 passes, 1 lane, one of the equivalent
// argon2id sets of the OWASP Password Storage Cheat Sheet (19 MiB t=2, 12 MiB t=3, 9 MiB
// t=4, 7 MiB t=5), a 16-byte salt and a 32-byte key. Of those sets, measured with
// golang.org/x/crypto/argon2 (README, "Deliberately plain dependencies"), this one costs
// the least CPU a login (x/crypto allocates the memory afresh for every hash, and faulting
// it in costs about as much as filling it), holds the least memory per concurrent hash and
// leaves the least garbage. Stored hashes carry their own parameters, so the 19 MiB, t=2
// hashes of earlier versions still verify, and changing these later keeps every hash
// verifiable.
const (
	argon2Memory  = 7168 // KiB
	argon2Time    = 5
	argon2Threads = 1
	argon2SaltLen = 16
	argon2KeyLen  = 32

	// Upper bounds accepted when parsing a stored hash, so a corrupted or hostile row cannot
	// make one verification allocate gigabytes or spin for minutes.
	argon2MaxMemory = 1 << 20 // KiB (1 GiB)
	argon2MaxTime   = 64
	argon2MinKeyLen = 16
	argon2MaxKeyLen = 128
)

// dummyPasswordHash is verified against when a login names no usable account (unknown email,
// social-only account), so that answer costs one argon2id verification like a wrong password
// does. It must carry defaultArgon2()'s parameters; a test pins that.
const dummyPasswordHash = "$argon2id$v=19$m=7168,t=5,p=1$Z2F0ZWhvdXNlLWR1bW15IQ$sNMgKOaLeWmv+tikzTday2rVsRB1ISEBrkBSY5Ww3yM"

// Password rules (NIST SP 800-63B §5.1.1.2): at least 8 characters, long passphrases allowed
// (the byte cap is far above the 64 characters NIST says must be accepted, even at 4 bytes a
// character, and only bounds the work one request can ask for), no composition rules, and no
// password found in breach corpora, a single repeated character, or the account's email.
const (
	minPasswordChars = 8
	maxPasswordBytes = 1024
)

// Reasons of the *InputError for a password the rule refuses; the JSON API answers
// "password <reason>".
const (
	reasonPasswordBreached = "is too common: it appears in lists of breached passwords"
	reasonPasswordRepeated = "must not be one character repeated"
	reasonPasswordIsEmail  = "must not be or contain your email address"
)

// errMalformedHash reports a stored password hash that is not an argon2id PHC string this
// package can verify.
var errMalformedHash = errors.New("malformed argon2id password hash")

// checkPassword reports whether pw may be set as a password. It returns an *InputError for
// field "password" saying which rule pw breaks, or nil. An error of another type means the
// embedded breached-password list could not be read (a broken build), never a user mistake.
func checkPassword(pw string) error {
	switch {
	case pw == "":
		return &InputError{Field: "password", Reason: "is required"}
	case !utf8.ValidString(pw):
		return &InputError{Field: "password", Reason: "must be valid UTF-8"}
	case utf8.RuneCountInString(pw) < minPasswordChars:
		return &InputError{Field: "password", Reason: fmt.Sprintf("must be at least %d characters", minPasswordChars)}
	case len(pw) > maxPasswordBytes:
		return &InputError{Field: "password", Reason: fmt.Sprintf("must be at most %d bytes", maxPasswordBytes)}
	case oneRuneRepeated(pw):
		return &InputError{Field: "password", Reason: reasonPasswordRepeated}
	}
	breached, err := breachedPasswords()
	if err != nil {
		return err
	}
	if _, found := breached[strings.ToLower(pw)]; found {
		return &InputError{Field: "password", Reason: reasonPasswordBreached}
	}
	return nil
}

// checkAccountPassword is checkPassword for the account with address email: it also refuses
// a password that contains the address or equals its local part (NIST SP 800-63B §5.1.1.2
// "context-specific words"), compared case-insensitively.
func checkAccountPassword(pw, email string) error {
	if err := checkPassword(pw); err != nil {
		return err
	}
	lpw, lemail := strings.ToLower(pw), strings.ToLower(email)
	local, _, _ := strings.Cut(lemail, "@")
	if lemail != "" && (strings.Contains(lpw, lemail) || lpw == local) {
		return &InputError{Field: "password", Reason: reasonPasswordIsEmail}
	}
	return nil
}

// oneRuneRepeated reports whether pw is a single character repeated ("aaaaaaaa").
func oneRuneRepeated(pw string) bool {
	first, _ := utf8.DecodeRuneInString(pw)
	return strings.Trim(pw, string(first)) == ""
}

// breachedPasswordsGz is the list of breached passwords the rule refuses: lower-case, one a
// line, gzip-compressed. breached/README.md says where it comes from and how to regenerate
// it.
//
//go:generate go run breached/generate.go -in=$GATEHOUSE_PASSWORD_LIST -out breached/passwords.txt.gz
//go:embed breached/passwords.txt.gz
var breachedPasswordsGz []byte

// breachedPasswords returns the embedded list as a set, decompressed on first use (about
// 100,000 entries, a few MB) and shared, read-only, by every Service in the process: it is
// an immutable table built lazily, not state.
var breachedPasswords = sync.OnceValues(func() (map[string]struct{}, error) {
	zr, err := gzip.NewReader(bytes.NewReader(breachedPasswordsGz))
	if err != nil {
		return nil, fmt.Errorf("publicauth: read breached-password list: %w", err)
	}
	set := make(map[string]struct{}, 100000)
	lines := bufio.NewScanner(zr)
	for lines.Scan() {
		set[lines.Text()] = struct{}{}
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("publicauth: read breached-password list: %w", err)
	}
	return set, nil
})

// hashPassword derives an argon2id hash of pw under p with a fresh salt read from random,
// computed by kdf (nil: x/crypto), and returns it as a PHC string:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key>, salt and key in unpadded
// standard base64.
func hashPassword(kdf *argon2id.Engine, pw string, p argon2Params, random io.Reader) (string, error) {
	salt := make([]byte, argon2SaltLen)
	if _, err := io.ReadFull(random, salt); err != nil {
		return "", fmt.Errorf("read password salt: %w", err)
	}
	key := kdf.Key([]byte(pw), salt, p.time, p.memory, p.threads, argon2KeyLen)
	return encodePHC(p, salt, key), nil
}

func encodePHC(p argon2Params, salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.memory, p.time, p.threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// verifyPassword reports whether pw matches the PHC string encoded, using the parameters
// stored in it, kdf to derive (nil: x/crypto) and a constant-time comparison. A hash it
// cannot parse yields errMalformedHash.
func verifyPassword(kdf *argon2id.Engine, pw, encoded string) (bool, error) {
	p, salt, key, err := decodePHC(encoded)
	if err != nil {
		return false, err
	}
	got := kdf.Key([]byte(pw), salt, p.time, p.memory, p.threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// decodePHC parses an argon2id PHC string and checks its parameters against the bounds above.
func decodePHC(encoded string) (argon2Params, []byte, []byte, error) {
	var p argon2Params
	parts := strings.Split(encoded, "$")
	// "", "argon2id", "v=19", "m=…,t=…,p=…", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, errMalformedHash
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, fmt.Errorf("%w: unsupported version %q", errMalformedHash, parts[2])
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(parts[3], ",") {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || seen[name] {
			return p, nil, nil, fmt.Errorf("%w: bad parameter %q", errMalformedHash, kv)
		}
		seen[name] = true
		n, err := strconv.ParseUint(value, 10, 32)
		if err != nil {
			return p, nil, nil, fmt.Errorf("%w: bad parameter %q", errMalformedHash, kv)
		}
		switch name {
		case "m":
			p.memory = uint32(n)
		case "t":
			p.time = uint32(n)
		case "p":
			if n > 255 {
				return p, nil, nil, fmt.Errorf("%w: bad parameter %q", errMalformedHash, kv)
			}
			p.threads = uint8(n)
		default:
			return p, nil, nil, fmt.Errorf("%w: unknown parameter %q", errMalformedHash, kv)
		}
	}
	if !seen["m"] || !seen["t"] || !seen["p"] {
		return p, nil, nil, fmt.Errorf("%w: missing parameter", errMalformedHash)
	}
	// RFC 9106 §3.1: at least 8 KiB per lane, at least one pass and one lane.
	if p.threads == 0 || p.time == 0 || p.time > argon2MaxTime ||
		p.memory < 8*uint32(p.threads) || p.memory > argon2MaxMemory {
		return p, nil, nil, fmt.Errorf("%w: parameters out of range", errMalformedHash)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return p, nil, nil, fmt.Errorf("%w: bad salt", errMalformedHash)
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < argon2MinKeyLen || len(key) > argon2MaxKeyLen {
		return p, nil, nil, fmt.Errorf("%w: bad key", errMalformedHash)
	}
	return p, salt, key, nil
}
