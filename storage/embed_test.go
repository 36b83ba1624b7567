package storage_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// sqlitePragmas are the connection parameters FromDB documents for an SQLite pool.
const sqlitePragmas = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"

// companyDB opens, as a company's service would, its own GORM database on a fresh database
// of backend b, with its own users table (bigint ids) holding one row. It is closed when t
// ends.
func companyDB(t *testing.T, b storagetest.Backend) *gorm.DB {
	t.Helper()
	dsn := b.DSN(t)
	var dialector gorm.Dialector
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		dialector = sqlite.Open(path + sqlitePragmas)
	} else {
		dialector = postgres.Open(dsn)
	}
	db, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open the company database: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	for _, stmt := range []string{
		`CREATE TABLE users (id BIGINT PRIMARY KEY, login TEXT NOT NULL)`,
		`INSERT INTO users (id, login) VALUES (4200000000, 'ann')`,
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return db
}

// tablesOf returns the sorted table names in the company database's schema.
func tablesOf(t *testing.T, db *gorm.DB) []string {
	t.Helper()
	var names []string
	q := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if db.Dialector.Name() == storage.DialectPostgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	}
	if err := db.Raw(q).Scan(&names).Error; err != nil {
		t.Fatalf("list tables: %v", err)
	}
	slices.Sort(names)
	return names
}

// wantCompanyUsers checks that the company's users table and pool are untouched.
func wantCompanyUsers(t *testing.T, db *gorm.DB) {
	t.Helper()
	var login string
	if err := db.Raw(`SELECT login FROM users WHERE id = 4200000000`).Scan(&login).Error; err != nil || login != "ann" {
		t.Errorf("company users row: got %q, %v; want ann", login, err)
	}
}

// TestEmbedSharesTheCompanyDatabase: FromGorm and FromDB run Gatehouse on a company's own
// pool beside its own users table: with a table prefix Migrate succeeds, every table of
// Gatehouse's is prefixed, a second Migrate applies nothing, the company's GORM settings
// are untouched, and Close leaves the company's pool open.
func TestEmbedSharesTheCompanyDatabase(t *testing.T) {
	constructors := []struct {
		name string
		new  func(db *gorm.DB, opts ...storage.Option) (*storage.Store, error)
	}{
		{"FromGorm", storage.FromGorm},
		{"FromDB", func(db *gorm.DB, opts ...storage.Option) (*storage.Store, error) {
			sqlDB, err := db.DB()
			if err != nil {
				return nil, err
			}
			return storage.FromDB(sqlDB, db.Dialector.Name(), opts...)
		}},
	}
	for _, b := range storagetest.Backends(t) {
		for _, c := range constructors {
			t.Run(b.Name+"/"+c.name, func(t *testing.T) {
				ctx := context.Background()
				db := companyDB(t, b)
				callerLogger, callerNaming := db.Config.Logger, db.Config.NamingStrategy
				var logs bytes.Buffer
				s, err := c.new(db, storage.WithTablePrefix("gatehouse_"),
					storage.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if err := s.Migrate(ctx); err != nil {
					t.Fatalf("Migrate: %v", err)
				}
				var want []string
				for _, name := range storage.TableNames() {
					want = append(want, "gatehouse_"+name)
				}
				want = append(want, "gatehouse_schema_migrations", "users")
				slices.Sort(want)
				if got := tablesOf(t, db); !slices.Equal(got, want) {
					t.Errorf("tables: got %v, want %v", got, want)
				}
				wantSchemaVersion(t, s, storage.LatestSchemaVersion())

				logs.Reset()
				if err := s.Migrate(ctx); err != nil {
					t.Fatalf("second Migrate: %v", err)
				}
				if strings.Contains(logs.String(), "applied migration") {
					t.Errorf("second Migrate logged %q, want nothing applied", logs.String())
				}

				if err := s.CreateClient(ctx, &storage.Client{ID: "app"}); err != nil {
					t.Fatalf("CreateClient: %v", err)
				}
				if err := s.CreateClient(ctx, &storage.Client{ID: "app"}); !errors.Is(err, storage.ErrConflict) {
					t.Errorf("CreateClient twice: got %v, want ErrConflict (duplicate keys classified on the shared pool)", err)
				}
				var n int64
				if err := db.Raw(`SELECT COUNT(*) FROM gatehouse_clients WHERE id = 'app'`).Scan(&n).Error; err != nil || n != 1 {
					t.Errorf("gatehouse_clients rows: got %d, %v; want 1", n, err)
				}

				if db.Config.Logger != callerLogger || db.Config.NamingStrategy != callerNaming {
					t.Errorf("the company's GORM logger or naming strategy changed")
				}
				if db.Callback().Query().Get("gatehouse:unavailable") != nil {
					t.Errorf("the company's GORM callbacks got Gatehouse's")
				}
				if err := s.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				wantCompanyUsers(t, db)
			})
		}
	}
}

// TestMigrateRefusesAForeignUsersTable: without a prefix, a company users table stops
// Migrate before it changes anything, with an error that names the table and the fix.
func TestMigrateRefusesAForeignUsersTable(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			db := companyDB(t, b)
			s, err := storage.FromGorm(db)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Migrate(ctx)
			if !errors.Is(err, storage.ErrForeignSchema) {
				t.Fatalf("Migrate: got %v, want ErrForeignSchema", err)
			}
			for _, w := range []string{"users", "WithTablePrefix"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Migrate: got error %q, want it to name %q", err, w)
				}
			}
			if got, want := tablesOf(t, db), []string{"gatehouse_schema_migrations", "users"}; !slices.Equal(got, want) {
				t.Errorf("tables: got %v, want %v", got, want)
			}
			wantSchemaVersion(t, s, 0)
			wantCompanyUsers(t, db)
		})
	}
}

