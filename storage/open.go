package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Store is the database behind Gatehouse. It is safe for concurrent use; create one with
// Open, FromDB or FromGorm and release it with Close.
type Store struct {
	db      *gorm.DB
	dialect dialect
	names   schemaNames
	now     func() time.Time
	log     *slog.Logger
	// ownsPool is true when Open created the pool, which Close then closes.
	ownsPool bool
	// clients caches the clients read (WithClientCacheRefresh).
	clients *clientCache
	// rules and users coalesce concurrent revocation checks and user reads (coalescer).
	rules *coalescer[int64]
	users *coalescer[*userModel]
	// accessLifespan bounds the revocation rules' lifetime (CoverAccessTokenLifespan).
	accessLifespan atomic.Int64
	// refreshGrace is the refresh-token reuse grace window (SetRefreshReuseGrace).
	refreshGrace atomic.Int64
	// eventRetention and truncateIPs are the audit trail's settings
	// (SetSecurityEventRetention, SetSecurityEventIPTruncation).
	eventRetention atomic.Int64
	truncateIPs    atomic.Bool
}

type dialect int

const (
	dialectSQLite dialect = iota + 1
	dialectPostgres
)

// Option configures Open, FromDB and FromGorm.
type Option func(*options)

type options struct {
	tracer        trace.TracerProvider // WithTracerProvider; nil: no tracing
	log           *slog.Logger
	now           func() time.Time
	prefix        string
	pool          Pool
	clientRefresh time.Duration
}

// WithLogger sends the store's diagnostics to log: SQL statements at debug level (without
// their parameters, which may carry secrets), slow statements at warn level, each applied
// migration at info level. A nil logger, the default, discards them.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) { o.log = log }
}

// WithClock sets the clock the store uses for the timestamps it fills itself (CreatedAt and
// UpdatedAt defaults, migration times, client-assertion expiry). A nil clock, the default, is
// time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithTablePrefix puts prefix before the name of every table and index Gatehouse creates and
// queries ("gatehouse_" gives gatehouse_users, gatehouse_clients, …), so its tables live
// beside a company's own in one schema. A prefix is lower-case ASCII letters, digits and
// underscores, starts with a letter and has at most 24 characters (unquoted names fold to
// lower case in Postgres, whose names end at 63 bytes); any other makes Open, FromDB and
// FromGorm fail. The default "" keeps the table names of releases before prefixes.
//
// The migrations table is the prefixed schema_migrations, except that an empty prefix counts
// as "gatehouse_" for it alone: "" and "gatehouse_" both keep their versions in
// gatehouse_schema_migrations, "auth_" in auth_schema_migrations. A bare schema_migrations
// is left to other migration tools (see Migrate). A prefix cannot be changed on a migrated
// database: the tables are not renamed.
func WithTablePrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// maxTablePrefix keeps the longest prefixed index name within Postgres's 63 bytes.
const maxTablePrefix = 24

// validTablePrefix reports whether p is a table prefix WithTablePrefix accepts.
func validTablePrefix(p string) error {
	if p == "" {
		return nil
	}
	if len(p) > maxTablePrefix {
		return fmt.Errorf("storage: table prefix %q is longer than %d characters", p, maxTablePrefix)
	}
	for i, r := range p {
		switch {
		case r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '_'):
		default:
			return fmt.Errorf("storage: table prefix %q must be lower-case letters, digits and underscores, starting with a letter", p)
		}
	}
	return nil
}

// Pool limits the connection pool Open creates. A zero field keeps its default:
//
//   - Postgres: MaxOpenConns 25, ConnMaxIdleTime 5 minutes, ConnMaxLifetime 30 minutes;
//   - an SQLite file: MaxOpenConns 8, ConnMaxIdleTime 5 minutes, no ConnMaxLifetime;
//   - MaxIdleConns as many as MaxOpenConns (the default or the one set), so that the
//     connections a burst opened stay for the next until ConnMaxIdleTime: a pool that
//     keeps fewer closes one whenever more statements than that end together and opens
//     another for the next one (on Postgres, a backend started and every statement
//     prepared again);
//   - SQLite ":memory:": exactly one connection, whatever Pool says (every connection to
//     it is a database of its own).
//
// A negative field means what database/sql makes of zero: no limit on open connections, no
// idle connections, no maximum idle time or lifetime. Pool is ignored by FromDB and
// FromGorm: the caller's pool keeps the limits the caller gave it.
type Pool struct {
	// MaxOpenConns caps the connections open at once (sql.DB.SetMaxOpenConns).
	MaxOpenConns int
	// MaxIdleConns caps the idle connections kept for reuse (sql.DB.SetMaxIdleConns).
	MaxIdleConns int
	// ConnMaxLifetime closes a connection this long after it was opened
	// (sql.DB.SetConnMaxLifetime).
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes a connection idle this long (sql.DB.SetConnMaxIdleTime).
	ConnMaxIdleTime time.Duration
}

