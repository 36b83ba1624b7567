// Package storage is Gatehouse's only database layer: GORM models, versioned migrations,
// Open (SQLite or Postgres chosen by the DSN), the fosite storage adapter, and the stores the
// domain packages declare (publicauth.UserStore, publicauth.SessionStore, factors.Store)
// plus the records the provider keeps (clients, signing keys, consents, pending authorization requests).
//
// Usage:
//
//	import _ "github.com/gatehouse-id/gatehouse/storage/sqlite" // SQLite only
//
//	st, err := storage.Open(ctx, "sqlite:gatehouse.db")
//	if err != nil { … }
//	defer st.Close()
//	if err := st.Migrate(ctx); err != nil { … }
//
// Postgres is built in; the SQLite driver is linked only by importing package
// storage/sqlite, which registers it (Register), so a Postgres-only program does not carry
// it. Open creates its own connection pool (limits: WithPool). An embedder shares its own
// database instead: FromGorm or FromDB run the store on the caller's pool, which Close
// leaves open, and WithTablePrefix gives every table and index of Gatehouse's a prefix so
// they sit beside the caller's tables (a "users" of theirs included):
//
//	st, err := storage.FromGorm(db, storage.WithTablePrefix("gatehouse_"))
//
// All SQL of the package names tables through one mapper, so the prefix reaches raw
// statements, migrations and GORM models alike. Migrate keeps its versions in Gatehouse's
// own migrations table and checks its columns before trusting it (see Migrate).
//
// No SQL, gorm or driver is used outside this package (and its driver package
// storage/sqlite). Every method translates database
// errors into the sentinels its caller's contract names: fosite's (fosite.ErrNotFound,
// fosite.ErrInvalidatedAuthorizeCode, fosite.ErrInactiveToken, fosite.ErrJTIKnown) for the
// fosite adapter, publicauth's (ErrUserNotFound, ErrEmailTaken, ErrSessionNotFound) for the
// publicauth stores, and ErrNotFound / ErrConflict for the records. A database that cannot
// serve a statement for now — unreachable, or refusing writes as read-only or full — is
// marked ErrUnavailable (ErrReadOnly, ErrDiskFull), which callers answer with 503. Any other
// error is a wrapped database error.
//
// Access tokens are stateless JWTs: the fosite adapter stores no row for one
// (CreateAccessTokenSession writes nothing, GetAccessTokenSession finds nothing). Revoking
// them records a revocation rule instead (revocation_rules.go): on one token's jti, on a
// grant, on a (subject, client) pair or on a subject, each revoking the matching tokens
// issued before its time, in microseconds. AccessTokenRevoked decides a token in one query
// of primary-key probes, which concurrent checks share (coalesce.go: checks that arrive
// while one query is in flight run together as the next, so every check is answered by a
// statement that began after it did); a rule lives until every token it can match has expired
// (CoverAccessTokenLifespan), and DeleteExpired removes it then. Every revocation
// (RevokeAccessToken, RevokeTokensOf, RevokeUserGrants, DeleteUser) records its rule in the
// transaction of the change that asks for it. The access_tokens table of earlier releases
// stays in the schema, unused.
//
// Transactions travel on the context (fosite's storage.Transactional): every method runs
// inside the transaction BeginTX put into its context, or on the connection pool when there
// is none. The domain packages use InTx, which wraps BeginTX, Commit and Rollback and nests
// through the context. Timestamps are stored in UTC with microsecond precision and read back in UTC.
//
// Hot paths are budgeted in round trips (DESIGN.md §6). An authorization code carries its
// PKCE challenge and OpenID Connect request data on its own row, written in one INSERT at
// the end of the transaction that creates it; under WithRequestMemo (the provider wraps
// every request) a code exchange reads that row once, serves fosite's PKCE and OpenID
// Connect lookups from it and spends it with one conditional update, and a refresh is one
// read, one conditional update and one insert. Clients are served from an in-process cache
// (WithClientCacheRefresh) that every client write through the store invalidates; on
// Postgres, writes also NOTIFY, and ListenClientChanges applies other stores' writes at
// once.
//
// Secrets never reach this package in clear: callers pass hashes (session ids, client
// secrets), signatures (tokens) and sealed keys; the one raw value fosite hands over, the
// authorization code keying OpenID Connect sessions, is hashed before it is stored.
package storage
