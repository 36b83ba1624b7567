package provider

// PermissionsConfig configures the per-application permission routes.
type PermissionsConfig struct{}

// withDefaults returns c with every zero field set to its documented default, or an error
// naming every invalid field.
func (c PermissionsConfig) withDefaults() (PermissionsConfig, error) {
	return c, nil
}
