package provider

// PublicAuthConfig configures public authentication beyond passwords and sessions.
type PublicAuthConfig struct{}

// withDefaults returns c with every zero field set to its documented default, or an error
// naming every invalid field.
func (c PublicAuthConfig) withDefaults() (PublicAuthConfig, error) {
	return c, nil
}
