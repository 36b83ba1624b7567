package permissions

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBodies feeds arbitrary bodies to the decoding of both request structs of the
// permissions API (the PUT routes' {status, role}, request-access's {email, name}) and
// Describe, the one error-to-HTTP table. Properties: a refusal maps to a 4xx with a message,
// never to the 500 of an unexpected error; an accepted body is one JSON object.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"status":"approved","role":"admin"}`, `{"status":1}`, `{"role":null}`, `{"email":["x"]}`,
		`{"name":{"a":1}}`, `{}`, `[]`, `{"status":"approved"}{}`, ``, `{"status":"\ud800"}`,
		`{"status":"` + strings.Repeat("a", 20000) + `"}`,
	} {
		f.Add(seed, "application/json", false)
		f.Add(seed, "application/json", true)
	}
	f.Add(`{}`, "text/plain", false)
	f.Fuzz(func(t *testing.T, body, contentType string, access bool) {
		r := httptest.NewRequest(http.MethodPut, "/api/users/u/apps/c", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		var err error
		if access {
			err = readJSON(httptest.NewRecorder(), r, &accessRequest{})
		} else {
			var req putRequest
			if err = readJSON(httptest.NewRecorder(), r, &req); err == nil && validStatus(req.Status) && validRole(req.Role) {
				if !strings.Contains(body, req.Status) || !strings.Contains(body, req.Role) {
					t.Fatalf("readJSON(%q) = %+v, not in the body", body, req)
				}
			}
		}
		if err == nil {
			if trimmed := strings.TrimSpace(body); !strings.HasPrefix(trimmed, "{") {
				t.Fatalf("readJSON accepted %q", body)
			}
			return
		}
		status, message := Describe(err)
		if status < 400 || status > 499 || message == "" {
			t.Fatalf("readJSON(%q, %q): %v described as %d %q", body, contentType, err, status, message)
		}
	})
}

// FuzzCursor feeds arbitrary ?cursor= values to the decoder of the listings' opaque
// cursors. Properties: a refusal is an *InputError for field "cursor" (a 400); an accepted
// cursor re-encodes to a cursor that decodes to the same position.
func FuzzCursor(f *testing.F) {
	for _, seed := range []string{
		"", "eyJ0IjoiMjAyNi0wMS0wMlQwMzowNDowNVoiLCJrIjoidSJ9", "eyJ0IjoiMDAwMS0wMS0wMVQwMDowMDowMFoiLCJrIjoidSJ9",
		"eyJ0IjoiMjAyNi0wMS0wMlQwMzowNDowNSswOTowMCIsImsiOiJ1In0", "e30", "!!!", "eyJ0IjoxfQ",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Field != "cursor" {
				t.Fatalf("decodeCursor(%q): %T %v", s, err, err)
			}
			if status, _ := Describe(err); status != http.StatusBadRequest {
				t.Fatalf("decodeCursor(%q): described as %d", s, status)
			}
			return
		}
		if s == "" {
			return
		}
		again, err := decodeCursor(encodeCursor(c))
		if err != nil || !again.At.Equal(c.At) || again.Key != c.Key {
			t.Fatalf("cursor %q = %+v re-encodes to %+v, %v", s, c, again, err)
		}
	})
}
