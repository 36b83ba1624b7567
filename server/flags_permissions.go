package server

import "github.com/gatehouse-id/gatehouse/provider"

// addPermissionFlags registers the serve flags of the permission route settings.
func addPermissionFlags(c *command, cfg *provider.PermissionsConfig) {
}
