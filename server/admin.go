package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehouse-id/gatehouse/provider"
)

// adminFlags are the flags of every subcommand that opens the provider to administer it.
type adminFlags struct {
	dsn   string
	level slog.Level
	store *storeSettings
}

func addAdminFlags(cmd *command) *adminFlags {
	a := &adminFlags{}
	a.store = addStoreFlags(cmd, &a.dsn)
	cmd.levelVar(&a.level, "log-level", "GATEHOUSE_LOG_LEVEL", slog.LevelInfo, "debug, info, warn or error")
	return a
}

// withProvider opens a provider on the configured database (applying pending migrations, as
// serve does, without any background work), calls f, and closes it.
func (c *cli) withProvider(ctx context.Context, a *adminFlags, f func(*provider.Provider) error) error {
	logger := newLogger(c.stderr, a.level)
	secret, err := loadSecret(a.store.secretBytes(), a.dsn, c.random, logger)
	if err != nil {
		return err
	}
	// Servers rotate keys on schedule; an admin command rotates only when asked (keys rotate).
	p, err := provider.New(provider.Config{DSN: a.dsn, Secret: secret, JanitorInterval: -1, KeyRotationInterval: -1},
		provider.WithLogger(logger))
	if err != nil {
		return err
	}
	err = f(p)
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// printFound opens the provider, runs call on it and prints its result as JSON; an error
// matching provider.ErrNotFound is reported as notFound.
func printFound[T any](ctx context.Context, c *cli, a *adminFlags, notFound string, call func(*provider.Provider) (T, error)) error {
	return c.withProvider(ctx, a, func(p *provider.Provider) error {
		v, err := call(p)
		if errors.Is(err, provider.ErrNotFound) {
			return errors.New(notFound)
		}
		if err != nil {
			return err
		}
		return c.printJSON(v)
	})
}

func (c *cli) migrate(ctx context.Context, args []string) int {
	cmd := newCommand("migrate", "gatehouse migrate [flags]",
		"Applies the pending database migrations and exits. serve applies them at start-up\n"+
			"too unless --skip-migrate is given. With --secret (or GATEHOUSE_SECRET) it also\n"+
			"checks that the secret opens the stored signing keys, creating the first keys of a\n"+
			"new database, so a wrong secret is found before the server is deployed.")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		if err := provider.Migrate(ctx, a.dsn); err != nil {
			return err
		}
		if a.store.secretBytes() != nil {
			if err := c.withProvider(ctx, a, func(*provider.Provider) error { return nil }); err != nil {
				return err
			}
		}
		newLogger(c.stderr, a.level).InfoContext(ctx, "database schema is up to date")
		return nil
	})
}

func (c *cli) clientCreate(ctx context.Context, args []string) int {
	cmd := newCommand("client create", "gatehouse client create [flags]",
		"Registers an OAuth 2.0 / OpenID Connect client and prints it as JSON. A confidential\n"+
			"client's secret is printed this once (it is stored only as a keyed hash): keep it.\n"+
			"Scopes default to \"openid profile email offline_access\", grant types to\n"+
			"authorization_code and refresh_token.")
	var spec provider.ClientSpec
	var scopes []string
	cmd.str(&spec.ID, "id", "ID", "", "client id (default: a generated UUID)")
	cmd.secretVar(&spec.Secret, "client-secret", "SECRET", "", "client secret of a confidential client (default: 256 random bits)")
	cmd.str(&spec.Name, "name", "NAME", "", "display name, shown on the consent page")
	cmd.listVar(&spec.RedirectURIs, "redirect-uri", "URI", "allowed redirect URI")
	cmd.listVar(&spec.PostLogoutRedirectURIs, "post-logout-redirect-uri", "URI", "allowed post-logout redirect URI")
	cmd.listVar(&scopes, "scope", "SCOPES", `allowed scopes, space-separated ("openid profile email")`)
	cmd.listVar(&spec.GrantTypes, "grant-type", "TYPE", "allowed grant type: authorization_code, refresh_token, client_credentials or urn:ietf:params:oauth:grant-type:device_code")
	cmd.listVar(&spec.Audience, "audience", "URI", "audience the client may ask tokens for (audience or resource parameter), e.g. an API's URI or a resource server's client id")
	cmd.flag(&spec.Public, "public", "public client (no secret; PKCE only), e.g. a single-page or mobile app")
	cmd.flag(&spec.FirstParty, "first-party", "first-party client: users are not asked for consent")
	cmd.flag(&spec.ResourceServer, "resource-server", "resource server: may introspect tokens whose audience contains its client id")
	cmd.str(&spec.IDTokenAlg, "id-token-alg", "RS256|ES256|EdDSA", "", "ID token signing algorithm (default RS256)")
	cmd.flag(&spec.RequirePAR, "require-par", "the client must push its authorization requests to /api/oauth/par (RFC 9126)")
	cmd.flag(&spec.RequireDPoP, "require-dpop", "every token request must carry a DPoP proof (RFC 9449), binding each token to the client's key")
	auth := addClientAuthFlags(cmd)
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		spec.Scopes = splitScopes(scopes)
		if err := auth.applyToSpec(&spec); err != nil {
			return err
		}
		var err error
		if spec.IDTokenAlg, err = idTokenAlg(spec.IDTokenAlg); err != nil {
			return err
		}
		if spec.Public && spec.Secret != "" {
			return usageError("a --public client has no --client-secret")
		}
		return c.withProvider(ctx, a, func(p *provider.Provider) error {
			info, err := p.CreateClient(ctx, spec)
			if err != nil {
				return err
			}
			return c.printJSON(info)
		})
	})
}