// TestMigrateIgnoresGolangMigrateTable: a golang-migrate schema_migrations recording
// version 1 does not make Migrate skip anything, and is left as it was.
func TestMigrateIgnoresGolangMigrateTable(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, err := storage.Open(ctx, b.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			for _, stmt := range []string{
				`CREATE TABLE schema_migrations (version BIGINT NOT NULL PRIMARY KEY, dirty BOOLEAN NOT NULL)`,
				`INSERT INTO schema_migrations (version, dirty) VALUES (1, FALSE)`,
			} {
				if err := s.ExecSQL(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			wantSchemaVersion(t, s, storage.LatestSchemaVersion())
			if err := s.CreateClient(ctx, &storage.Client{ID: "app"}); err != nil {
				t.Errorf("CreateClient: %v", err)
			}
			got, err := s.QueryInts(ctx, `SELECT version FROM schema_migrations`)
			if err != nil || !slices.Equal(got, []int64{1}) {
				t.Errorf("golang-migrate versions: got %v, %v; want [1] untouched", got, err)
			}
		})
	}
}

// TestMigrateAdoptsLegacyVersions: a database migrated by a release before table prefixes,
// its versions in schema_migrations(version, applied_at), is adopted: the versions move to
// gatehouse_schema_migrations, only the later migrations run, and the data stays.
func TestMigrateAdoptsLegacyVersions(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := b.DSN(t)
			old, err := storage.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			if err := old.MigrateTo(ctx, 4); err != nil {
				t.Fatalf("MigrateTo(4): %v", err)
			}
			if err := old.CreateUserWithLegacyKey(ctx, legacyUser("kept", "kept@example.com")); err != nil {
				t.Fatal(err)
			}
			// Put the versions where the old release kept them.
			for _, stmt := range []string{
				`CREATE TABLE schema_migrations (version {int} PRIMARY KEY, applied_at {time} NOT NULL)`,
				`INSERT INTO schema_migrations (version, applied_at) SELECT version, applied_at FROM gatehouse_schema_migrations`,
				`DROP TABLE gatehouse_schema_migrations`,
			} {
				if err := old.ExecSQL(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			_ = old.Close()

			var logs bytes.Buffer
			s, err := storage.Open(ctx, dsn, storage.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			wantSchemaVersion(t, s, storage.LatestSchemaVersion())
			var applied []string
			for line := range strings.Lines(logs.String()) {
				if strings.Contains(line, "applied migration") {
					_, v, _ := strings.Cut(line, "version=")
					applied = append(applied, strings.Fields(v)[0])
				}
			}
			if want := []string{"5", "6", "7", "8"}; !slices.Equal(applied[:min(len(applied), 4)], want) || slices.Contains(applied, "1") {
				t.Errorf("applied migrations: got %v, want the ones after 4 only", applied)
			}
			if !strings.Contains(logs.String(), "adopted") {
				t.Errorf("log %q: want the adoption logged", logs.String())
			}
			if _, err := s.UserByID(ctx, "kept"); err != nil {
				t.Errorf("UserByID(kept): %v, want the user kept", err)
			}
		})
	}
}

