package provider

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"
	"golang.org/x/net/idna"

	"github.com/gatehouse-id/gatehouse/events"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/ui"
)

// newUI builds the hosted pages of cfg over the provider's public authentication.
func (p *Provider) newUI(cfg Config) (*ui.UI, error) {
	templates := cfg.TemplateFS
	if cfg.TemplateDir != "" {
		templates = os.DirFS(cfg.TemplateDir)
	}
	return ui.New(ui.Config{
		TemplateFS:            templates,
		ContentSecurityPolicy: cfg.ContentSecurityPolicy,
		Issuer:                cfg.Issuer,
		SecureCookies:         secureCookies(cfg.Issuer),
		CSRFKey:               deriveKey(cfg.Secret, "csrf"),
		NewToken:              func() (string, error) { return randomToken(p.random) },
		ScopeDescriptions:     scopeDescriptions(cfg.Scopes),
		MagicLinkLifespan:     cfg.PublicAuth.MagicLinkLifespan,
		PasswordResetLifespan: cfg.PublicAuth.PasswordResetLifespan,
		Logger:                p.log,
	}, p.auth, p.social, uiHost{p})
}

// resumePath is the internal path, under the mount path, that continues the paused
// authorization request token names.
func (p *Provider) resumePath(token string) string {
	return p.mount + resumePrefix + url.Values{requestParam: {token}}.Encode()
}

// resumePrefix is the start of a resume path after the mount path.
const resumePrefix = "/api/oauth/authorize/resume?"

// pausedRequestIn is the paused-request token that an internal path resuming it names, or
// "" for any other path.
func (p *Provider) pausedRequestIn(path string) string {
	query, ok := strings.CutPrefix(path, p.mount+resumePrefix)
	if !ok {
		return ""
	}
	q, _ := url.ParseQuery(query)
	return q.Get(requestParam)
}

// flowDestination is where a hosted login goes once complete: the paused request token
// names, by reference, or the signed-in page outside any flow.
func flowDestination(token string) publicauth.Destination {
	if token == "" {
		return publicauth.Destination{}
	}
	return publicauth.Destination{PausedRequest: hashToken(token)}
}

// uiHost is the provider as the hosted pages' ui.Host. It is a separate, unexported type so
// that its methods are not part of the Provider's API.
type uiHost struct{ p *Provider }

// pausedRow loads the paused request stored under idHash; publicauth.ErrRequestExpired
// when there is none (unknown, completed or expired).
func (p *Provider) pausedRow(ctx context.Context, idHash string) (*storage.AuthRequest, error) {
	row, err := p.store.AuthRequestByIDHash(ctx, idHash, p.now())
	if errors.Is(err, storage.ErrNotFound) {
		return nil, publicauth.ErrRequestExpired
	}
	return row, err
}

// PausedRequest implements ui.Host: the client's name, whether it registered itself, the
// host its answer goes to, login_hint and scopes.
func (h uiHost) PausedRequest(ctx context.Context, token string) (ui.PausedRequest, error) {
	row, err := h.p.pausedRow(ctx, hashToken(token))
	if err != nil {
		return ui.PausedRequest{}, err
	}
	client, err := h.p.store.ClientByID(ctx, row.ClientID)
	if err != nil {
		return ui.PausedRequest{}, err
	}
	name := client.Name
	if name == "" {
		name = client.ID
	}
	form, _ := url.ParseQuery(row.Form)
	userCode, err := h.p.deviceUserCode(ctx, form)
	if err != nil {
		return ui.PausedRequest{}, err
	}
	redirect := form.Get("redirect_uri")
	if redirect == "" && len(client.RedirectURIs) > 0 {
		// Omitted, the redirect URI is the client's one (fosite); a device has none, and
		// its client's first registered one tells where the application lives.
		redirect = client.RedirectURIs[0]
	}
	return ui.PausedRequest{ClientName: name, LoginHint: form.Get("login_hint"), Scopes: strings.Fields(form.Get("scope")),
		UserCode: userCode, ClientUnverified: client.DynamicallyRegistered(), ClientHost: displayHost(redirect)}, nil
}

