package httpjson

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
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

// fieldErr is what fieldError makes of a field of the wrong type in this test.
type fieldErr struct{ field, reason string }

func (e *fieldErr) Error() string { return e.field + " " + e.reason }

const fuzzMaxBytes = 1 << 10

// FuzzDecode feeds arbitrary bodies and Content-Types to the one JSON decoder of the API
// routes (publicauth, permissions, admin). Properties: it never panics; every refusal is a
// *RequestError with a 4xx status (415 for the media type, 413 over the limit, else 400) or
// the field error, naming a field; an accepted body is declared application/json, within
// the limit, one JSON object, and decodes with encoding/json to the same value.
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
