package server

import (
	"os"
	"strings"

	"github.com/gatehouse-id/gatehouse/provider"
)

// clientAuthFlags are the client authentication flags of client create and client update:
// --auth-method, --jwks-uri, --jwks FILE and --request-object-alg.
type clientAuthFlags struct {
	cmd                                  *command
	method, jwksURI, jwksFile, objectAlg string
}

func addClientAuthFlags(cmd *command) *clientAuthFlags {
	f := &clientAuthFlags{cmd: cmd}
	cmd.str(&f.method, "auth-method", "METHOD", "", "client authentication method: client_secret_basic (default for a confidential client), client_secret_post, client_secret_jwt, private_key_jwt or none (public clients)")
	cmd.str(&f.jwksURI, "jwks-uri", "URL", "", "where the client publishes its public keys (https), for private_key_jwt and request objects")
	cmd.str(&f.jwksFile, "jwks", "FILE", "", "file holding the client's JSON Web Key Set (public keys only), for private_key_jwt and request objects")
	cmd.str(&f.objectAlg, "request-object-alg", "ALG", "", "the only algorithm the client's request objects may be signed with, e.g. RS256 or ES256 (default: any supported)")
	return f
}

// jwks reads the --jwks file; nil when the flag was not given or is empty.
func (f *clientAuthFlags) jwks() ([]byte, error) {
	if f.jwksFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(f.jwksFile)
	if err != nil {
		return nil, usageError("--jwks: %v", err)
	}
	return b, nil
}

// applyToSpec sets the flags' values on a client to create.
func (f *clientAuthFlags) applyToSpec(spec *provider.ClientSpec) error {
	jwks, err := f.jwks()
	if err != nil {
		return err
	}
	spec.AuthMethod, spec.JWKSURI, spec.JWKS = strings.ToLower(f.method), f.jwksURI, jwks
	spec.RequestObjectAlg = f.objectAlg
	return nil
}

// applyToUpdate sets the flags given on a client update; an empty --jwks-uri= or --jwks=
// removes the setting.
func (f *clientAuthFlags) applyToUpdate(up *provider.ClientUpdate) error {
	if f.cmd.given("auth-method") {
		method := strings.ToLower(f.method)
		up.AuthMethod = &method
	}
	if f.cmd.given("jwks-uri") {
		up.JWKSURI = &f.jwksURI
	}
	if f.cmd.given("jwks") {
		jwks, err := f.jwks()
		if err != nil {
			return err
		}
		up.JWKS = &jwks
	}
	if f.cmd.given("request-object-alg") {
		up.RequestObjectAlg = &f.objectAlg
	}
	return nil
}
