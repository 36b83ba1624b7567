package storage

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// placeholderRE is what schemaNames.sql replaces, as a regular expression: the reference
// its hand-written scan must agree with.
var placeholderRE = regexp.MustCompile(`\{([a-z][a-z0-9_]*)\}`)

// sqlByRegexp is schemaNames.sql written with placeholderRE.
func (n schemaNames) sqlByRegexp(stmt string) string {
	return placeholderRE.ReplaceAllStringFunc(stmt, func(m string) string {
		name := m[1 : len(m)-1]
		if t, ok := columnTypes[n.dialect][name]; ok {
			return t
		}
		return n.table(name)
	})
}

// TestSchemaNamesSQL checks the placeholder replacement against the regular expression
// that defines it, on statements as the package writes them, on edge cases of braces, and
// on random strings over the characters that matter.
func TestSchemaNamesSQL(t *testing.T) {
	names := []schemaNames{{dialect: dialectPostgres}, {dialect: dialectSQLite, prefix: "gh_"}}
	cases := []string{
		"", "SELECT 1", "{", "}", "{}", "{{}}", "{users}", "{{users}}", "{users", "users}", "{Users}",
		"{1users}", "{_users}", "{users_2}", "{a}", "{a{b}", "{a}{b}", "x{a-b}y{c}", "{users }", "{ users}",
		"{text}", "{int} {bool} {time} {blob} {texts}", "{users}.id = {sessions}.user_id",
		`WITH session AS (SELECT sid FROM {sessions} WHERE sid = ? FOR SHARE) SELECT '{"a":1}', '{x}'`,
		"CREATE TABLE {users} (id {text} PRIMARY KEY, n {int}, at {time})", "é{users}ü{ü}",
	}
	alphabet := []byte("{}ab_z09A -é")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, n := range names {
		for _, stmt := range cases {
			if got, want := n.sql(stmt), n.sqlByRegexp(stmt); got != want {
				t.Errorf("%+v.sql(%q) = %q, want %q", n, stmt, got, want)
			}
		}
	}
	if got := (schemaNames{dialect: dialectSQLite, prefix: "p_"}).sql("SELECT {users}.id {time} FROM {users}"); got != "SELECT p_users.id DATETIME FROM p_users" {
		t.Errorf("got %q", got)
	}
}

func BenchmarkSchemaNamesSQL(b *testing.B) {
	n := schemaNames{dialect: dialectPostgres}
	stmt := `SELECT {sessions}.id_hash, {sessions}.sid FROM {sessions} LEFT JOIN {users} ON {users}.id = {sessions}.user_id WHERE {sessions}.id_hash = ?`
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			_ = n.sql(stmt)
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			_ = n.sqlByRegexp(stmt)
		}
	})
}