// TestMigrateRejectsForeignMigrationsTable: a gatehouse_schema_migrations with other
// columns is not trusted: Migrate fails naming it.
func TestMigrateRejectsForeignMigrationsTable(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, err := storage.Open(ctx, b.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			for _, stmt := range []string{
				`CREATE TABLE gatehouse_schema_migrations (version BIGINT PRIMARY KEY, dirty BOOLEAN NOT NULL)`,
				`INSERT INTO gatehouse_schema_migrations (version, dirty) VALUES (8, FALSE)`,
			} {
				if err := s.ExecSQL(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			err = s.Migrate(ctx)
			if !errors.Is(err, storage.ErrForeignSchema) || !strings.Contains(err.Error(), "gatehouse_schema_migrations") {
				t.Fatalf("Migrate: got %v, want ErrForeignSchema naming gatehouse_schema_migrations", err)
			}
			if _, err := s.ClientByID(ctx, "x"); err == nil || errors.Is(err, storage.ErrNotFound) {
				t.Errorf("ClientByID: got %v, want a missing-table error (nothing migrated)", err)
			}
		})
	}
}

// TestMigrateLogsOnlyCommittedSteps: a step whose transaction rolls back (here its version
// row is refused by a trigger) is not logged as applied, and leaves nothing behind.
func TestMigrateLogsOnlyCommittedSteps(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	s, err := storage.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "g.db"),
		storage.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.MigrateTo(ctx, 0); err != nil {
		t.Fatalf("MigrateTo(0): %v", err)
	}
	err = s.ExecSQL(ctx, `CREATE TRIGGER refuse_v3 BEFORE INSERT ON gatehouse_schema_migrations
		WHEN NEW.version = 3 BEGIN SELECT RAISE(ABORT, 'refused'); END`)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("Migrate: got %v, want version 3 to fail", err)
	}
	if strings.Contains(logs.String(), "version=3") {
		t.Errorf("log %q: version 3 logged as applied, but it rolled back", logs.String())
	}
	if !strings.Contains(logs.String(), "version=2") {
		t.Errorf("log %q: want version 2 logged as applied", logs.String())
	}
	wantSchemaVersion(t, s, 2)
	if _, err := s.QueryInts(ctx, `SELECT COUNT(*) FROM {permissions}`); err == nil {
		t.Errorf("permissions table exists, want it rolled back with version 3")
	}
}

// TestWithPoolLimitsThePool: the limits of WithPool reach the pool Open creates; zero
// fields keep the defaults.
func TestWithPoolLimitsThePool(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		def := 8
		if b.Name == "postgres" {
			def = 25
		}
		for _, c := range []struct {
			name string
			pool storage.Pool
			want int
		}{
			{"zero keeps the default", storage.Pool{}, def},
			{"MaxOpenConns set", storage.Pool{MaxOpenConns: 3, MaxIdleConns: 2}, 3},
			{"negative means no limit", storage.Pool{MaxOpenConns: -1}, 0},
		} {
			t.Run(b.Name+"/"+c.name, func(t *testing.T) {
				s, err := storage.Open(context.Background(), b.DSN(t), storage.WithPool(c.pool))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				sqlDB, err := s.SQLDB()
				if err != nil {
					t.Fatal(err)
				}
				if got := sqlDB.Stats().MaxOpenConnections; got != c.want {
					t.Errorf("MaxOpenConnections: got %d, want %d", got, c.want)
				}
			})
		}
	}
}

// TestPoolKeepsWhatABurstOpened: by default the pool keeps as many idle connections as it
// may open, so the connections a burst of concurrent statements opened are there for the
// next burst instead of being closed as each statement ends and opened again. With the
// 10 idle connections Postgres had, 16 concurrent authorizations closed and reopened
// 30 to 70 connections a second.
func TestPoolKeepsWhatABurstOpened(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		def := 8 // SQLite's MaxOpenConns
		if b.Name == "postgres" {
			def = 12 // more than the 10 idle connections it kept before; it may open 25
		}
		for _, c := range []struct {
			name           string
			pool           storage.Pool
			held, wantIdle int
		}{
			{"default", storage.Pool{}, def, def},
			{"MaxOpenConns set", storage.Pool{MaxOpenConns: 12}, 12, 12},
			{"MaxIdleConns set", storage.Pool{MaxOpenConns: 12, MaxIdleConns: 3}, 12, 3},
		} {
			t.Run(b.Name+"/"+c.name, func(t *testing.T) {
				ctx := context.Background()
				s, err := storage.Open(ctx, b.DSN(t), storage.WithPool(c.pool))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				sqlDB, err := s.SQLDB()
				if err != nil {
					t.Fatal(err)
				}
				conns := make([]*sql.Conn, 0, c.held)
				for range c.held {
					conn, err := sqlDB.Conn(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if err := conn.PingContext(ctx); err != nil {
						t.Fatal(err)
					}
					conns = append(conns, conn)
				}
				for _, conn := range conns {
					_ = conn.Close() // back to the pool
				}
				st := sqlDB.Stats()
				if st.Idle != c.wantIdle || st.MaxIdleClosed != int64(c.held-c.wantIdle) {
					t.Errorf("after %d connections were used at once: %d idle, %d closed as surplus; want %d idle, %d closed",
						c.held, st.Idle, st.MaxIdleClosed, c.wantIdle, c.held-c.wantIdle)
				}
			})
		}
	}
}

