package policy

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// RecordDefinitions stores the definitions a server lists now, seen where a
// call runs (Toolgate's MCP face) or before a request (direct mode), and
// returns the names of the tools whose stored definition changed. Unlike
// RecordListed it also replaces a known tool's definition when its digest
// differs: the tool's definition_changed_at moves, so a policy, grant or
// rule given for the old definition no longer lets it run unasked (Resolve:
// asks because changed) from the next request on. Tools the listing leaves
// out are kept (a refresh removes them). Each change is audited as a
// server.tools_changed entry by Toolgate itself. A server deleted meanwhile
// is not an error.
func (s *Service) RecordDefinitions(ctx context.Context, label string, tools []DiscoveredTool) (changed []string, err error) {
	if len(tools) == 0 {
		return nil, nil
	}
	err = s.store.Tx(ctx, func(r Repo) error {
		changed = nil
		if _, err := r.Servers.Get(ctx, label, true); err != nil {
			if apperr.KindOf(err) == apperr.NotFound {
				return nil
			}
			return err
		}
		known, err := r.Tools.List(ctx, label)
		if err != nil {
			return err
		}
		var write []DiscoveredTool
		before, after := map[string]string{}, map[string]string{}
		for _, t := range tools {
			if msg := s.limits.CheckTool(t); msg != "" {
				s.log.WarnContext(ctx, "a listed tool was not recorded", "server_id", label, "reason", msg)
				continue
			}
			i := slices.IndexFunc(known, func(k Tool) bool { return k.Discovered && k.Name == t.Name })
			d := t.Digest()
			switch {
			case i < 0:
				write = append(write, t)
			case known[i].Digest != d:
				write = append(write, t)
				changed = append(changed, t.Name)
				before[t.Name], after[t.Name] = known[i].Digest, d
			}
		}
		if len(write) == 0 {
			return nil
		}
		at := s.now()
		if err := r.Tools.Upsert(ctx, label, write, at); err != nil {
			return err
		}
		if err := r.Servers.MarkDiscovered(ctx, label, at); err != nil {
			return err
		}
		if len(changed) == 0 {
			return nil
		}
		return s.insertAudit(ctx, r, auth.System, ActionToolsRefresh, &label, nil,
			map[string]any{"tools": before}, map[string]any{"tools": after, "seen": "at the call"})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}
