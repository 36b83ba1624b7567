package storage

import (
	"regexp"

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

// placeholder matches a {name} in a statement.
var placeholder = regexp.MustCompile(`\{([a-z][a-z0-9_]*)\}`)

// columnTypes maps the column type placeholders to each dialect's types. SQLite's time
// type must be DATETIME: the driver parses only DATE, DATETIME and TIMESTAMP columns back
// into time.Time.
var columnTypes = map[dialect]map[string]string{
	dialectPostgres: {"text": "TEXT", "int": "BIGINT", "bool": "BOOLEAN", "time": "TIMESTAMPTZ", "blob": "BYTEA"},
	dialectSQLite:   {"text": "TEXT", "int": "INTEGER", "bool": "BOOLEAN", "time": "DATETIME", "blob": "BLOB"},
}

// sql replaces each placeholder of stmt: a column type with the dialect's, any other name
// with the prefixed table or index name.
func (n schemaNames) sql(stmt string) string {
	return placeholder.ReplaceAllStringFunc(stmt, func(m string) string {
		name := m[1 : len(m)-1]
		if t, ok := columnTypes[n.dialect][name]; ok {
			return t
		}
		return n.table(name)
	})
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