// splitScopes splits each value of --scope, a space-separated list, into scopes.
func splitScopes(values []string) []string {
	var scopes []string
	for _, v := range values {
		scopes = append(scopes, strings.Fields(v)...)
	}
	return scopes
}

// idTokenAlg checks the value of --id-token-alg, in any case (as --access-token-alg: es256
// is ES256, eddsa is EdDSA); empty stays empty.
func idTokenAlg(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	for _, alg := range []string{provider.AlgRS256, provider.AlgES256, provider.AlgEdDSA} {
		if strings.EqualFold(v, alg) {
			return alg, nil
		}
	}
	return "", usageError("--id-token-alg must be RS256, ES256 or EdDSA")
}

// optionalBool parses the value of a true|false flag: nil when it was not given.
func optionalBool(name, value string) (*bool, error) {
	if value == "" {
		return nil, nil
	}
	on, err := strconv.ParseBool(value)
	if err != nil {
		return nil, usageError("--%s must be true or false", name)
	}
	return &on, nil
}

func (c *cli) clientUpdate(ctx context.Context, args []string) int {
	cmd := newCommand("client update", "gatehouse client update --id ID [flags]",
		"Changes the settings given of an existing client, keeps the others, and prints it as\n"+
			"JSON (its secret only when a change of --auth-method issued one). A list flag given replaces the whole list; given only with an\n"+
			"empty value (--post-logout-redirect-uri=) it empties it. Removing a redirect URI\n"+
			"revokes the unused authorization codes issued for it. A client stays public or\n"+
			"confidential: delete it and create it again to change that.")
	var id, name, alg, firstParty, resourceServer, requirePAR, requireDPoP string
	var redirectURIs, postLogoutURIs, scopes, grantTypes, audience []string
	cmd.str(&id, "id", "ID", "", "client id (required)")
	cmd.str(&name, "name", "NAME", "", "display name, shown on the consent page")
	cmd.listVar(&redirectURIs, "redirect-uri", "URI", "allowed redirect URI, replacing the list")
	cmd.listVar(&postLogoutURIs, "post-logout-redirect-uri", "URI", "allowed post-logout redirect URI, replacing the list")
	cmd.listVar(&scopes, "scope", "SCOPES", `allowed scopes, space-separated, replacing the list (empty: the default)`)
	cmd.listVar(&grantTypes, "grant-type", "TYPE", "allowed grant type, replacing the list (empty: the default)")
	cmd.listVar(&audience, "audience", "URI", "audience the client may ask tokens for, replacing the list")
	cmd.str(&firstParty, "first-party", "true|false", "", "skip the consent page")
	cmd.str(&resourceServer, "resource-server", "true|false", "", "may introspect tokens whose audience contains its client id")
	cmd.str(&alg, "id-token-alg", "RS256|ES256|EdDSA", "", "ID token signing algorithm")
	cmd.str(&requirePAR, "require-par", "true|false", "", "must push its authorization requests to /api/oauth/par (RFC 9126)")
	cmd.str(&requireDPoP, "require-dpop", "true|false", "", "every token request must carry a DPoP proof")
	auth := addClientAuthFlags(cmd)
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		if id == "" {
			return usageError("--id is required")
		}
		var up provider.ClientUpdate
		if cmd.given("name") {
			up.Name = &name
		}
		for _, l := range []struct {
			flag   string
			values []string
			dst    **[]string
		}{
			{"redirect-uri", redirectURIs, &up.RedirectURIs},
			{"post-logout-redirect-uri", postLogoutURIs, &up.PostLogoutRedirectURIs},
			{"scope", splitScopes(scopes), &up.Scopes},
			{"grant-type", grantTypes, &up.GrantTypes},
			{"audience", audience, &up.Audience},
		} {
			if cmd.given(l.flag) {
				list := slices.DeleteFunc(l.values, func(v string) bool { return v == "" })
				*l.dst = &list
			}
		}
		var err error
		if up.FirstParty, err = optionalBool("first-party", firstParty); err != nil {
			return err
		}
		if up.ResourceServer, err = optionalBool("resource-server", resourceServer); err != nil {
			return err
		}
		if up.RequirePAR, err = optionalBool("require-par", requirePAR); err != nil {
			return err
		}
		if up.RequireDPoP, err = optionalBool("require-dpop", requireDPoP); err != nil {
			return err
		}
		if cmd.given("id-token-alg") {
			if alg, err = idTokenAlg(alg); err != nil {
				return err
			}
			up.IDTokenAlg = &alg
		}
		if err := auth.applyToUpdate(&up); err != nil {
			return err
		}
		if up == (provider.ClientUpdate{}) {
			return usageError("give at least one setting to change")
		}
		return printFound(ctx, c, a, fmt.Sprintf("no client with id %q", id), func(p *provider.Provider) (provider.ClientInfo, error) {
			return p.UpdateClient(ctx, id, up)
		})
	})
}