// WithPool sets the limits of the connection pool Open creates; see Pool for the defaults.
func WithPool(p Pool) Option {
	return func(o *options) { o.pool = p }
}

// defaultPool is the Pool a zero Pool means for dialect d.
func defaultPool(d dialect) Pool {
	if d == dialectSQLite {
		// WAL lets readers run beside the one writer; writers queue on the busy timeout.
		return Pool{MaxOpenConns: 8, MaxIdleConns: 8, ConnMaxIdleTime: 5 * time.Minute}
	}
	// MaxIdleConns was 10: under 16 concurrent authorizations the pool closed and opened
	// again 30 to 70 Postgres connections a second.
	return Pool{MaxOpenConns: 25, MaxIdleConns: 25, ConnMaxIdleTime: 5 * time.Minute, ConnMaxLifetime: 30 * time.Minute}
}

// apply sets p's limits on db, each zero field taken from def.
func (p Pool) apply(db *sql.DB, def Pool) {
	pick := func(v, d int) int {
		if v == 0 {
			return d
		}
		return max(v, 0)
	}
	pickDur := func(v, d time.Duration) time.Duration {
		if v == 0 {
			return d
		}
		return max(v, 0)
	}
	if p.MaxOpenConns > 0 {
		def.MaxIdleConns = p.MaxOpenConns // idle follows the limit set (see Pool)
	}
	db.SetMaxOpenConns(pick(p.MaxOpenConns, def.MaxOpenConns))
	db.SetMaxIdleConns(pick(p.MaxIdleConns, def.MaxIdleConns))
	db.SetConnMaxLifetime(pickDur(p.ConnMaxLifetime, def.ConnMaxLifetime))
	db.SetConnMaxIdleTime(pickDur(p.ConnMaxIdleTime, def.ConnMaxIdleTime))
}

// newOptions applies opts over the defaults and validates them.
func newOptions(opts []Option) (options, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o, validTablePrefix(o.prefix)
}

// Open connects to the database named by dsn:
//
//   - "sqlite:PATH" (or "sqlite://PATH"): an SQLite file, created when missing, opened with
//     the pure-Go driver in WAL mode with foreign keys on, a busy timeout of 10s and
//     BEGIN IMMEDIATE transactions, so a write transaction waits for the lock instead of
//     failing on a lock upgrade. PATH ":memory:" gives a private in-memory database on a
//     single connection. The driver is linked only by importing package storage/sqlite;
//     without it Open fails with an error that names the import.
//   - "postgres://…" or "postgresql://…": Postgres through pgx; connection parameters such
//     as sslmode and search_path go in the query string.
//
// Open creates the connection pool (limits: WithPool) and checks the connection with Ping
// before it returns; Close closes the pool. It does not migrate: call Migrate. Any other
// scheme is an error that names the scheme (never the whole DSN, which may hold a password).
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	var (
		name   string
		arg    = dsn
		memory bool
	)
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		name = DialectSQLite
		arg = strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
		if arg == "" {
			return nil, errors.New("storage: sqlite dsn has no path")
		}
		memory = arg == ":memory:"
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		name = DialectPostgres
	default:
		scheme, _, found := strings.Cut(dsn, ":")
		if !found {
			return nil, errors.New("storage: dsn has no scheme (want sqlite:PATH or postgres://…)")
		}
		return nil, fmt.Errorf("storage: unsupported dsn scheme %q (want sqlite:PATH or postgres://…)", scheme)
	}
	drv, d, err := driverFor(name)
	if err != nil {
		return nil, err
	}
	if d == dialectSQLite {
		if err := createPrivateSQLiteFile(arg); err != nil {
			return nil, err
		}
	}
	s, err := newStore(drv.Open(arg), d, o)
	if err != nil {
		return nil, err
	}
	s.ownsPool = true
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	if memory {
		Pool{MaxOpenConns: 1, MaxIdleConns: 1, ConnMaxIdleTime: -1, ConnMaxLifetime: -1}.apply(sqlDB, Pool{})
	} else {
		o.pool.apply(sqlDB, defaultPool(d))
	}
	if err := s.Ping(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	return s, nil
}

