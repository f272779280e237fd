package policy

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
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

// Settings returns the global settings.
func (s *Policies) Settings(ctx context.Context) (Settings, error) {
	return s.store.Repo().Settings.Get(ctx)
}

// UpdateSettings applies a settings patch.
func (s *Policies) UpdateSettings(ctx context.Context, p SettingsPatch) (Settings, error) {
	u, err := RequireAdmin(ctx, "the global settings")
	if err != nil {
		return Settings{}, err
	}
	var out Settings
	err = s.store.Tx(ctx, func(r Repo) error {
		_, out, err = s.updateSettingsIn(ctx, r, u, p)
		return err
	})
	return out, err
}

// updateSettingsIn applies p to the global settings in r, audited as
// settings.update with u as the actor: what UpdateSettings stores, and
// what a wider decision's change of the global default stores (widen.go).
func (s *Policies) updateSettingsIn(ctx context.Context, r Repo, u auth.User, p SettingsPatch) (before, after Settings, err error) {
	cur, err := r.Settings.Get(ctx)
	if err != nil {
		return cur, cur, err
	}
	next, err := p.Apply(cur)
	if err != nil {
		return cur, cur, err
	}
	if next.DefaultPolicy == cur.DefaultPolicy && next.DefaultPolicyLocked == cur.DefaultPolicyLocked && next.AskEverything == cur.AskEverything {
		return cur, cur, nil
	}
	out, err := r.Settings.Put(ctx, next)
	if err != nil {
		return cur, out, err
	}
	return cur, out, WriteAudit(ctx, r, u, ActionSettingsWrite, nil, nil, settingsSnapshot(cur), settingsSnapshot(next))
}

func settingsSnapshot(s Settings) map[string]any {
	return map[string]any{"default_policy": s.DefaultPolicy, "default_policy_locked": s.DefaultPolicyLocked, "ask_everything": s.AskEverything}
}
