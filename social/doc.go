// Package social logs public users in through Google, Facebook and any OpenID Connect
// provider upstream of Gatehouse (a corporate IdP, or another Gatehouse), under
//
//	GET /api/auth/google/login          GET /api/auth/google/callback
//	GET /api/auth/facebook/login        GET /api/auth/facebook/callback
//	GET /api/auth/oidc/{name}/login     GET /api/auth/oidc/{name}/callback
//
// (SSO interface §4 item 21), each under the issuer's path (/auth/api/auth/google/login for
// the issuer https://acme.example/auth). A provider is enabled by its configuration; the routes of one
// that is not answer 404 in the JSON error shape.
//
// # The flow
//
// login takes the paused authorization request (`request`, as the hosted login page passes
// it) and an optional return URL (`return_to`: a path under the issuer's, or a redirect URI
// some client registered; anything else is a 400 before any redirect). It draws a 256-bit
// state, a nonce and a PKCE verifier and keeps them, with the request and the return URL,
// in the `gatehouse-social` cookie: HttpOnly, SameSite=Lax, Path=/api/auth/ (under the
// issuer's path), Secure unless the issuer is plain http on a loopback host, ten minutes long, its value
// authenticated and encrypted (gorilla/securecookie, HMAC-SHA-256 and AES-256 keys derived
// from the system secret with HKDF-SHA-256). Then it redirects to the provider.
//
// callback clears that cookie first, whatever happens next, so a callback URL works once.
// The state must equal the cookie's (constant-time comparison) and the cookie must belong to
// the same provider, else 400 and nothing else happens. A denial (`error` from the provider)
// goes back to the login page with a message. Otherwise the code is exchanged with the PKCE
// verifier, the profile read, and publicauth.Identities decides the account (known
// identity; link by verified email; new social-only user; or a refusal page). Then the host
// (the provider) finishes the login as for any first factor: behind the PIN gate when it is
// on for the user, then the `public-session` starts (method = the provider's name) and the
// paused authorization request resumes, or the browser goes to the return URL, or to the
// signed-in page. A
// provider that fails or does not answer within the HTTP client's timeout (10 s by default)
// sends the browser back to the login page with a message; nothing is written then.
//
// # Providers
//
// The providers are github.com/markbates/goth's, used directly (not gothic: the state
// lives in our own cookie). goth builds the authorization URL, exchanges the code where it
// can send a PKCE verifier, and reads the profile (FetchUser); Gatehouse adds the PKCE
// challenge (S256) and the nonce to the authorization URL.
//
//   - Google runs on goth's openidConnect provider, configured with Google's endpoints
//     (authorization, token, OpenID Connect userinfo). goth's google package is not used:
//     it imports golang.org/x/oauth2/google, which needs cloud.google.com/go/compute, a
//     module this project does not carry; and its Session.Authorize cannot send a
//     code_verifier, while openidConnect's can. The email counts as verified only when
//     Google's `email_verified` is true. The ID token must carry our nonce, and goth checks
//     its audience, issuer (either form Google uses) and expiry and that userinfo names the
//     same subject. Its signature is not checked: it came straight from Google's token
//     endpoint over TLS, which OpenID Connect Core §3.1.3.7 (6) accepts in place of it.
//   - Facebook runs on goth's facebook provider for the authorization URL and the profile
//     (with appsecret_proof). Its Session.Authorize cannot send a code_verifier, so the code
//     is exchanged with golang.org/x/oauth2 at Facebook's token endpoint, with PKCE, which
//     Facebook documents for manually built login flows
//     (developers.facebook.com/docs/facebook-login/guides/advanced/oidc-token). Facebook's
//     Graph API has no email_verified field: its User reference
//     (developers.facebook.com/docs/graph-api/reference/user, field `email`) says the
//     field "will not be returned if no valid email address is available", and Facebook
//     returns only a confirmed primary address. So an email Facebook returns is treated as
//     verified, and a profile without one is refused like an unverified email. No nonce:
//     the classic Facebook Login flow issues no ID token.
//   - OpenID Connect upstreams: discovered from the issuer on first use (and again after a
//     failure); goth's openidConnect exchanges the code and merges the userinfo claims; the
//     ID token is verified with go-oidc against the upstream's JWKS (signature, issuer,
//     audience, expiry) and must carry our nonce. The email counts as verified only with
//     `email_verified` true.
//
// Endpoint overrides (AuthURL, TokenURL, ProfileURL of Google and Facebook) exist for tests
// and private deployments. goth hard-codes Facebook's profile URL, so that override is
// applied by the HTTP transport: requests for Facebook's profile URL go to the override.
//
// # Accounts
//
// A sign-in with an identity already linked logs in to its user. An unknown identity whose
// email belongs to an account (the same publicauth.EmailKey) links to it only when that
// account's email is verified, or when the browser is already signed in to that very
// account (the owner proved the password first); otherwise a refusal page says to sign in
// with the password first, and nothing is linked. Else a new social-only account is
// created. See publicauth.Identities.Login.
//
// A social-only account gets a password through registration with its email
// (publicauth.Service.Register, isAccountLinking): at once right after a sign-in here, whose
// `public-session` proves the address, else once the owner opens a mailed link.
package social