// TestCloseLeavesTheCallersPool: a store made by FromDB does not close the caller's pool,
// while one made by Open closes its own.
func TestCloseLeavesTheCallersPool(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "g.db")
	db, err := sql.Open(sqlite.DriverName, path+sqlitePragmas)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := storage.FromDB(db, storage.DialectSQLite)
	if err != nil {
		t.Fatalf("FromDB: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Errorf("caller's pool after Close: %v, want it open", err)
	}

	own, err := storage.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	ownDB, err := own.SQLDB()
	if err != nil {
		t.Fatal(err)
	}
	_ = own.Close()
	if err := ownDB.PingContext(ctx); err == nil {
		t.Errorf("Open's pool after Close: still open, want it closed")
	}
}

func TestFromDBRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	noFK, err := sql.Open(sqlite.DriverName, path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer noFK.Close()
	good, err := sql.Open(sqlite.DriverName, path+sqlitePragmas)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	for _, c := range []struct {
		name    string
		db      *sql.DB
		dialect string
		opts    []storage.Option
		want    string
	}{
		{"an unknown dialect", good, "mysql", nil, `unsupported dialect "mysql"`},
		{"an SQLite pool with foreign keys off", noFK, storage.DialectSQLite, nil, "foreign keys off"},
		{"a prefix with upper case", good, storage.DialectSQLite, []storage.Option{storage.WithTablePrefix("Gate_")}, "table prefix"},
		{"a prefix starting with a digit", good, storage.DialectSQLite, []storage.Option{storage.WithTablePrefix("1gh_")}, "table prefix"},
		{"a prefix with a dash", good, storage.DialectSQLite, []storage.Option{storage.WithTablePrefix("gh-")}, "table prefix"},
		{"a prefix with a quote", good, storage.DialectSQLite, []storage.Option{storage.WithTablePrefix(`gh"; DROP`)}, "table prefix"},
		{"a prefix too long", good, storage.DialectSQLite, []storage.Option{storage.WithTablePrefix(strings.Repeat("g", 25))}, "longer than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := storage.FromDB(c.db, c.dialect, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("FromDB: got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestModelsTakeThePrefix: every GORM model resolves to the table the raw statements and
// migrations name, with and without a prefix.
func TestModelsTakeThePrefix(t *testing.T) {
	for _, prefix := range []string{"", "gh_"} {
		s, err := storage.Open(context.Background(), "sqlite::memory:", storage.WithTablePrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.ModelTableNames()
		_ = s.Close()
		if err != nil {
			t.Fatal(err)
		}
		for logical, table := range got {
			if want := prefix + logical; table != want {
				t.Errorf("prefix %q: model of %s has table %q, want %q", prefix, logical, table, want)
			}
		}
		for _, name := range storage.TableNames() {
			// revocation_rules is only ever reached by raw statements, which name it in braces.
			if _, ok := got[name]; !ok && name != "revocation_rules" {
				t.Errorf("table %s has no model in ModelTableNames", name)
			}
		}
	}
}

// TestPostgresOnlyProgramDoesNotLinkSQLite: a program importing provider and storage but not
// storage/sqlite links no SQLite driver, and its storage.Open("sqlite:…") says which import
// to add.
func TestPostgresOnlyProgramDoesNotLinkSQLite(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const pkg = "github.com/gatehouse-id/gatehouse/storage/testdata/postgresonly"
	out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range []string{"github.com/gatehouse-id/gatehouse/provider", "github.com/jackc/pgx/v5"} {
		if !slices.Contains(strings.Fields(string(out)), dep) {
			t.Fatalf("go list -deps %s: %s missing, want the program to link it", pkg, dep)
		}
	}
	for _, banned := range []string{"github.com/glebarez/", "modernc.org/sqlite"} {
		if strings.Contains(string(out), banned) {
			t.Errorf("go list -deps %s: links %s, want no SQLite driver", pkg, banned)
		}
	}
	run, err := exec.Command(gobin, "run", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, run)
	}
	if want := `import _ "github.com/gatehouse-id/gatehouse/storage/sqlite"`; !strings.Contains(string(run), want) {
		t.Errorf("storage.Open(sqlite:…) without the driver said %q, want it to name %s", run, want)
	}
}
