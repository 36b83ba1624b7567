package server

import "github.com/gatehouse-id/gatehouse/provider"

// addPublicAuthFlags registers the serve flags of the mail, PIN gate, magic link and rate limit settings.
func addPublicAuthFlags(c *command, cfg *provider.PublicAuthConfig) {
}
