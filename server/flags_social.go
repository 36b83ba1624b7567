package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gatehouse-id/gatehouse/provider"
)

// addSocialFlags registers the serve flags of the social and upstream OpenID Connect login settings.
func addSocialFlags(c *command, cfg *provider.SocialConfig) {
	c.stringVar(&cfg.Google.ClientID, "google-client-id", "ID", "GATEHOUSE_GOOGLE_CLIENT_ID", "",
		"OAuth client id at Google; with --google-client-secret it enables sign-in with Google")
	c.secretVar(&cfg.Google.ClientSecret, "google-client-secret", "SECRET", "GATEHOUSE_GOOGLE_CLIENT_SECRET",
		"OAuth client secret at Google")
	c.stringVar(&cfg.Facebook.ClientID, "facebook-client-id", "ID", "GATEHOUSE_FACEBOOK_CLIENT_ID", "",
		"app id at Facebook; with --facebook-client-secret it enables sign-in with Facebook")
	c.secretVar(&cfg.Facebook.ClientSecret, "facebook-client-secret", "SECRET", "GATEHOUSE_FACEBOOK_CLIENT_SECRET",
		"app secret at Facebook")
	s := c.add("oidc-upstream", "SPEC", "GATEHOUSE_OIDC_UPSTREAMS", "",
		"an OpenID Connect provider to sign in with, as\n"+
			"      name=corp,issuer=https://idp.example,client-id=ID,client-secret=SECRET[,scopes=openid email profile]\n"+
			"      (client-secret-file=PATH reads the secret from a file instead; repeatable; in the\n"+
			"      variable, separate upstreams with ';')",
		func(v string) error {
			ups, err := parseOIDCUpstreams(v)
			cfg.OIDC = ups
			return err
		})
	// Each --oidc-upstream adds one upstream instead of replacing the previous one.
	f := c.fs.Lookup("oidc-upstream")
	f.Value = appendingSetting{s}
}

// appendingSetting makes a repeated flag accumulate its values, separated by ';'.
type appendingSetting struct{ *setting }

// Set implements flag.Value.
func (a appendingSetting) Set(v string) error {
	if a.flagSet {
		v = a.given + ";" + v
	}
	return a.setting.Set(v)
}

// oidcUpstreamKeys are the keys of one --oidc-upstream value.
var oidcUpstreamKeys = []string{"name", "issuer", "client-id", "client-secret", "client-secret-file", "scopes"}

// parseOIDCUpstreams parses upstreams separated by ';', each a comma-separated list of
// key=value pairs. Empty text means none.
func parseOIDCUpstreams(text string) ([]provider.OIDCUpstream, error) {
	var out []provider.OIDCUpstream
	for i, spec := range strings.Split(text, ";") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		u, err := parseOIDCUpstream(spec)
		if err != nil {
			return nil, fmt.Errorf("upstream %d: %w", i+1, err)
		}
		out = append(out, u)
	}
	return out, nil
}

func parseOIDCUpstream(spec string) (provider.OIDCUpstream, error) {
	var u provider.OIDCUpstream
	seen := map[string]bool{}
	for _, pair := range strings.Split(spec, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case !ok:
			return u, fmt.Errorf("%q is not key=value (keys: %s)", pair, strings.Join(oidcUpstreamKeys, ", "))
		case value == "":
			return u, fmt.Errorf("%s is empty", key)
		case seen[key]:
			return u, fmt.Errorf("%s is given twice", key)
		}
		seen[key] = true
		switch key {
		case "name":
			u.Name = value
		case "issuer":
			u.Issuer = value
		case "client-id":
			u.ClientID = value
		case "client-secret":
			u.ClientSecret = value
		case "client-secret-file":
			secret, err := readSecretFile(value)
			if err != nil {
				return u, fmt.Errorf("client-secret-file: %w", err)
			}
			u.ClientSecret = secret
		case "scopes":
			u.Scopes = strings.Fields(value)
		default:
			return u, fmt.Errorf("unknown key %q (keys: %s)", key, strings.Join(oidcUpstreamKeys, ", "))
		}
	}
	if seen["client-secret"] && seen["client-secret-file"] {
		return u, errors.New("give client-secret or client-secret-file, not both")
	}
	seen["client-secret"] = seen["client-secret"] || seen["client-secret-file"]
	var missing []string
	for _, key := range oidcUpstreamKeys[:4] {
		if !seen[key] {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return u, errors.New("missing " + strings.Join(missing, ", "))
	}
	return u, nil
}
