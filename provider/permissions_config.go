package provider

// PermissionsConfig configures the per-application permission routes.
type PermissionsConfig struct {
	// KeepTokensOnRevoke leaves a user's tokens alone when a permission DELETE (client- or
	// admin-managed) revokes their access to an application. Default false: the revocation
	// also deletes the user's access tokens for that client and deactivates their refresh
	// tokens, in the same transaction, so the application cannot keep acting for the user
	// with tokens issued before the revocation.
	KeepTokensOnRevoke bool
}
