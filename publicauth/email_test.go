package publicauth_test

import (
	"errors"
	"testing"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

func TestEmailKey(t *testing.T) {
	cases := []struct {
		name string
		addr string
		want string // "" when the address must be refused
	}{
		{"ASCII letters fold in both parts", "Victim@GMail.COM", "victim@gmail.com"},
		{"surrounding white space is trimmed", "  victim@gmail.com\t", "victim@gmail.com"},
		{"dotless-i look-alike domain stays an IDN", "victim@gmaİl.com", "victim@xn--gmail-bgd.com"},
		{"A-label and U-label share a key", "victim@XN--GMAIL-BGD.com", "victim@xn--gmail-bgd.com"},
		{"IDN domain becomes its A-label", "anna@Bücher.example", "anna@xn--bcher-kva.example"},
		{"dotted capital I in the local part is kept", "vİctim@gmail.com", "vİctim@gmail.com"},
		{"Kelvin sign in the local part is kept", "\u212Aelvin@example.com", "\u212Aelvin@example.com"},
		{"Kelvin sign in the domain is the DNS name's k", "kelvin@\u212Aa.example", "kelvin@ka.example"},
		{"sharp s is not ss", "Straße@example.com", "straße@example.com"},
		{"sharp s in the domain stays an IDN", "anna@straße.de", "anna@xn--strae-oqa.de"},
		{"fullwidth letters in the local part are kept", "ｖｉｃｔｉｍ@gmail.com", "ｖｉｃｔｉｍ@gmail.com"},
		{"fullwidth domain is the DNS name it maps to", "victim@ｇｍａｉｌ.com", "victim@gmail.com"},
		{"quoted local part with @", `"a@b"@Example.com`, `"a@b"@example.com`},
		{"single-label domain", "root@LocalHost", "root@localhost"},

		{"empty", "", ""},
		{"no @", "victim.gmail.com", ""},
		{"empty local part", "@gmail.com", ""},
		{"empty domain", "victim@", ""},
		{"empty domain label", "victim@gmail..com", ""},
		{"trailing dot", "victim@gmail.com.", ""},
		{"domain literal", "victim@[127.0.0.1]", ""},
		{"underscore in the domain", "victim@g_mail.com", ""},
		{"invalid punycode", "victim@xn--zz.com", ""},
		{"label starting with a hyphen", "victim@-gmail.com", ""},
		{"NUL in the local part", "vic\x00tim@gmail.com", ""},
		{"newline inside", "victim@gmail.com\nBcc: x@y.z", ""},
		{"DEL in the local part", "vic\x7ftim@gmail.com", ""},
		{"C1 control in the local part", "vic\u0085tim@gmail.com", ""},
		{"local part not UTF-8", "vic\xfftim@gmail.com", ""},
		{"domain not UTF-8", "victim@gm\xffail.com", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := publicauth.EmailKey(c.addr)
			if c.want == "" {
				if !errors.Is(err, publicauth.ErrInvalidEmail) {
					t.Fatalf("EmailKey(%q) = %q, %v; want an error wrapping ErrInvalidEmail", c.addr, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("EmailKey(%q) = %q, %v; want %q", c.addr, got, err, c.want)
			}
			// A key is its own key: the lockout relies on it, and so does re-keying.
			if again, err := publicauth.EmailKey(got); err != nil || again != got {
				t.Errorf("EmailKey(%q) = %q, %v; want the key itself", got, again, err)
			}
		})
	}
}

// TestEmailKeyKeepsLookAlikesApart pins the takeover: distinct mailboxes that Unicode
// lower-casing made equal have distinct keys.
func TestEmailKeyKeepsLookAlikesApart(t *testing.T) {
	pairs := [][2]string{
		{"victim@gmail.com", "victim@gmaİl.com"},
		{"kim@example.com", "\u212Aim@example.com"},
		{"strasse@example.com", "straße@example.com"},
		{"victim@gmail.com", "ｖｉｃｔｉｍ@gmail.com"},
	}
	for _, p := range pairs {
		a, errA := publicauth.EmailKey(p[0])
		b, errB := publicauth.EmailKey(p[1])
		if errA != nil || errB != nil || a == b {
			t.Errorf("EmailKey(%q) = %q, %v and EmailKey(%q) = %q, %v; want two distinct keys", p[0], a, errA, p[1], b, errB)
		}
	}
}
