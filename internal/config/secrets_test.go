package config

import (
	"log/slog"
	"strings"
	"testing"
)

// testSecretsKey is the base64 of 32 bytes.
const testSecretsKey = "c2VjcmV0cy1rZXktZm9yLXRlc3RzLTAxMjM0NTY3ODk="

func TestSecrets_KeyIsRequiredOnlineAndValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" = valid
	}{
		{"offline needs no key", map[string]string{}, ""},
		{"online without a key", map[string]string{"OPENAI_API_KEY": "sk-x"}, "SECRETS_KEY is required when OPENAI_API_KEY is set: it encrypts the MCP servers' header secrets in the database; generate one with `openssl rand -base64 32`"},
		{"online with a key", map[string]string{"OPENAI_API_KEY": "sk-x", "SECRETS_KEY": testSecretsKey}, ""},
		{"a short key", map[string]string{"SECRETS_KEY": "c2hvcnQ="}, "SECRETS_KEY must be the base64 of 32 random bytes; generate one with `openssl rand -base64 32`"},
		{"not base64", map[string]string{"SECRETS_KEY": "hunter2!"}, "SECRETS_KEY must be the base64"},
		{"a bad allowed host", map[string]string{"MCP_ALLOWED_HOSTS": "10.0.0.0/99"}, `MCP_ALLOWED_HOSTS entry "10.0.0.0/99" is not a valid CIDR`},
		{"a bad allow-private", map[string]string{"MCP_ALLOW_PRIVATE": "yes please"}, `MCP_ALLOW_PRIVATE must be true or false (got "yes please")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.env))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Load: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Load: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestSecrets_Defaults(t *testing.T) {
	c, err := Load(env(map[string]string{"MCP_ALLOWED_HOSTS": "mcp.internal, 10.0.0.0/8", "MCP_ALLOW_PRIVATE": "true", "SECRETS_KEY": testSecretsKey}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Secrets.KeyFile != ".toolgate/secrets.key" || len(c.Secrets.Key) != 32 || !c.MCPNet.AllowPrivate || c.MCPNet.AllowedHosts != "mcp.internal, 10.0.0.0/8" {
		t.Errorf("config = %+v %+v", c.Secrets, c.MCPNet)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", c)
	if strings.Contains(b.String(), testSecretsKey) || strings.Contains(b.String(), "secrets-key-for-tests") || !strings.Contains(b.String(), "key=(set)") {
		t.Errorf("logged config = %s", b.String())
	}
}
