package httpjson_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// fieldError is what a domain package makes of a field of the wrong JSON type.
type fieldError struct{ field, reason string }

func (e *fieldError) Error() string { return e.field + " " + e.reason }

// server decodes each request body into a small struct with a 64-byte cap and answers with
// the fault in the ErrorBody shape, or 204.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dst struct {
			Name  string `json:"name"`
			Inner struct {
				Count int `json:"count"`
			} `json:"inner"`
		}
		err := httpjson.Decode(w, r, &dst, 64, func(field, reason string) error { return &fieldError{field, reason} })
		var reqErr *httpjson.RequestError
		var fieldErr *fieldError
		switch {
		case err == nil:
			w.WriteHeader(http.StatusNoContent)
		case errors.As(err, &reqErr):
			httpjson.WriteError(w, reqErr.Status, reqErr.Message)
		case errors.As(err, &fieldErr):
			httpjson.WriteError(w, http.StatusBadRequest, fieldErr.Error())
		default:
			t.Errorf("Decode returned %T %v", err, err)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDecode(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name, contentType, body string
		wantStatus              int
		wantBody                string
	}{
		{"an object", "application/json", `{"name":"a","inner":{"count":2}}`, 204, ""},
		{"an unknown field", "application/json", `{"name":"a","given_name":"b"}`, 400, `{"error":"Bad Request","message":"unknown field \"given_name\""}`},
		{"an unknown nested field", "application/json", `{"inner":{"count":2,"total":3}}`, 400, `{"error":"Bad Request","message":"unknown field \"total\""}`},
		{"with a charset", "application/json; charset=utf-8", ` {"name":"a"} `, 204, ""},
		{"text/plain", "text/plain", `{}`, 415, `{"error":"Unsupported Media Type","message":"Content-Type must be application/json"}`},
		{"too long", "application/json", `{"name":"` + strings.Repeat("x", 64) + `"}`, 413, `{"error":"Request Entity Too Large","message":"request body must be at most 64 bytes"}`},
		{"empty", "application/json", "  ", 400, `{"error":"Bad Request","message":"request body is empty"}`},
		{"broken", "application/json", `{"name":`, 400, `{"error":"Bad Request","message":"request body is not valid JSON"}`},
		{"trailing garbage", "application/json", `{} x`, 400, `{"error":"Bad Request","message":"request body is not valid JSON"}`},
		{"two objects", "application/json", `{} {}`, 400, `{"error":"Bad Request","message":"request body must hold a single JSON object"}`},
		{"an array", "application/json", `["a"]`, 400, `{"error":"Bad Request","message":"request body must be a JSON object"}`},
		{"null", "application/json", `null`, 400, `{"error":"Bad Request","message":"request body must be a JSON object"}`},
		{"a number for a string", "application/json", `{"name":5}`, 400, `{"error":"Bad Request","message":"name must be a JSON string"}`},
		{"a nested field", "application/json", `{"inner":{"count":"x"}}`, 400, `{"error":"Bad Request","message":"inner.count must be a JSON int"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL, tc.contentType, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus || strings.TrimSpace(string(body)) != tc.wantBody {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
			if tc.wantStatus != 204 {
				for name, want := range map[string]string{
					"Content-Type": "application/json", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
				} {
					if got := resp.Header.Get(name); got != want {
						t.Errorf("%s = %q, want %q", name, got, want)
					}
				}
			}
		})
	}
}

// TestDecodeIgnoringUnknown: RFC 7591 client metadata keep their unknown members out of
// the way instead of refusing them; every other fault is Decode's.
func TestDecodeIgnoringUnknown(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		wantErr    string
	}{
		{"unknown members are ignored", `{"name":"a","software_statement_x":1,"inner":{"count":2,"total":3}}`, ""},
		{"a field of the wrong type is still refused", `{"name":5,"other":1}`, "name must be a JSON string"},
		{"an array is still refused", `[]`, "request body must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/oauth/register", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/json")
			var dst struct {
				Name  string `json:"name"`
				Inner struct {
					Count int `json:"count"`
				} `json:"inner"`
			}
			err := httpjson.DecodeIgnoringUnknown(httptest.NewRecorder(), r, &dst, 1<<10, func(field, reason string) error { return &fieldError{field, reason} })
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Fatalf("got error %q, want %q", got, tc.wantErr)
			}
			if tc.wantErr == "" && (dst.Name != "a" || dst.Inner.Count != 2) {
				t.Errorf("decoded %+v, want name a and count 2", dst)
			}
		})
	}
}

type outage struct{}

func (outage) Error() string     { return "database unreachable" }
func (outage) Unavailable() bool { return true }

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a plain error", errors.New("boom"), false},
		{"the store's outage", outage{}, true},
		{"a wrapped outage", errors.Join(errors.New("get user"), outage{}), true},
	} {
		if got := httpjson.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWrite pins the headers of every JSON answer: private answers are never cached,
// public documents carry their own Cache-Control, and no browser sniffs either.
func TestWrite(t *testing.T) {
	cases := []struct {
		name      string
		write     func(w http.ResponseWriter)
		status    int
		cacheCtrl string
		body      string
	}{
		{"Write", func(w http.ResponseWriter) { httpjson.Write(w, http.StatusTeapot, map[string]int{"n": 1}) },
			http.StatusTeapot, "no-store", `{"n":1}`},
		{"WriteError", func(w http.ResponseWriter) { httpjson.WriteError(w, http.StatusNotFound, "no such thing") },
			http.StatusNotFound, "no-store", `{"error":"Not Found","message":"no such thing"}`},
		{"WriteCacheable", func(w http.ResponseWriter) { httpjson.WriteCacheable(w, "public, max-age=3600", []string{"a"}) },
			http.StatusOK, "public, max-age=3600", `["a"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c.write(rec)
			want := map[string]string{
				"Content-Type": "application/json", "Cache-Control": c.cacheCtrl, "X-Content-Type-Options": "nosniff",
			}
			for name, value := range want {
				if got := rec.Header().Get(name); got != value {
					t.Errorf("%s: got %q, want %q", name, got, value)
				}
			}
			if rec.Code != c.status {
				t.Errorf("status: got %d, want %d", rec.Code, c.status)
			}
			if got := strings.TrimSpace(rec.Body.String()); got != c.body {
				t.Errorf("body: got %s, want %s", got, c.body)
			}
		})
	}
}
