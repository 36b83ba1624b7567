// Package provider is Gatehouse's importable entry point: an OpenID Connect provider that
// is an http.Handler.
//
//	p, err := provider.New(provider.Config{
//		Issuer: "https://login.example.com",
//		DSN:    "postgres://gatehouse@db/gatehouse",
//		Secret: secret, // 32+ bytes, kept in your secret store
//	})
//	if err != nil { … }
//	defer p.Close()
//	http.ListenAndServe(":8080", p)
//
// New assembles ory/fosite from typed handlers — authorization code with PKCE (S256 only),
// refresh token rotation with reuse detection, client credentials, revocation (RFC 7009),
// introspection (RFC 7662), pushed authorization requests (RFC 9126), request objects
// (RFC 9101) and OpenID Connect, with each client held to the one authentication method it
// registered (client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt
// or none; RFC 7523 assertions) — over the GORM storage of package storage, with stateless JWT access tokens
// (RFC 9068, ES256 by default; no row per token, revoked by rules the storage checks in
// one query) and ID tokens signed by keys it creates,
// encrypts under the system secret and rotates (RotateKeys). It serves RP-initiated logout,
// discovery and JWKS, and mounts the hosted pages of package ui (login with password, magic link and
// social buttons, registration, PIN, password reset, consent, the browser links of mail),
// which continue the OAuth flow through the provider's ui.Host, the public authentication
// API of package publicauth, the social and upstream login of package social and the
// permission routes of package permissions. One
// limiter (memory, or one replicas share, such as package ratelimit/redis's, given with
// WithLimiter) backs every rate limit, including the limit
// on failed client authentication at the token, revocation, introspection and PAR
// endpoints.
//
// Clients may also register themselves (RFC 7591) at /api/oauth/register with an initial
// access token an admin issued (CreateRegistrationToken, or POST
// /api/admin/registration-tokens), or with none under Config.OpenRegistration, and manage
// their registration with its registration access token (RFC 7592); such clients are never
// first-party.
//
// New opens Config.DSN itself (SQLite needs import _ ".../storage/sqlite"; Config.DBPool
// limits the pool), or runs on a store the embedder made and keeps, given with WithStore:
// storage.FromGorm or storage.FromDB on the embedder's own pool, with
// storage.WithTablePrefix keeping Gatehouse's tables apart from the embedder's.
//
// The issuer's path is where the provider lives: with the issuer https://acme.example/auth
// every endpoint, page, redirect, mailed link, social callback and cookie Path lies under
// /auth/, so a company mounts it beside its own routes with mux.Handle("/auth/", p) (not
// behind http.StripPrefix); see Config.Issuer.
//
// An API in the same process checks access tokens with VerifyRequest (Bearer, or DPoP with
// its proof) or VerifyAccessToken (bearer tokens only), or guards its routes with
// RequireScopes (RequireUser for routes that act for a user: client tokens pass
// RequireScopes) and reads the token back with AccessTokenFromContext. DPoP-bound tokens
// (RFC 9449) need no switch; DPoPConfig tunes them, and package dpop checks proofs for a
// resource server elsewhere.
//
// Accounts live in Gatehouse's own users table unless WithAccounts gives the application's
// own store (Accounts, with the optional AccountRegistrar, PasswordSetter and
// EmailVerifier; accounts.go says what needs the builtin store). WithClaims adds claims to
// tokens and userinfo; Config.Registration and WithBeforeRegister decide who may register.
//
// The admin methods (CreateClient, ClientByID, ListClients, UpdateClient,
// RotateClientSecret, DeleteClient, CreateRegistrationToken, CreateUser, UserByEmail, UpdateUser, SetUserRequirePIN,
// DisableUser, DeleteUser, RotateKeys) are what the bundled CLI calls; their errors match
// the sentinels ErrNotFound, ErrClientExists and ErrEmailTaken.
package provider
