package storage

// schemaV6 marks clients registered as resource servers: they may introspect tokens issued
// for their audience. Every existing client stays an ordinary client.
func schemaV6() []string {
	return []string{
		`ALTER TABLE {clients} ADD COLUMN resource_server {bool} NOT NULL DEFAULT FALSE`,
	}
}