// FromDB makes a store on a pool the caller opened and owns: dialect is "postgres" or
// "sqlite" (whose driver package storage/sqlite must be imported, and whose pool must be of
// its driver, github.com/glebarez/go-sqlite). The store runs its statements on db with its
// own GORM settings; Close leaves db open, and WithPool is ignored.
//
// An SQLite pool must have foreign keys on (FromDB checks it, and fails otherwise), and
// should have a busy timeout, WAL mode and BEGIN IMMEDIATE transactions, as Open sets up:
// open it with the DSN "PATH?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&
// _pragma=foreign_keys(1)&_txlock=immediate". Without them concurrent writers fail with
// SQLITE_BUSY instead of waiting.
//
// FromDB does not migrate: call Migrate, which keeps Gatehouse's tables apart from the
// caller's when WithTablePrefix is given.
func FromDB(db *sql.DB, dialect string, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, errors.New("storage: FromDB(nil)")
	}
	return fromPool(db, dialect, nil, opts)
}

// FromGorm makes a store on the connection pool of a GORM database the caller opened and
// owns, with gorm.io/driver/postgres or github.com/glebarez/sqlite (the dialect is
// db.Dialector.Name(); for SQLite, package storage/sqlite must be imported). The store
// opens a GORM database of its own on db's pool, with its own logger, clock, naming,
// error translation and callbacks, so db's configuration and the caller's other queries are
// left exactly as they were; Close leaves the pool open, and WithPool is ignored. db must
// not be inside a transaction. The SQLite requirements are FromDB's.
func FromGorm(db *gorm.DB, opts ...Option) (*Store, error) {
	if db == nil || db.Config == nil || db.Dialector == nil {
		return nil, errors.New("storage: FromGorm: the gorm DB is nil or not opened")
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("storage: FromGorm: the gorm DB has no connection pool of its own (is it inside a transaction?): %w", err)
	}
	return fromPool(sqlDB, db.Dialector.Name(), db.Dialector, opts)
}

// fromPool is FromDB and FromGorm: a store on the caller's pool, which it does not own.
func fromPool(pool *sql.DB, name string, caller gorm.Dialector, opts []Option) (*Store, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	drv, d, err := driverFor(name)
	if err != nil {
		return nil, err
	}
	dialector, err := drv.Conn(pool, caller)
	if err != nil {
		return nil, err
	}
	s, err := newStore(dialector, d, o)
	if err != nil {
		return nil, err
	}
	if d == dialectSQLite {
		var on int
		if err := scan(s.db.Raw("PRAGMA foreign_keys"), &on); err != nil {
			return nil, fmt.Errorf("storage: read PRAGMA foreign_keys: %w", err)
		}
		if on != 1 {
			return nil, errors.New("storage: the SQLite pool has foreign keys off; open it with _pragma=foreign_keys(1) in the DSN (see FromDB)")
		}
	}
	return s, nil
}

// newStore opens a GORM database on dialector with the settings every store needs: its
// logger, its clock in UTC, error translation into gorm.ErrDuplicatedKey and
// gorm.ErrForeignKeyViolated, the table prefix, and the callbacks that mark an unreachable
// database.
func newStore(dialector gorm.Dialector, d dialect, o options) (*Store, error) {
	names := schemaNames{dialect: d, prefix: o.prefix}
	db, err := gorm.Open(dialector, &gorm.Config{
		Logger:                 newGormLogger(o.log),
		NowFunc:                func() time.Time { return utc(o.now()) },
		NamingStrategy:         names.namingStrategy(),
		SkipDefaultTransaction: true,
		TranslateError:         true,
		DisableAutomaticPing:   true,
	})
	if err != nil {
		return nil, fmt.Errorf("storage: open: %w", unavailable(err))
	}
	if err := registerUnavailableCallbacks(db); err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	if err := useTracing(db, o); err != nil {
		return nil, err
	}
	s := &Store{db: db, dialect: d, names: names, now: o.now, log: o.log, clients: newClientCache(o.clientRefresh, o.now)}
	s.rules = newCoalescer(s.ruleTimes)
	s.users = newCoalescer(s.usersByID)
	return s, nil
}

