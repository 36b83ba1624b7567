package storage

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// accountTables are the tables whose rows refer to an account by its id (user_id) and, up
// to v8, had a foreign key to users(id). From v9 on an account may live outside Gatehouse
// (provider.WithAccounts), so these rows refer to it by the id string alone; their foreign
// keys to clients stay.
var accountTables = []string{"sessions", "consents", "one_time_tokens", "pin_challenges", "permissions", "user_identities"}

// usersReference is how every foreign key to users was declared (v1 to v4), with the
// store's table prefix.
func usersReference(n schemaNames) string {
	return "REFERENCES " + n.table("users") + " (id) ON DELETE CASCADE"
}

// migrateV9 drops the foreign keys from accountTables to users. Without their cascades,
// DeleteUser deletes those rows itself.
//
// Postgres drops each constraint by the name the catalog gives it. SQLite cannot drop a
// constraint: each table is rebuilt inside the migration's transaction from its own stored
// definition minus the reference (create the new table, copy the rows, drop the old one,
// rename, recreate its indexes). The foreign_keys pragma cannot change inside a
// transaction, and need not: no table refers to the rebuilt ones, so dropping them checks
// nothing, and the rows copied keep their references to clients.
func migrateV9(tx *gorm.DB, n schemaNames) error {
	for _, table := range accountTables {
		var err error
		if n.dialect == dialectPostgres {
			err = dropUsersForeignKeysPostgres(tx, n, table)
		} else {
			err = dropUsersForeignKeysSQLite(tx, n, table)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	return nil
}

// dropUsersForeignKeysPostgres drops every foreign key of table that refers to users.
func dropUsersForeignKeysPostgres(tx *gorm.DB, n schemaNames, logical string) error {
	table := n.table(logical)
	var names []string
	err := scan(tx.Raw(`SELECT conname FROM pg_constraint
		WHERE contype = 'f' AND conrelid = to_regclass(?) AND confrelid = to_regclass(?)`, table, n.table("users")), &names)
	if err != nil {
		return fmt.Errorf("find foreign keys to users: %w", err)
	}
	if len(names) == 0 {
		return fmt.Errorf("no foreign key to users found")
	}
	for _, name := range names {
		if err := tx.Exec(`ALTER TABLE ` + table + ` DROP CONSTRAINT ` + quoteIdent(name)).Error; err != nil {
			return fmt.Errorf("drop constraint %s: %w", name, err)
		}
	}
	return nil
}

// quoteIdent quotes a Postgres identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// dropUsersForeignKeysSQLite rebuilds table without its reference to users.
func dropUsersForeignKeysSQLite(tx *gorm.DB, n schemaNames, logical string) error {
	table, reference := n.table(logical), usersReference(n)
	var def string
	if err := scan(tx.Raw(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table), &def); err != nil {
		return fmt.Errorf("read definition: %w", err)
	}
	var indexes []string
	err := scan(tx.Raw(`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`, table), &indexes)
	if err != nil {
		return fmt.Errorf("read indexes: %w", err)
	}
	head := "CREATE TABLE " + table + " ("
	if !strings.HasPrefix(def, head) || strings.Count(def, reference) != 1 {
		return fmt.Errorf("unexpected definition %q", def)
	}
	rebuilt := table + "_v9"
	def = "CREATE TABLE " + rebuilt + " (" + strings.TrimPrefix(def, head)
	def = strings.Replace(def, " "+reference, "", 1)
	for _, stmt := range []string{
		def,
		`INSERT INTO ` + rebuilt + ` SELECT * FROM ` + table,
		`DROP TABLE ` + table,
		`ALTER TABLE ` + rebuilt + ` RENAME TO ` + table,
	} {
		if err := tx.Exec(stmt).Error; err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
	}
	for _, index := range indexes {
		if err := tx.Exec(index).Error; err != nil {
			return fmt.Errorf("recreate index: %w", err)
		}
	}
	return nil
}
