package policy

import (
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Settings are Toolgate's global settings.
type Settings struct {
	// DefaultPolicy applies to tools with no policy of their own on a server
	// with no default. It starts as ask_unless_read_only: a fresh install
	// asks before every tool not declared read-only.
	DefaultPolicy Policy `json:"default_policy"`
	// DefaultPolicyLocked keeps personal policies from loosening the default.
	DefaultPolicyLocked bool `json:"default_policy_locked"`
	// AskEverything is an admin's switch: while on, every tool that would
	// run without asking asks instead (blocked stays blocked).
	AskEverything bool      `json:"ask_everything"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// SettingsPatch changes some settings; absent fields stay as they are.
type SettingsPatch struct {
	DefaultPolicy       *Policy `json:"default_policy"`
	DefaultPolicyLocked *bool   `json:"default_policy_locked"`
	AskEverything       *bool   `json:"ask_everything"`
}

// Apply validates p and returns the changed settings.
func (p SettingsPatch) Apply(s Settings) (Settings, error) {
	if p.DefaultPolicy != nil {
		if !p.DefaultPolicy.ValidDefault() {
			return s, apperr.Invalidf("invalid_policy", "default_policy",
				"default_policy must be one of ask_unless_read_only, always, never, blocked (got %q)", *p.DefaultPolicy)
		}
		s.DefaultPolicy = *p.DefaultPolicy
	}
	if p.DefaultPolicyLocked != nil {
		s.DefaultPolicyLocked = *p.DefaultPolicyLocked
	}
	if p.AskEverything != nil {
		s.AskEverything = *p.AskEverything
	}
	return s, nil
}
