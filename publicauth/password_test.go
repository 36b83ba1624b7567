package publicauth_test

import (
	"crypto/rand"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

func TestHashPasswordWritesPHCStringThatVerifies(t *testing.T) {
	m, tm, p := publicauth.DefaultPasswordParams()
	hash, err := publicauth.HashPassword("correct horse battery", m, tm, p, rand.Reader)
	if err != nil {
		t.Fatalf("HashPassword: %v", err)
	}
	phc := regexp.MustCompile(`^\$argon2id\$v=19\$m=7168,t=5,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !phc.MatchString(hash) {
		t.Errorf("hash = %q, want an argon2id PHC string with m=7168,t=5,p=1, 16-byte salt, 32-byte key", hash)
	}
	for _, tc := range []struct {
		name string
		pw   string
		want bool
	}{
		{"same password matches", "correct horse battery", true},
		{"other password does not match", "correct horse battery!", false},
		{"empty password does not match", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := publicauth.VerifyPassword(tc.pw, hash)
			if err != nil {
				t.Fatalf("VerifyPassword: %v", err)
			}
			if got != tc.want {
				t.Errorf("VerifyPassword(%q) = %v, want %v", tc.pw, got, tc.want)
			}
		})
	}
}

func TestHashPasswordUsesFreshSalt(t *testing.T) {
	m, tm, p := publicauth.DefaultPasswordParams()
	a, err := publicauth.HashPassword("same password", m, tm, p, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := publicauth.HashPassword("same password", m, tm, p, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("two hashes of one password are equal (%q), want different salts", a)
	}
}

func TestVerifyPasswordReadsParametersFromStoredHash(t *testing.T) {
	t.Run("hash made with other parameters verifies", func(t *testing.T) {
		hash, err := publicauth.HashPassword("an older password", 8192, 1, 2, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(hash, "$m=8192,t=1,p=2$") {
			t.Fatalf("hash = %q, want parameters m=8192,t=1,p=2", hash)
		}
		ok, err := publicauth.VerifyPassword("an older password", hash)
		if err != nil || !ok {
			t.Errorf("VerifyPassword = %v, %v; want true, nil", ok, err)
		}
	})
	t.Run("hash of the earlier default (19 MiB, 2 passes) verifies", func(t *testing.T) {
		// Made by golang.org/x/crypto/argon2 with the parameters new hashes had before the
		// default became 7 MiB, 5 passes: stored passwords keep working.
		const earlier = "$argon2id$v=19$m=19456,t=2,p=1$ZWFybGllci1kZWZhdWx0IQ$IyWd+gUN4ow0cYBU5DE6ynNbUO8w2JkC4ldjLSRoKH8"
		if ok, err := publicauth.VerifyPassword("correct horse battery staple", earlier); err != nil || !ok {
			t.Errorf("VerifyPassword = %v, %v; want true, nil", ok, err)
		}
		if ok, err := publicauth.VerifyPassword("correct horse battery stapler", earlier); err != nil || ok {
			t.Errorf("VerifyPassword(wrong password) = %v, %v; want false, nil", ok, err)
		}
	})
	t.Run("reference implementation vector verifies", func(t *testing.T) {
		// From the argon2 reference implementation's test suite (argon2id, v=19, 64 MiB,
		// 2 passes, 1 lane, salt "somesalt", 32-byte tag).
		const ref = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
		ok, err := publicauth.VerifyPassword("password", ref)
		if err != nil || !ok {
			t.Errorf("VerifyPassword(reference) = %v, %v; want true, nil", ok, err)
		}
		ok, err = publicauth.VerifyPassword("Password", ref)
		if err != nil || ok {
			t.Errorf("VerifyPassword(reference, wrong password) = %v, %v; want false, nil", ok, err)
		}
	})
}

func TestVerifyPasswordRefusesMalformedHash(t *testing.T) {
	const salt, key = "c29tZXNhbHQ", "CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
	for _, tc := range []struct{ name, hash string }{
		{"empty", ""},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
		{"argon2i", "$argon2i$v=19$m=65536,t=2,p=1$" + salt + "$" + key},
		{"old version", "$argon2id$v=16$m=65536,t=2,p=1$" + salt + "$" + key},
		{"missing parameter", "$argon2id$v=19$m=65536,t=2$" + salt + "$" + key},
		{"repeated parameter", "$argon2id$v=19$m=65536,t=2,t=2,p=1$" + salt + "$" + key},
		{"unknown parameter", "$argon2id$v=19$m=65536,t=2,p=1,x=1$" + salt + "$" + key},
		{"zero passes", "$argon2id$v=19$m=65536,t=0,p=1$" + salt + "$" + key},
		{"zero lanes", "$argon2id$v=19$m=65536,t=2,p=0$" + salt + "$" + key},
		{"memory above cap", "$argon2id$v=19$m=4194304,t=2,p=1$" + salt + "$" + key},
		{"memory below 8 KiB per lane", "$argon2id$v=19$m=8,t=2,p=2$" + salt + "$" + key},
		{"salt not base64", "$argon2id$v=19$m=65536,t=2,p=1$!!!$" + key},
		{"key too short", "$argon2id$v=19$m=65536,t=2,p=1$" + salt + "$AAAA"},
		{"too many fields", "$argon2id$v=19$m=65536,t=2,p=1$" + salt + "$" + key + "$x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := publicauth.VerifyPassword("password", tc.hash)
			if ok || !errors.Is(err, publicauth.ErrMalformedHash) {
				t.Errorf("VerifyPassword(%q) = %v, %v; want false, ErrMalformedHash", tc.hash, ok, err)
			}
		})
	}
}

func TestDummyPasswordHashCostsWhatANewHashCosts(t *testing.T) {
	m, tm, p, err := publicauth.PasswordHashParams(publicauth.DummyPasswordHash)
	if err != nil {
		t.Fatalf("dummy hash does not parse: %v", err)
	}
	wm, wt, wp := publicauth.DefaultPasswordParams()
	if m != wm || tm != wt || p != wp {
		t.Errorf("dummy hash params m=%d,t=%d,p=%d, want m=%d,t=%d,p=%d", m, tm, p, wm, wt, wp)
	}
}

func TestCheckPassword(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pw         string
		wantReason string // empty: accepted
	}{
		{"8 ASCII characters accepted", "k7#Vq2!m", ""},
		{"8 multi-byte characters accepted", "äöüßäöüß", ""},
		{"random strong password accepted", "Tq9$wL2v!Rz8#pX4", ""},
		{"64-character passphrase accepted", "correct horse battery staple, said the tortoise to the archer!!!", ""},
		{"1024 bytes accepted", strings.Repeat("xy", 512), ""},
		{"spaces kept and counted", "  a b c ", ""},
		{"no composition rule: lower-case words accepted", "plum kettle quarry", ""},
		{"empty refused", "", "is required"},
		{"7 characters refused", "k7#Vq2!", "must be at least 8 characters"},
		{"7 multi-byte characters refused", "äöüßäöü", "must be at least 8 characters"},
		{"1025 bytes refused", strings.Repeat("xy", 512) + "z", "must be at most 1024 bytes"},
		{"invalid UTF-8 refused", "abcdefgh\xff", "must be valid UTF-8"},
		{"breached password123 refused", "password123", "is too common: it appears in lists of breached passwords"},
		{"breached qwertyuiop refused", "qwertyuiop", "is too common: it appears in lists of breached passwords"},
		{"breached password compared case-insensitively", "QwertyUIOP", "is too common: it appears in lists of breached passwords"},
		{"breached 12345678 refused", "12345678", "is too common: it appears in lists of breached passwords"},
		{"one character repeated refused", "aaaaaaaaaaaa", "must not be one character repeated"},
		{"one multi-byte character repeated refused", "ßßßßßßßß", "must not be one character repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := publicauth.CheckPassword(tc.pw)
			if tc.wantReason == "" {
				if err != nil {
					t.Errorf("CheckPassword = %v, want nil", err)
				}
				return
			}
			var inErr *publicauth.InputError
			if !errors.As(err, &inErr) {
				t.Fatalf("CheckPassword = %v, want *InputError", err)
			}
			if inErr.Field != "password" || inErr.Reason != tc.wantReason {
				t.Errorf("CheckPassword = {%q, %q}, want {%q, %q}", inErr.Field, inErr.Reason, "password", tc.wantReason)
			}
		})
	}
}

func TestCheckAccountPassword(t *testing.T) {
	const email = "Alice.Liddell@example.com"
	for _, tc := range []struct {
		name       string
		pw         string
		wantReason string // empty: accepted
	}{
		{"unrelated password accepted", "plum kettle quarry", ""},
		{"password containing the local part and more accepted", "alice.liddell rides again", ""},
		{"the email refused", "alice.liddell@example.com", "must not be or contain your email address"},
		{"the email in another case inside the password refused", "1 ALICE.LIDDELL@EXAMPLE.COM 2", "must not be or contain your email address"},
		{"the local part refused", "Alice.Liddell", "must not be or contain your email address"},
		{"the general rule still applies", "password123", "is too common: it appears in lists of breached passwords"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := publicauth.CheckAccountPassword(tc.pw, email)
			if tc.wantReason == "" {
				if err != nil {
					t.Errorf("CheckAccountPassword = %v, want nil", err)
				}
				return
			}
			var inErr *publicauth.InputError
			if !errors.As(err, &inErr) {
				t.Fatalf("CheckAccountPassword = %v, want *InputError", err)
			}
			if inErr.Field != "password" || inErr.Reason != tc.wantReason {
				t.Errorf("CheckAccountPassword = {%q, %q}, want {%q, %q}", inErr.Field, inErr.Reason, "password", tc.wantReason)
			}
		})
	}
}

func TestBreachedPasswordListIsLargeAndNormalised(t *testing.T) {
	list := publicauth.BreachedPasswords(t)
	if n := len(list); n < 50000 || n > 150000 {
		t.Errorf("breached-password list has %d entries, want 50,000 to 150,000", n)
	}
	for pw := range list {
		if pw != strings.ToLower(pw) || utf8.RuneCountInString(pw) < 8 {
			t.Fatalf("list entry %q: want lower-case entries of at least 8 characters", pw)
		}
	}
}

// TestPasswordHashesAgreeAcrossBackends: a hash made by either backend verifies with the
// other, and a wrong password fails with both; so switching hashers, or a replica without
// the native fill, leaves every stored password usable.
func TestPasswordHashesAgreeAcrossBackends(t *testing.T) {
	backends := []string{publicauth.PasswordHasherNative, publicauth.PasswordHasherGo}
	for _, maker := range backends {
		for _, checker := range backends {
			t.Run(maker+" then "+checker, func(t *testing.T) {
				hash := publicauth.HashPasswordWith(t, maker, "tr0ub4dor&3 horse", rand.Reader)
				if ok, err := publicauth.VerifyPasswordWith(t, checker, "tr0ub4dor&3 horse", hash); !ok || err != nil {
					t.Errorf("right password = %v, %v; want true, nil", ok, err)
				}
				if ok, err := publicauth.VerifyPasswordWith(t, checker, "tr0ub4dor&3 horsE", hash); ok || err != nil {
					t.Errorf("wrong password = %v, %v; want false, nil", ok, err)
				}
			})
		}
	}
}
