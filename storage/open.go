package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Store is the database behind Gatehouse. It is safe for concurrent use; create one with
// Open and release it with Close.
type Store struct {
	db      *gorm.DB
	dialect dialect
	now     func() time.Time
	log     *slog.Logger
}

type dialect int

const (
	dialectSQLite dialect = iota + 1
	dialectPostgres
)

// sqliteBusyTimeout is how long an SQLite connection waits for another writer before it
// fails with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// Option configures Open.
type Option func(*options)

type options struct {
	log *slog.Logger
	now func() time.Time
}

// WithLogger sends the store's diagnostics to log: SQL statements at debug level (without
// their parameters, which may carry secrets), slow statements at warn level. A nil logger,
// the default, discards them.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) { o.log = log }
}

// WithClock sets the clock the store uses for the timestamps it fills itself (CreatedAt and
// UpdatedAt defaults, migration times, client-assertion expiry). A nil clock, the default, is
// time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// Open connects to the database named by dsn:
//
//   - "sqlite:PATH" (or "sqlite://PATH"): an SQLite file, created when missing, opened with
//     the pure-Go driver in WAL mode with foreign keys on, a busy timeout of 10s and
//     BEGIN IMMEDIATE transactions, so a write transaction waits for the lock instead of
//     failing on a lock upgrade. PATH ":memory:" gives a private in-memory database on a
//     single connection.
//   - "postgres://…" or "postgresql://…": Postgres through pgx; connection parameters such
//     as sslmode and search_path go in the query string.
//
// Open checks the connection with Ping before it returns. It does not migrate: call Migrate.
// Any other scheme is an error that names the scheme (never the whole DSN, which may hold a
// password).
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
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

	var (
		dialector gorm.Dialector
		d         dialect
		memory    bool
	)
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
		if path == "" {
			return nil, errors.New("storage: sqlite dsn has no path")
		}
		memory = path == ":memory:"
		if err := createPrivateSQLiteFile(path); err != nil {
			return nil, err
		}
		dialector = sqlite.Open(sqliteDSN(path))
		d = dialectSQLite
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		dialector = postgres.Open(dsn)
		d = dialectPostgres
	default:
		scheme, _, found := strings.Cut(dsn, ":")
		if !found {
			return nil, errors.New("storage: dsn has no scheme (want sqlite:PATH or postgres://…)")
		}
		return nil, fmt.Errorf("storage: unsupported dsn scheme %q (want sqlite:PATH or postgres://…)", scheme)
	}

	db, err := gorm.Open(dialector, &gorm.Config{
		Logger:                 newGormLogger(o.log),
		NowFunc:                func() time.Time { return utc(o.now()) },
		SkipDefaultTransaction: true,
		TranslateError:         true,
		DisableAutomaticPing:   true,
	})
	if err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	if err := registerUnavailableCallbacks(db); err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	switch {
	case memory:
		// Every connection to ":memory:" is a database of its own: keep exactly one.
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetMaxIdleConns(1)
		sqlDB.SetConnMaxIdleTime(0)
		sqlDB.SetConnMaxLifetime(0)
	case d == dialectSQLite:
		// WAL lets readers run beside the one writer; writers queue on the busy timeout.
		sqlDB.SetMaxOpenConns(8)
		sqlDB.SetMaxIdleConns(8)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	default:
		sqlDB.SetMaxOpenConns(25)
		sqlDB.SetMaxIdleConns(10)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
		sqlDB.SetConnMaxLifetime(30 * time.Minute)
	}

	s := &Store{db: db, dialect: d, now: o.now, log: o.log}
	if err := s.Ping(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
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

// sqliteDSN adds the connection parameters Gatehouse relies on to an SQLite path. The busy
// timeout comes first so the other pragmas already wait for locks.
func sqliteDSN(path string) string {
	params := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(NORMAL)",
		"_pragma=foreign_keys(1)",
		"_txlock=immediate",
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + strings.Join(params, "&")
}

// Close closes the connection pool. Transactions still open on it are rolled back.
func (s *Store) Close() error {
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