func (c *cli) clientRotateSecret(ctx context.Context, args []string) int {
	cmd := newCommand("client rotate-secret", "gatehouse client rotate-secret --id ID [flags]",
		"Gives a confidential client a new secret of 256 random bits and prints it as JSON, this\n"+
			"once (it is stored only as a keyed hash): keep it. The old secret stops working at once.")
	var id string
	cmd.str(&id, "id", "ID", "", "client id (required)")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		if id == "" {
			return usageError("--id is required")
		}
		return printFound(ctx, c, a, fmt.Sprintf("no client with id %q", id), func(p *provider.Provider) (map[string]string, error) {
			secret, err := p.RotateClientSecret(ctx, id)
			return map[string]string{"client_id": id, "client_secret": secret}, err
		})
	})
}

func (c *cli) clientList(ctx context.Context, args []string) int {
	cmd := newCommand("client list", "gatehouse client list [flags]",
		"Prints every registered client as a JSON array (secrets are never shown).")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		return c.withProvider(ctx, a, func(p *provider.Provider) error {
			clients, err := p.ListClients(ctx)
			if err != nil {
				return err
			}
			if clients == nil {
				clients = []provider.ClientInfo{}
			}
			return c.printJSON(clients)
		})
	})
}

func (c *cli) clientDelete(ctx context.Context, args []string) int {
	cmd := newCommand("client delete", "gatehouse client delete --id ID [flags]",
		"Deletes a client; its tokens stop working.")
	var id string
	cmd.str(&id, "id", "ID", "", "client id (required)")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		if id == "" {
			return usageError("--id is required")
		}
		return printFound(ctx, c, a, fmt.Sprintf("no client with id %q", id), func(p *provider.Provider) (map[string]any, error) {
			return map[string]any{"client_id": id, "deleted": true}, p.DeleteClient(ctx, id)
		})
	})
}

func (c *cli) userCreate(ctx context.Context, args []string) int {
	cmd := newCommand("user create", "gatehouse user create --email EMAIL --password PASSWORD [flags]",
		"Creates a user who can log in with email and password, and prints it as JSON.")
	var spec provider.UserSpec
	cmd.str(&spec.Email, "email", "EMAIL", "", "email address (required)")
	cmd.secretVar(&spec.Password, "password", "PASSWORD", "", "password (required, or --password-file)")
	cmd.str(&spec.Name, "name", "NAME", "", "display name (default: the email's local part)")
	cmd.str(&spec.Role, "role", "user|admin", "user", "role")
	cmd.flag(&spec.Verified, "verified", "mark the email address as verified")
	cmd.flag(&spec.RequirePIN, "require-pin", "ask this user for a PIN sent by mail after each password or magic-link login")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		if spec.Email == "" || spec.Password == "" {
			return usageError("--email and --password are required")
		}
		if spec.Role != "user" && spec.Role != "admin" {
			return usageError("--role must be user or admin")
		}
		return c.withProvider(ctx, a, func(p *provider.Provider) error {
			u, err := p.CreateUser(ctx, spec)
			if err != nil {
				return err
			}
			return c.printJSON(u)
		})
	})
}

