package server

import "github.com/gatehouse-id/gatehouse/provider"

// addSocialFlags registers the serve flags of the social and upstream OpenID Connect login settings.
func addSocialFlags(c *command, cfg *provider.SocialConfig) {
}