// displayHost is the host of the URI raw as a page shows it: an internationalized name as
// its A-label (xn--…), so that a name of look-alike letters shows as what it is; "" for
// none.
func displayHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil {
		return ip.String()
	}
	host, err := idna.Lookup.ToASCII(u.Hostname())
	if err != nil {
		// Not a valid internationalized name: shown escaped, never as look-alike letters.
		return strconv.QuoteToASCII(u.Hostname())
	}
	return host
}

// Destination implements ui.Host.
func (uiHost) Destination(token string) publicauth.Destination { return flowDestination(token) }

// CheckPausedRef implements ui.Host.
func (h uiHost) CheckPausedRef(ctx context.Context, ref string) error {
	_, err := h.p.pausedRow(ctx, ref)
	return err
}

// ResumeLogin implements ui.Host: the request is re-keyed under a new token bound to the
// login.
func (h uiHost) ResumeLogin(ctx context.Context, ref, userID string, authTime time.Time) (string, error) {
	token, err := randomToken(h.p.random)
	if err != nil {
		return "", err
	}
	if err := h.p.store.CompleteAuthRequestLogin(ctx, ref, hashToken(token), userID, authTime); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			err = publicauth.ErrRequestExpired
		}
		return "", err
	}
	return h.p.resumePath(token), nil
}

// DecideConsent implements ui.Host. Allow remembers the scopes for this user and client and
// finishes the authorization; deny sends access_denied to the client.
func (h uiHost) DecideConsent(w http.ResponseWriter, r *http.Request, token string, allow bool) {
	p, ctx := h.p, r.Context()
	row, ar, err := p.pausedRequest(r, token)
	if err != nil {
		p.pausedRequestError(w, r, ar, err)
		return
	}
	session, user, err := p.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		http.Redirect(w, r, p.ui.LoginPath(token), http.StatusSeeOther)
		return
	}
	f := flow{requestedAt: row.RequestedAt.UTC(), token: token, paused: row}
	if !allow {
		if err := p.store.DeleteAuthRequest(ctx, row.IDHash); err != nil {
			p.log.WarnContext(ctx, "deleting a denied authorization request failed", "error", err)
		}
		p.authorizeError(w, r, ar, fosite.ErrAccessDenied.WithHint("The user denied the request."))
		return
	}
	granted := slices.Clone([]string(ar.GetRequestedScopes())) // appended to below; fosite keeps its own
	if prev, err := p.store.ConsentFor(ctx, user.ID, row.ClientID); err == nil {
		for _, s := range prev.Scopes {
			if !slices.Contains(granted, s) {
				granted = append(granted, s)
			}
		}
	}
	// The consent and its consent.granted record commit together.
	err = p.store.InTx(ctx, func(ctx context.Context) error {
		if err := p.store.SaveConsent(ctx, &storage.Consent{
			UserID: user.ID, ClientID: row.ClientID, Scopes: granted, GrantedAt: p.now().UTC(),
		}); err != nil {
			return err
		}
		return p.events.Emit(ctx, &events.ConsentGranted{UserID: user.ID, ClientID: row.ClientID, Scopes: granted})
	})
	if err != nil {
		p.authorizeError(w, r, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	authTime := session.AuthTime
	if row.UserID == user.ID && row.AuthTime != nil {
		authTime = *row.AuthTime
	}
	p.issue(w, r, ar, user, authTime, session.Method, session.SID, f)
}

// Logout implements ui.Host.
func (h uiHost) Logout(w http.ResponseWriter, r *http.Request, form url.Values) {
	user, err := h.p.auth.SignedIn(r)
	if err != nil {
		h.p.ui.Error(w, r, err)
		return
	}
	h.p.endSessionAndLeave(w, r, h.p.logoutRequest(r.Context(), form), user != nil)
}
