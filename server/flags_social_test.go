package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/provider"
)

func TestSocialFlags(t *testing.T) {
	corp := provider.OIDCUpstream{Name: "corp", Issuer: "https://idp.example", ClientID: "gh", ClientSecret: "s3"}
	lab := provider.OIDCUpstream{Name: "lab", Issuer: "http://127.0.0.1:9000", ClientID: "id2", ClientSecret: "s4", Scopes: []string{"openid", "email"}}
	const corpSpec = "name=corp,issuer=https://idp.example,client-id=gh,client-secret=s3"
	const labSpec = "name=lab, issuer=http://127.0.0.1:9000, client-id=id2, client-secret=s4, scopes=openid email"
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want provider.SocialConfig
	}{
		{name: "nothing configured: every provider off"},
		{
			name: "Google and Facebook from the environment",
			env: map[string]string{
				"GATEHOUSE_GOOGLE_CLIENT_ID": "g-id", "GATEHOUSE_GOOGLE_CLIENT_SECRET": "g-secret",
				"GATEHOUSE_FACEBOOK_CLIENT_ID": "f-id", "GATEHOUSE_FACEBOOK_CLIENT_SECRET": "f-secret",
			},
			want: provider.SocialConfig{
				Google:   provider.SocialProvider{ClientID: "g-id", ClientSecret: "g-secret"},
				Facebook: provider.SocialProvider{ClientID: "f-id", ClientSecret: "f-secret"},
			},
		},
		{
			name: "flags win over the environment",
			args: []string{"--google-client-id", "flag-id", "--google-client-secret=flag-secret"},
			env:  map[string]string{"GATEHOUSE_GOOGLE_CLIENT_ID": "env-id", "GATEHOUSE_GOOGLE_CLIENT_SECRET": "env-secret"},
			want: provider.SocialConfig{Google: provider.SocialProvider{ClientID: "flag-id", ClientSecret: "flag-secret"}},
		},
		{
			name: "OIDC upstreams from the environment, separated by ;",
			env:  map[string]string{"GATEHOUSE_OIDC_UPSTREAMS": corpSpec + " ; " + labSpec + ";"},
			want: provider.SocialConfig{OIDC: []provider.OIDCUpstream{corp, lab}},
		},
		{
			name: "repeated --oidc-upstream flags add up and replace the variable",
			args: []string{"--oidc-upstream", corpSpec, "--oidc-upstream=" + labSpec},
			env:  map[string]string{"GATEHOUSE_OIDC_UPSTREAMS": "name=other,issuer=https://x.example,client-id=a,client-secret=b"},
			want: provider.SocialConfig{OIDC: []provider.OIDCUpstream{corp, lab}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cfg, err := parseServeConfig(tt.args, envOf(tt.env))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := cfg.Provider.Social; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSocialFlagErrors(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{"unknown key", "name=corp,issuer=https://i.example,client-id=a,client-secret=b,colour=blue", `upstream 1: unknown key "colour"`},
		{"missing keys", "name=corp,issuer=https://i.example", "upstream 1: missing client-id, client-secret"},
		{"not key=value", "name=corp,https://i.example", `upstream 1: "https://i.example" is not key=value`},
		{"empty value", "name=,issuer=https://i.example,client-id=a,client-secret=b", "upstream 1: name is empty"},
		{"key twice", "name=a,name=b,issuer=https://i.example,client-id=a,client-secret=b", "upstream 1: name is given twice"},
		{"second upstream bad", "name=a,issuer=https://i.example,client-id=a,client-secret=b;name=b", "upstream 2: missing issuer, client-id, client-secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseServeConfig([]string{"--oidc-upstream", tt.spec}, envOf(nil))
			if err == nil || !strings.Contains(err.Error(), "--oidc-upstream") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("flag: got error %v, want one naming --oidc-upstream and saying %q", err, tt.want)
			}
			_, _, err = parseServeConfig(nil, envOf(map[string]string{"GATEHOUSE_OIDC_UPSTREAMS": tt.spec}))
			if err == nil || !strings.Contains(err.Error(), "GATEHOUSE_OIDC_UPSTREAMS") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("env: got error %v, want one naming GATEHOUSE_OIDC_UPSTREAMS and saying %q", err, tt.want)
			}
		})
	}
}
