package policy

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// ActionPoliciesClear is one server's tool policies of one layer removed at
// once (ClearPolicies). Its before is {"layer", "policies": {tool: policy}}
// (plus "locked": [tools] for locked workspace policies), its after the
// same layer with no policies.
const ActionPoliciesClear = "policy.clear"

// Cleared is what ClearPolicies removed: the tools, sorted.
type Cleared struct {
	Removed int      `json:"removed"`
	Tools   []string `json:"tools"`
}

// ParseClearLayer reads the layer query parameter of a clear: "", "mine"
// and "user" are the caller's own personal policies (for an admin too: a
// clear of the workspace is asked for by name); "workspace" is the
// workspace's, admins only.
func ParseClearLayer(u auth.User, s string) (Layer, error) {
	switch s {
	case "", "mine", string(LayerUser):
		return LayerUser, nil
	case string(LayerWorkspace):
		if !u.IsAdmin() {
			return "", apperr.New(apperr.Forbidden, "admin_only",
				"only an admin can clear the workspace's policies; leave out layer (or say layer=mine) to clear your own")
		}
		return LayerWorkspace, nil
	}
	return "", apperr.Invalidf("invalid_layer", "layer", "layer must be mine or workspace (got %q)", s)
}

// ClearPolicies removes every tool policy of server label in layer, in one
// transaction with one audit entry; what applies without them (the server's
// or the global default) applies again. The workspace layer is an admin's
// and includes locked policies (the admin set the locks). The user layer is
// the caller's own personal policies: nobody else's, and never the
// workspace's. Nothing to remove is no error and no audit entry.
func (s *Policies) ClearPolicies(ctx context.Context, label string, layer Layer) (Cleared, error) {
	u, err := Caller(ctx)
	if err != nil {
		return Cleared{}, err
	}
	if layer == LayerWorkspace && !u.IsAdmin() {
		return Cleared{}, errAdminOnly("workspace policies")
	}
	if layer != LayerWorkspace && layer != LayerUser {
		return Cleared{}, apperr.Invalidf("invalid_layer", "layer", "layer must be mine or workspace (got %q)", layer)
	}
	out := Cleared{Tools: []string{}}
	err = s.store.Tx(ctx, func(r Repo) error {
		if _, err := r.Servers.Get(ctx, label, true); err != nil {
			return err
		}
		var removed map[string]Policy
		var locked []string
		var err error
		if layer == LayerWorkspace {
			removed, locked, err = clearWorkspace(ctx, r, label)
		} else {
			removed, err = clearMine(ctx, r, u.ID, label)
		}
		if err != nil {
			return err
		}
		if len(removed) == 0 {
			return nil
		}
		out.Tools = sortedKeys(removed)
		out.Removed = len(out.Tools)
		before := map[string]any{"layer": layer, "policies": removed}
		if len(locked) > 0 {
			slices.Sort(locked)
			before["locked"] = locked
		}
		after := map[string]any{"layer": layer, "policies": map[string]Policy{}}
		return WriteAudit(ctx, r, u, ActionPoliciesClear, &label, nil, before, after)
	})
	if err != nil {
		return Cleared{}, err
	}
	return out, nil
}

// clearWorkspace removes every workspace policy of server label in r and
// returns what each was, and the tools whose policy was locked.
func clearWorkspace(ctx context.Context, r Repo, label string) (map[string]Policy, []string, error) {
	removed := map[string]Policy{}
	var locked []string
	pols, err := r.Policies.List(ctx, label)
	if err != nil {
		return removed, locked, err
	}
	for _, p := range pols {
		if _, err := r.Policies.Delete(ctx, label, p.ToolName); err != nil {
			return removed, locked, err
		}
		removed[p.ToolName] = p.Policy
		if p.Locked {
			locked = append(locked, p.ToolName)
		}
	}
	return removed, locked, nil
}

// clearMine removes userID's personal policies for server label's tools
// in r and returns what each was.
func clearMine(ctx context.Context, r Repo, userID, label string) (map[string]Policy, error) {
	removed := map[string]Policy{}
	pols, err := r.Policies.OfUser(ctx, userID, label)
	if err != nil {
		return removed, err
	}
	for _, p := range pols {
		if _, err := r.Policies.DeleteUser(ctx, userID, label, p.ToolName); err != nil {
			return removed, err
		}
		removed[p.ToolName] = p.Policy
	}
	return removed, nil
}

// DefaultSettings are a fresh install's global settings (the column
// defaults of the settings table): ask before every tool not declared
// read-only, nothing locked, ask-everything off.
func DefaultSettings() Settings {
	return Settings{DefaultPolicy: AskUnlessReadOnly}
}

// ResetSettings puts the global settings back to DefaultSettings in one
// transaction with one settings.update entry (none when they already are).
func (s *Policies) ResetSettings(ctx context.Context) (Settings, error) {
	d := DefaultSettings()
	return s.UpdateSettings(ctx, SettingsPatch{DefaultPolicy: &d.DefaultPolicy,
		DefaultPolicyLocked: &d.DefaultPolicyLocked, AskEverything: &d.AskEverything})
}
