package storage

import (
	"strings"

	"gorm.io/gorm/schema"
)

// schemaNames is the one place that turns the SQL written in this package into the SQL a
// store runs: it applies the table prefix (WithTablePrefix) to every table and index name
// and the dialect's column types. Raw statements name tables and indexes in braces,
// "SELECT … FROM {users} JOIN {sessions} …", and column types as {text}, {int}, {bool},
// {time} and {blob}; GORM models reach the prefix through namingStrategy.
type schemaNames struct {
	dialect dialect
	prefix  string
}

// columnTypes maps the column type placeholders to each dialect's types. SQLite's time
// type must be DATETIME: the driver parses only DATE, DATETIME and TIMESTAMP columns back
// into time.Time.
var columnTypes = map[dialect]map[string]string{
	dialectPostgres: {"text": "TEXT", "int": "BIGINT", "bool": "BOOLEAN", "time": "TIMESTAMPTZ", "blob": "BYTEA"},
	dialectSQLite:   {"text": "TEXT", "int": "INTEGER", "bool": "BOOLEAN", "time": "DATETIME", "blob": "BLOB"},
}

// sql replaces each placeholder of stmt, a {name} whose name is a lower-case letter then
// lower-case letters, digits and underscores: a column type with the dialect's, any other
// name with the prefixed table or index name. A brace that starts no placeholder stays. It
// runs on every raw statement, so it scans by hand: a regular expression's
// ReplaceAllStringFunc was 5% of the server's CPU during authorize.
func (n schemaNames) sql(stmt string) string {
	i := strings.IndexByte(stmt, '{')
	if i < 0 {
		return stmt
	}
	var b strings.Builder
	b.Grow(len(stmt) + 4*len(n.prefix))
	rest := stmt
	for ; i >= 0; i = strings.IndexByte(rest, '{') {
		end := placeholderLen(rest[i:])
		if end == 0 {
			b.WriteString(rest[:i+1])
			rest = rest[i+1:]
			continue
		}
		b.WriteString(rest[:i])
		name := rest[i+1 : i+end-1]
		if t, ok := columnTypes[n.dialect][name]; ok {
			b.WriteString(t)
		} else {
			b.WriteString(n.table(name))
		}
		rest = rest[i+end:]
	}
	b.WriteString(rest)
	return b.String()
}

// placeholderLen is the length of the placeholder s starts with ("{users}": 7), 0 when s
// starts with none.
func placeholderLen(s string) int {
	if len(s) < 3 || s[0] != '{' || s[1] < 'a' || s[1] > 'z' {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c == '}':
			return i + 1
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		default:
			return 0
		}
	}
	return 0
}

// table is the name in the database of the table or index Gatehouse calls name.
func (n schemaNames) table(name string) string {
	return n.prefix + name
}

// migrationsTable is the table Migrate keeps the applied versions in: the prefixed
// schema_migrations, with "gatehouse_" standing in for an empty prefix (see WithTablePrefix).
func (n schemaNames) migrationsTable() string {
	if n.prefix == "" {
		return "gatehouse_schema_migrations"
	}
	return n.prefix + "schema_migrations"
}

// namingStrategy gives GORM the prefix: every model's TableName(schema.Namer) passes its
// logical name through it, which yields table(name).
func (n schemaNames) namingStrategy() schema.NamingStrategy {
	return schema.NamingStrategy{TablePrefix: n.prefix, SingularTable: true, IdentifierMaxLength: 64}
}

// sql is s.names.sql: stmt with its placeholders replaced for this store.
func (s *Store) sql(stmt string) string {
	return s.names.sql(stmt)
}
