package provider

// SocialConfig configures social and upstream OpenID Connect login.
type SocialConfig struct{}

// withDefaults returns c with every zero field set to its documented default, or an error
// naming every invalid field.
func (c SocialConfig) withDefaults(issuer string) (SocialConfig, error) {
	return c, nil
}
