package server

import "github.com/gatehouse-id/gatehouse/provider"

// addOutboundFlags adds the serve flags of Gatehouse's requests to URLs clients supplied
// (jwks_uri, backchannel_logout_uri) to c.
func addOutboundFlags(c *command, cfg *provider.Config) {
	c.boolVar(&cfg.InsecureAllowPrivateClientURLs, "insecure-allow-private-client-urls", "GATEHOUSE_INSECURE_ALLOW_PRIVATE_CLIENT_URLS", false,
		"DEVELOPMENT ONLY: let dynamically registered clients name jwks_uri and backchannel_logout_uri on\n"+
			"      loopback, private and link-local addresses (and http on loopback), and let Gatehouse's requests reach them;\n"+
			"      anyone who may register a client could then make the server send requests into its network")
}
