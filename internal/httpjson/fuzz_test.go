package httpjson

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fuzzBody is a request struct with the field types the API routes use.
type fuzzBody struct {
	Email   string             `json:"email"`
	Count   int                `json:"count"`
	Flag    *bool              `json:"flag"`
	Scopes  []string           `json:"scopes"`
	Labels  map[string]string  `json:"labels"`
	Nested  struct{ At int64 } `json:"nested"`
	Decimal float64            `json:"decimal"`
}

// fuzzBodyFields are fuzzBody's JSON names; encoding/json matches them case-insensitively.
var fuzzBodyFields = []string{"email", "count", "flag", "scopes", "labels", "nested", "decimal"}

// memberNames lists the names of every object member of the JSON text body, nested ones
// included, as encoding/json reads them.
func memberNames(body string) []string {
	var v any
	_ = json.Unmarshal([]byte(strings.TrimSpace(body)), &v)
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for name, member := range v {
				names = append(names, name)
				walk(member)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return names
}

// fieldErr is what fieldError makes of a field of the wrong type in this test.
type fieldErr struct{ field, reason string }

func (e *fieldErr) Error() string { return e.field + " " + e.reason }

const fuzzMaxBytes = 1 << 10

// FuzzDecode feeds arbitrary bodies and Content-Types to the one JSON decoder of the API
// routes (publicauth, permissions, admin). Properties: it never panics; every refusal is a
// *RequestError with a 4xx status (415 for the media type, 413 over the limit, else 400) or
// the field error, naming a field; an accepted body is declared application/json, within
// the limit, one JSON object with no member fuzzBody lacks, and decodes with encoding/json
// to the same value; a refused unknown member is named in the message.
func FuzzDecode(f *testing.F) {
	for _, seed := range []struct{ ct, body string }{
		{"application/json", `{"email":"a@b.c","count":3}`},
		{"application/json; charset=utf-8", `{"scopes":["a"],"labels":{"k":"v"}}`},
		{"application/json", `{"count":"3"}`},
		{"application/json", `{"nested":{"At":"x"}}`},
		{"application/json", `{} {}`},
		{"application/json", `[]`},
		{"application/json", `"x"`},
		{"application/json", ` `},
		{"application/json", `{"a":` + strings.Repeat("[", 2000)},
		{"text/plain", `{}`},
		{"application/json;;", `{}`},
		{"application/json", `{"count":1e400}`},
		{"application/json", "{\"email\":\"\xff\"}"},
		{"application/json", `{"flag":null,"count":null}`},
		{"application/json", `{"emails":"a@b.c"}`},
		{"application/json", `{"nested":{"At":1,"Of":2}}`},
	} {
		f.Add(seed.ct, seed.body)
	}
	f.Fuzz(func(t *testing.T, contentType, body string) {
		r := httptest.NewRequest(http.MethodPost, "/api/public/login", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		var got fuzzBody
		err := Decode(httptest.NewRecorder(), r, &got, fuzzMaxBytes, func(field, reason string) error {
			return &fieldErr{field, reason}
		})
		var reqErr *RequestError
		var fe *fieldErr
		switch {
		case errors.As(err, &reqErr):
			if reqErr.Status < 400 || reqErr.Status > 499 || reqErr.Message == "" {
				t.Fatalf("Decode(%q, %q): status %d message %q, want a 4xx with a message", contentType, body, reqErr.Status, reqErr.Message)
			}
			if quoted, ok := strings.CutPrefix(reqErr.Message, "unknown field "); ok {
				name, err := strconv.Unquote(quoted)
				if err != nil || !slices.Contains(memberNames(body), name) {
					t.Fatalf("Decode(%q): %q names no member of the body", body, reqErr.Message)
				}
			}
			if reqErr.Status == http.StatusRequestEntityTooLarge && len(body) <= fuzzMaxBytes {
				t.Fatalf("Decode(%q): 413 for %d bytes", body, len(body))
			}
			return
		case errors.As(err, &fe):
			if fe.field == "" || !strings.HasPrefix(fe.reason, "must be a JSON ") {
				t.Fatalf("Decode(%q): field error %+v", body, fe)
			}
			return
		case err != nil:
			t.Fatalf("Decode(%q): error %T %v is neither a *RequestError nor the field error", body, err, err)
		}
		if len(body) > fuzzMaxBytes {
			t.Fatalf("Decode accepted %d bytes over the limit %d", len(body), fuzzMaxBytes)
		}
		trimmed := strings.TrimSpace(body)
		if !json.Valid([]byte(trimmed)) || !strings.HasPrefix(trimmed, "{") {
			t.Fatalf("Decode accepted %q, which is not one JSON object", body)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal([]byte(trimmed), &members); err != nil {
			t.Fatalf("Decode accepted %q, which is not one JSON object: %v", body, err)
		}
		for name := range members {
			if !slices.ContainsFunc(fuzzBodyFields, func(f string) bool { return strings.EqualFold(f, name) }) {
				t.Fatalf("Decode accepted %q with the unknown member %q", body, name)
			}
		}
		var want fuzzBody
		if err := json.Unmarshal([]byte(trimmed), &want); err != nil {
			t.Fatalf("Decode accepted %q, json.Unmarshal refuses it: %v", body, err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Fatalf("Decode(%q) = %s, json.Unmarshal = %s", body, a, b)
		}
	})
}
