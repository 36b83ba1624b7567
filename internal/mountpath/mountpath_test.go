package mountpath_test

import (
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/mountpath"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		issuer, want string
		ok           bool
	}{
		{"http://localhost:8080", "", true},
		{"http://localhost:8080/", "", true},
		{"https://acme.example/auth", "/auth", true},
		{"https://acme.example/auth/", "/auth", true},
		{"https://acme.example/company/sso-v2.1~x", "/company/sso-v2.1~x", true},
		{"https://acme.example/a%20b", "", false},
		{"https://acme.example/a b", "", false},
		{"https://acme.example/a/../b", "", false},
		{"https://acme.example/./a", "", false},
		{"https://acme.example//a", "", false},
		{"https://acme.example/a;b", "", false},
		{"https://acme.example/a%2fb", "", false},
		{"/auth", "", false},
		{"not a url\x7f", "", false},
	} {
		got, err := mountpath.Of(c.issuer)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Of(%q): got %q, %v; want %q, ok %v", c.issuer, got, err, c.want, c.ok)
		}
	}
}

func TestContains(t *testing.T) {
	for _, c := range []struct {
		name, mount, path string
		want              bool
	}{
		{"root: any path", "", "/signed-in", true},
		{"root: a path with a query", "", "/api/oauth/authorize/resume?request=x", true},
		{"root: dot segments stay on the origin", "", "/a/../b", true},
		{"root: protocol-relative URL", "", "//evil.example.net/", false},
		{"root: backslash host", "", `/\evil.example.net`, false},
		{"root: absolute URL", "", "https://evil.example.net/", false},
		{"root: relative path", "", "signed-in", false},
		{"root: control character", "", "/a\nb", false},
		{"mounted: a page inside", "/auth", "/auth/signed-in", true},
		{"mounted: resume inside", "/auth", "/auth/api/oauth/authorize/resume?request=a/../b", true},
		{"mounted: the root page", "/auth", "/signed-in", false},
		{"mounted: the mount path without its slash", "/auth", "/auth", false},
		{"mounted: a sibling that shares the prefix", "/auth", "/authx/signed-in", false},
		{"mounted: a sibling behind a query", "/auth", "/auth?x=/auth/", false},
		{"mounted: dot-dot out", "/auth", "/auth/../login", false},
		{"mounted: dot-dot at the end", "/auth", "/auth/x/..", false},
		{"mounted: single dot", "/auth", "/auth/./x", false},
		{"mounted: encoded dot-dot", "/auth", "/auth/%2e%2e/login", false},
		{"mounted: encoded dot-dot, upper case, mixed", "/auth", "/auth/.%2E/login", false},
		{"mounted: backslash dot-dot", "/auth", `/auth/..\login`, false},
		{"mounted: protocol-relative URL", "/auth", "//evil.example.net/auth/", false},
		{"mounted: backslash host", "/auth", `/\evil.example.net/auth/`, false},
		{"mounted: control character", "/auth", "/auth/a\tb", false},
		{"mounted: deeper mount path", "/a/b", "/a/b/login", true},
		{"mounted: deeper mount path, its parent", "/a/b", "/a/login", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mountpath.Contains(c.mount, c.path); got != c.want {
				t.Errorf("Contains(%q, %q): got %v, want %v", c.mount, c.path, got, c.want)
			}
		})
	}
}
