package storage

// schemaV4 creates the identities linked from social and upstream OpenID Connect providers.
func schemaV4() []string {
	return []string{}
}
