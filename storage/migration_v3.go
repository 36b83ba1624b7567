package storage

// schemaV3 creates the per-application permission records and their audit log.
func schemaV3() []string {
	return []string{}
}