func (c *cli) userUpdate(ctx context.Context, args []string) int {
	cmd := newCommand("user update", "gatehouse user update --user ID|EMAIL [--require-pin=true|false] [--disabled=true|false] [--phone-number E164] [--phone-number-verified=true|false] [flags]",
		"Changes an existing user and prints it as JSON. --require-pin turns the PIN gate on or\n"+
			"off for that user. --disabled=true disables the account: it can no longer log in, and\n"+
			"its sessions, access tokens, refresh tokens and consents are revoked at once;\n"+
			"--disabled=false enables it again (nothing revoked comes back). --phone-number sets the\n"+
			"phone_number claim (a new number is unverified) and --phone-number-verified vouches\n"+
			"for it, which users cannot do themselves.")
	var user, requirePIN, disabled, phone, phoneVerified string
	cmd.str(&user, "user", "ID|EMAIL", "", "the user's id or email address (required)")
	cmd.str(&requirePIN, "require-pin", "true|false", "", "ask for a PIN sent by mail after each password or magic-link login")
	cmd.str(&disabled, "disabled", "true|false", "", "disable the account and revoke everything issued to it, or enable it again")
	cmd.str(&phone, "phone-number", "E164", "", "the user's phone number, e.g. +14155550100")
	cmd.str(&phoneVerified, "phone-number-verified", "true|false", "", "whether the phone number is verified")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		if user == "" {
			return usageError("--user is required")
		}
		if requirePIN == "" && disabled == "" && phone == "" && phoneVerified == "" {
			return usageError("--require-pin, --disabled, --phone-number or --phone-number-verified is required")
		}
		var up provider.UserUpdate
		var err error
		if up.RequirePIN, err = optionalBool("require-pin", requirePIN); err != nil {
			return err
		}
		if up.Disabled, err = optionalBool("disabled", disabled); err != nil {
			return err
		}
		if up.Profile.PhoneNumberVerified, err = optionalBool("phone-number-verified", phoneVerified); err != nil {
			return err
		}
		if phone != "" {
			up.Profile.PhoneNumber = &phone
		}
		return printFound(ctx, c, a, fmt.Sprintf("no user with id or email %q", user), func(p *provider.Provider) (provider.UserInfo, error) {
			return p.UpdateUser(ctx, user, up)
		})
	})
}

func (c *cli) userDelete(ctx context.Context, args []string) int {
	cmd := newCommand("user delete", "gatehouse user delete --user ID|EMAIL [flags]",
		"Deletes a user and, in one transaction, everything of theirs: tokens, refresh tokens\n"+
			"and codes (refused at once), consents, sessions, PIN challenges, mailed links,\n"+
			"linked social accounts and permission records. The email address can register again.")
	var user string
	cmd.str(&user, "user", "ID|EMAIL", "", "the user's id or email address (required)")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		if user == "" {
			return usageError("--user is required")
		}
		return printFound(ctx, c, a, fmt.Sprintf("no user with id or email %q", user), func(p *provider.Provider) (map[string]any, error) {
			return map[string]any{"user": user, "deleted": true}, p.DeleteUser(ctx, user)
		})
	})
}

func (c *cli) keysRotate(ctx context.Context, args []string) int {
	cmd := newCommand("keys rotate", "gatehouse keys rotate [flags]",
		"Adds a new RS256, ES256 and EdDSA signing key and prints the published key set as\n"+
			"JSON. Servers also rotate on their own schedule (--key-rotation-interval).\n"+
			"Running servers publish the new keys within their key reload interval and sign\n"+
			"with them from one and a half intervals after the rotation, when every replica\n"+
			"publishes them. Tokens signed with the previous keys stay valid while those keys\n"+
			"are published, until everything they signed has expired.")
	a := addAdminFlags(cmd)
	return c.execute(ctx, cmd, args, func(ctx context.Context) error {
		return c.withProvider(ctx, a, func(p *provider.Provider) error {
			keys, err := p.RotateKeys(ctx)
			if err != nil {
				return err
			}
			return c.printJSON(keys)
		})
	})
}