// createPrivateSQLiteFile creates the database file of an SQLite path with mode 0600 when it
// does not exist yet: the driver would create it 0644, readable by every local user, and
// the database holds password hashes and keys. An empty file is an empty database, and
// SQLite gives its -wal and -shm files the mode of the database file. An existing file, an
// in-memory database and a read-only URI are left alone.
func createPrivateSQLiteFile(path string) error {
	name, query, _ := strings.Cut(path, "?")
	name = strings.TrimPrefix(name, "file:")
	params, _ := url.ParseQuery(query)
	if name == "" || name == ":memory:" || params.Get("mode") == "memory" || params.Get("mode") == "ro" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: create sqlite database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: create sqlite database file: %w", err)
	}
	return nil
}

// Close closes the connection pool Open created; transactions still open on it are rolled
// back. A store made by FromDB or FromGorm leaves the caller's pool open.
func (s *Store) Close() error {
	if !s.ownsPool {
		return nil
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("storage: close: %w", err)
	}
	if err := sqlDB.Close(); err != nil {
		return fmt.Errorf("storage: close: %w", err)
	}
	return nil
}

// Ping checks that the database answers; readiness probes call it.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("storage: ping: %w", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("storage: ping: %w", unavailable(err))
	}
	return nil
}

// utc returns t in UTC, truncated to the microsecond precision both databases keep.
func utc(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// utcPtr is utc for optional times.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}

// nowUTC is the store's clock in UTC, at stored precision.
func (s *Store) nowUTC() time.Time {
	return utc(s.now())
}

// gormLogger forwards gorm's diagnostics to slog. It implements gorm.ParamsFilter so logged
// statements never carry their parameters.
type gormLogger struct {
	log *slog.Logger
}

// slowStatement is the duration from which a statement is logged at warn level.
const slowStatement = 500 * time.Millisecond

var (
	_ logger.Interface  = gormLogger{}
	_ gorm.ParamsFilter = gormLogger{}
)

func newGormLogger(log *slog.Logger) gormLogger { return gormLogger{log: log} }

func (l gormLogger) LogMode(logger.LogLevel) logger.Interface { return l }

func (l gormLogger) Info(ctx context.Context, msg string, args ...any) {
	l.log.InfoContext(ctx, "storage: "+fmt.Sprintf(msg, args...))
}

func (l gormLogger) Warn(ctx context.Context, msg string, args ...any) {
	l.log.WarnContext(ctx, "storage: "+fmt.Sprintf(msg, args...))
}

func (l gormLogger) Error(ctx context.Context, msg string, args ...any) {
	l.log.ErrorContext(ctx, "storage: "+fmt.Sprintf(msg, args...))
}

// Trace logs one statement. Errors are logged at debug level only: the caller receives them
// and decides (a duplicate email is not a server fault).
func (l gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	elapsed := time.Since(begin)
	level := slog.LevelDebug
	if elapsed >= slowStatement {
		level = slog.LevelWarn
	}
	if !l.log.Enabled(ctx, level) {
		return
	}
	sql, rows := fc()
	attrs := []slog.Attr{
		slog.String("sql", sql),
		slog.Int64("rows", rows),
		slog.Duration("elapsed", elapsed),
	}
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	l.log.LogAttrs(ctx, level, "storage: sql", attrs...)
}

// ParamsFilter drops the parameters so that Trace logs placeholders, never values.
func (l gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

// scan runs q and scans its result into dest as q.Scan(dest) would: a struct or a value
// from the first row, a slice from every row, dest untouched when there is none. Use it
// instead of gorm's Scan, which runs the statement under a recorder logger of its own
// that writes every bound value into the SQL text (logger.ExplainSQL) on every call,
// logged or not, and then hands that text to the store's logger, past gormLogger's
// ParamsFilter: a statement logged at debug level, or one slower than slowStatement at
// warn, would show its token signatures and session ids. Formatting them was also 8% of
// the server's CPU during an authorization on Postgres. Rows runs the same callbacks
// (tracing included) under the store's own logger. q is a statement as Raw, Model or
// Table return it, whose errors collect in q.Error (translated, as gorm's Scan has them).
func scan(q *gorm.DB, dest any) error {
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	if rows.Next() {
		_ = q.ScanRows(rows, dest)
	} else {
		_ = q.AddError(rows.Err())
	}
	// An error Postgres sends after the row (a data-modifying CTE fails at the statement's
	// end) comes with Close.
	_ = q.AddError(rows.Close())
	return q.Error
}
