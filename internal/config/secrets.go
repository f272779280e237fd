package config

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/secrets"
)

// MCPNet is the URL policy for what Toolgate fetches itself (MCP tool
// discovery); see package netguard.
type MCPNet struct {
	AllowedHosts string // MCP_ALLOWED_HOSTS: host names, IPs and CIDRs that may be private or loopback
	AllowPrivate bool   // MCP_ALLOW_PRIVATE: every private range may be reached
}

// Secrets is where the key that encrypts stored header secrets comes from.
type Secrets struct {
	Key     []byte // SECRETS_KEY (base64 of 32 bytes), decoded; nil when unset
	KeyFile string // SECRETS_KEY_FILE: offline without SECRETS_KEY, the key file created on first run
}

// LogValue never shows the key.
func (s Secrets) LogValue() slog.Value {
	key := "(unset)"
	if s.Key != nil {
		key = "(set)"
	}
	return slog.GroupValue(slog.String("key", key), slog.String("key_file", s.KeyFile))
}

func loadMCPNet(get func(string, string) string, errs *[]string) MCPNet {
	n := MCPNet{AllowedHosts: get("MCP_ALLOWED_HOSTS", "")}
	if _, _, err := netguard.ParseAllowedHosts(n.AllowedHosts); err != nil {
		*errs = append(*errs, err.Error())
	}
	var err error
	if n.AllowPrivate, err = strconv.ParseBool(get("MCP_ALLOW_PRIVATE", "false")); err != nil {
		*errs = append(*errs, fmt.Sprintf("MCP_ALLOW_PRIVATE must be true or false (got %q)", get("MCP_ALLOW_PRIVATE", "")))
	}
	return n
}

func loadSecrets(get func(string, string) string, offline bool, errs *[]string) Secrets {
	s := Secrets{KeyFile: get("SECRETS_KEY_FILE", ".toolgate/secrets.key")}
	raw := get("SECRETS_KEY", "")
	switch {
	case raw != "":
		key, err := secrets.ParseKey(raw)
		if err != nil {
			*errs = append(*errs, "SECRETS_KEY "+err.Error())
		}
		s.Key = key
	case !offline:
		*errs = append(*errs, "SECRETS_KEY is required when OPENAI_API_KEY is set: it encrypts the MCP servers' header secrets in the database; "+
			secrets.GenerateHint+" and keep it with your other secrets (losing it loses the stored headers)")
	}
	return s
}
