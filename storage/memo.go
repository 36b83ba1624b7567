package storage

import (
	"context"
	"sync"
)

type requestMemoKey struct{}

// requestMemo remembers the authorization-code and refresh-token rows one request read or
// spent, so the fosite handlers that look the same row up one after another (the code
// grant, PKCE and OpenID Connect handlers of a code exchange; the refresh handler) cost one
// query. Rows are kept by value and copied out: a caller never shares one.
type requestMemo struct {
	mu      sync.Mutex
	codes   map[string]authorizationCodeModel
	refresh map[string]refreshTokenModel
	// spent holds the signatures of the codes this request invalidated itself.
	spent map[string]bool
}

// WithRequestMemo returns a context under which the store reads each authorization code and
// refresh token at most once, and serves fosite's later lookups of the same row (PKCE and
// OpenID Connect data included) from that read. A code this request invalidates is known to
// be spent without another query. Scope the context to one request: the memo is not
// refreshed, and the conditional updates that spend a code or rotate a refresh token still
// decide every race in the database. The provider wraps every request in one.
func WithRequestMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestMemoKey{}, &requestMemo{})
}

func memoFrom(ctx context.Context) *requestMemo {
	m, _ := ctx.Value(requestMemoKey{}).(*requestMemo)
	return m
}

// code returns the remembered row of the code with that signature.
func (m *requestMemo) code(signature string) (authorizationCodeModel, bool) {
	if m == nil {
		return authorizationCodeModel{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[signature]
	return c, ok
}

// codeByOIDCKey returns the remembered row of the code whose OpenID Connect key is key.
func (m *requestMemo) codeByOIDCKey(key string) (authorizationCodeModel, bool) {
	if m == nil {
		return authorizationCodeModel{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.codes {
		if c.OIDCKey != nil && *c.OIDCKey == key {
			return c, true
		}
	}
	return authorizationCodeModel{}, false
}

func (m *requestMemo) putCode(c authorizationCodeModel) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.codes == nil {
		m.codes = map[string]authorizationCodeModel{}
	}
	m.codes[c.Request.Signature] = c
}

// spendCode records that this request invalidated the code.
func (m *requestMemo) spendCode(signature string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.codes[signature]; ok {
		c.Active, c.PKCEForm = false, nil
		m.codes[signature] = c
	}
	if m.spent == nil {
		m.spent = map[string]bool{}
	}
	m.spent[signature] = true
}

// spentHere reports whether this request invalidated the code.
func (m *requestMemo) spentHere(signature string) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spent[signature]
}

func (m *requestMemo) refreshToken(signature string) (refreshTokenModel, bool) {
	if m == nil {
		return refreshTokenModel{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.refresh[signature]
	return r, ok
}

func (m *requestMemo) putRefreshToken(r refreshTokenModel) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refresh == nil {
		m.refresh = map[string]refreshTokenModel{}
	}
	m.refresh[r.Request.Signature] = r
}
