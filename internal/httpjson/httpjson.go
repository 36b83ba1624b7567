package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// ErrorBody is the application error shape (DESIGN §4): the HTTP status text and a message
// for people.
type ErrorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// WriteError answers with status in the ErrorBody shape.
func WriteError(w http.ResponseWriter, status int, message string) {
	Write(w, status, ErrorBody{Error: http.StatusText(status), Message: message})
}

// Write answers with status and v as JSON that no cache keeps and no browser sniffs.
func Write(w http.ResponseWriter, status int, v any) {
	write(w, status, "no-store", v)
}

// WriteCacheable answers 200 with v as JSON that caches may keep as cacheControl says (a
// public document such as discovery) and no browser sniffs.
func WriteCacheable(w http.ResponseWriter, cacheControl string, v any) {
	write(w, http.StatusOK, cacheControl, v)
}

func write(w http.ResponseWriter, status int, cacheControl string, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", cacheControl)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// The status line is out; a failed write means the client went away.
	_ = json.NewEncoder(w).Encode(v)
}

// RequestError is a fault of the HTTP request itself (media type, size, JSON syntax), found
// before the service is called. It carries its status and a message safe to show.
type RequestError struct {
	Status  int
	Message string
}

func (e *RequestError) Error() string { return e.Message }

// Decode reads r's body into dst. The body must be declared application/json (else 415), be
// at most maxBytes long (else 413) and hold exactly one JSON object (else 400) whose every
// member, nested ones included, is a field of dst: an unknown member is a 400 naming it
// (`unknown field "given_name"`), so a misspelt field is never silently dropped. It returns
// a *RequestError, or for a field of the wrong JSON type what fieldError makes of the
// field's dotted path and the reason ("must be a JSON string"): each domain package names
// such a field in its own input error.
func Decode(w http.ResponseWriter, r *http.Request, dst any, maxBytes int64, fieldError func(field, reason string) error) error {
	return decode(w, r, dst, maxBytes, fieldError, false)
}

// DecodeIgnoringUnknown is Decode for a body whose unknown members must be ignored: RFC
// 7591 §2 client metadata ("the authorization server MUST ignore any client metadata
// sent by the client that it does not understand"). Every other JSON body uses Decode.
func DecodeIgnoringUnknown(w http.ResponseWriter, r *http.Request, dst any, maxBytes int64, fieldError func(field, reason string) error) error {
	return decode(w, r, dst, maxBytes, fieldError, true)
}

// unknownFieldPrefix begins encoding/json's error for a member dst has no field for
// (Decoder.DisallowUnknownFields); it has no error type of its own.
const unknownFieldPrefix = "json: unknown field "

func decode(w http.ResponseWriter, r *http.Request, dst any, maxBytes int64, fieldError func(field, reason string) error, ignoreUnknown bool) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return &RequestError{http.StatusUnsupportedMediaType, "Content-Type must be application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &RequestError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body must be at most %d bytes", maxBytes)}
	case err != nil:
		return &RequestError{http.StatusBadRequest, "request body could not be read"}
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return &RequestError{http.StatusBadRequest, "request body is empty"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var value, extra json.RawMessage
	if err := dec.Decode(&value); err != nil {
		return &RequestError{http.StatusBadRequest, "request body is not valid JSON"}
	}
	switch err := dec.Decode(&extra); {
	case err == nil:
		return &RequestError{http.StatusBadRequest, "request body must hold a single JSON object"}
	case !errors.Is(err, io.EOF):
		return &RequestError{http.StatusBadRequest, "request body is not valid JSON"}
	}
	if value[0] != '{' {
		return &RequestError{http.StatusBadRequest, "request body must be a JSON object"}
	}
	fields := json.NewDecoder(bytes.NewReader(value))
	if !ignoreUnknown {
		fields.DisallowUnknownFields()
	}
	var typeErr *json.UnmarshalTypeError
	switch err := fields.Decode(dst); {
	case err == nil:
		return nil
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fieldError(typeErr.Field, "must be a JSON "+typeErr.Type.String())
	case errors.As(err, &typeErr):
		return &RequestError{http.StatusBadRequest, "request body must be a JSON object"}
	case strings.HasPrefix(err.Error(), unknownFieldPrefix):
		return &RequestError{http.StatusBadRequest, "unknown field " + strings.TrimPrefix(err.Error(), unknownFieldPrefix)}
	default:
		return &RequestError{http.StatusBadRequest, "request body is not valid JSON"}
	}
}

// Unavailable reports whether err says the store cannot reach its database; the store marks
// such errors with an Unavailable method (no domain package imports storage).
func Unavailable(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.As(err, &u) && u.Unavailable()
}
