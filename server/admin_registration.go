package server

import (
	"context"

	"github.com/gatehouse-id/gatehouse/provider"
)

// addDynamicRegistrationFlags adds the serve flags of dynamic client registration (RFC
// 7591) to c.
func addDynamicRegistrationFlags(c *command, cfg *provider.Config) {
	c.boolVar(&cfg.OpenRegistration, "open-registration", "GATEHOUSE_OPEN_REGISTRATION", false,
		"anyone may register a client at /api/oauth/register without an initial access token\n"+
			"      (default: only with a token from `gatehouse client registration-token create`)")
	c.boolVar(&cfg.AllowRegisteredClientCredentials, "registration-client-credentials", "GATEHOUSE_REGISTRATION_CLIENT_CREDENTIALS", false,
		"clients registering themselves at /api/oauth/register may register the client_credentials\n"+
			"      grant (default: refused with invalid_client_metadata; operator-created clients may have it)")
}

// clientRegistrationTokenCreate issues an initial access token for dynamic client
// registration and prints it, once.
func (c *cli) clientRegistrationTokenCreate(ctx context.Context, args []string) int {
	cmd := newCommand("client registration-token create", "gatehouse client registration-token create --expires DURATION [--max-uses N] [flags]",
		"Issues an initial access token for dynamic client registration (RFC 7591): a client sends\n"+
			"it as \"Authorization: Bearer TOKEN\" to POST /api/oauth/register. It is printed as JSON\n"+
			"this once (it is stored only as a hash): keep it.")
	var spec provider.RegistrationTokenSpec
	cmd.durationVar(&spec.ExpiresIn, "expires", "", 0, "how long the token is accepted, e.g. 24h (required, at most 8760h)")
	cmd.intVar(&spec.MaxUses, "max-uses", "", "how many clients it may register (default 0: any number until it expires)")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		if spec.ExpiresIn <= 0 {
			return usageError("--expires is required, e.g. --expires 24h")
		}
		if spec.ExpiresIn > provider.MaxRegistrationTokenLifetime {
			return usageError("--expires must be at most 8760h")
		}
		return c.withProvider(ctx, a, func(p *provider.Provider) error {
			info, err := p.CreateRegistrationToken(ctx, spec)
			if err != nil {
				return err
			}
			return c.printJSON(info)
		})
	})
}
