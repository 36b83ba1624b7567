package server

import "github.com/gatehouse-id/gatehouse/provider"

// addPARFlags adds the serve flags of pushed authorization requests (RFC 9126) to c.
func addPARFlags(c *command, cfg *provider.Config) {
	c.boolVar(&cfg.RequirePAR, "require-par", "GATEHOUSE_REQUIRE_PAR", false,
		"every client must push its authorization requests to /api/oauth/par (RFC 9126)\n"+
			"      (default: only clients created with --require-par must)")
}
