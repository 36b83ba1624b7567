package server

import "github.com/gatehouse-id/gatehouse/provider"

// addPermissionFlags registers the serve flags of the permission route settings.
func addPermissionFlags(c *command, cfg *provider.PermissionsConfig) {
	c.boolVar(&cfg.KeepTokensOnRevoke, "permissions-keep-tokens-on-revoke", "GATEHOUSE_PERMISSIONS_KEEP_TOKENS_ON_REVOKE", false,
		"keep a user's tokens for an application when their permission is revoked\n"+
			"      (default: the revocation also revokes their access and refresh tokens for it)")
}
