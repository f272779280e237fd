package registry

import (
	"context"
	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
	"maps"
	"slices"
	"time"
)

// ListServers returns every server, ordered by label.
func (s *Servers) ListServers(ctx context.Context) ([]policy.Server, error) {
	return s.store.Repo().Servers.List(ctx)
}

// Server returns one server.
func (s *Servers) Server(ctx context.Context, label string) (policy.Server, error) {
	return s.store.Repo().Servers.Get(ctx, label, false)
}

// CreateServer registers a server and discovers its tools. A discovery failure
// does not undo the registration: it is stored on the server and returned
// with it (RefreshError), so the person can fix the URL or headers.
func (s *Servers) CreateServer(ctx context.Context, in policy.NewServer) (policy.Server, error) {
	if _, err := policy.RequireAdmin(ctx, "servers"); err != nil {
		return policy.Server{}, err
	}
	if err := in.Validate(); err != nil {
		return policy.Server{}, err
	}
	if err := policy.CheckURL(ctx, s.urls, in.URL); err != nil {
		return policy.Server{}, err
	}
	srv := policy.Server{Label: in.Label, URL: in.URL, Description: in.Description, Headers: in.Headers,
		DefaultPolicy: in.DefaultPolicy, DefaultPolicyLocked: in.DefaultPolicyLocked, Enabled: in.Enabled == nil || *in.Enabled,
		ApprovalTTLSeconds: in.ApprovalTTLSeconds, ReadOnlyHints: policy.HintsClaimed, UnmaskedResults: in.MaskResults != nil && !*in.MaskResults}
	if srv.Headers == nil {
		srv.Headers = map[string]string{}
	}
	err := s.store.Tx(ctx, func(r policy.Repo) error {
		created, err := r.Servers.Insert(ctx, srv)
		if err != nil {
			return err
		}
		srv = created
		return policy.WriteAuditByCaller(ctx, r, policy.ActionServerCreate, &srv.Label, nil, nil, policy.ServerSnapshot(srv))
	})
	if err != nil {
		return policy.Server{}, err
	}
	s.refreshAfterChange(ctx, srv.Label)
	return s.Server(ctx, srv.Label)
}

// refreshAfterChange discovers tools after a server was created or pointed
// elsewhere. The change is committed by then, so no failure here may turn
// the request into an error: a discovery failure is stored on the server, a
// concurrent change triggers its own refresh, and a client that hangs up
// does not stop the tools from being stored.
func (s *Servers) refreshAfterChange(ctx context.Context, label string) {
	_, err := s.RefreshTools(context.WithoutCancel(ctx), label)
	if err != nil && apperr.KindOf(err) != apperr.Upstream {
		s.log.WarnContext(ctx, "tool discovery after a server change did not complete", "server_id", label, "error", err)
	}
}

// UpdateServer applies a patch. When the URL or headers change the tools are
// discovered again; a discovery failure is stored on the server, not returned.
func (s *Servers) UpdateServer(ctx context.Context, label string, p policy.ServerPatch) (policy.Server, error) {
	u, err := policy.RequireAdmin(ctx, "servers")
	if err != nil {
		return policy.Server{}, err
	}
	var before, after policy.Server
	err = s.store.Tx(ctx, func(r policy.Repo) error {
		var err error
		before, after, err = s.policies.UpdateServerIn(ctx, r, u, label, p)
		return err
	})
	if err != nil {
		return policy.Server{}, err
	}
	if before.URL != after.URL || !maps.Equal(before.Headers, after.Headers) {
		s.refreshAfterChange(ctx, label)
		srv, err := s.Server(ctx, label)
		srv.HeadersDropped = after.HeadersDropped
		return srv, err
	}
	return after, nil
}

// DeleteServer removes a server with its tools and policies.
func (s *Servers) DeleteServer(ctx context.Context, label string) error {
	if _, err := policy.RequireAdmin(ctx, "servers"); err != nil {
		return err
	}
	return s.store.Tx(ctx, func(r policy.Repo) error {
		srv, err := r.Servers.Get(ctx, label, true)
		if err != nil {
			return err
		}
		pols, err := r.Policies.List(ctx, label)
		if err != nil {
			return err
		}
		if err := r.Servers.Delete(ctx, label); err != nil {
			return err
		}
		before := map[string]any{"server": policy.ServerSnapshot(srv), "policies": policy.PolicyMap(pols)}
		return policy.WriteAuditByCaller(ctx, r, policy.ActionServerDelete, &label, nil, before, nil)
	})
}

// RefreshTools discovers the server's tools now and stores them. On failure
// the error is stored on the server and returned as an Upstream error.
func (s *Servers) RefreshTools(ctx context.Context, label string) ([]policy.Tool, error) {
	if _, err := policy.RequireAdmin(ctx, "servers"); err != nil {
		return nil, err
	}
	return s.refresh(ctx, label)
}

// refresh is RefreshTools for a caller allowed to refresh. It also records
// the server's health: a discovery that works makes it reachable again, one
// that fails unreachable.
func (s *Servers) refresh(ctx context.Context, label string) ([]policy.Tool, error) {
	srv, err := s.store.Repo().Servers.Get(ctx, label, false)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	found, discErr := s.discover.ListTools(ctx, srv.URL, srv.Headers)
	took := time.Since(start)
	if discErr != nil && ctx.Err() != nil {
		return nil, ctx.Err() // the caller went away; that says nothing about the server
	}
	at := s.now()
	err = s.store.Tx(ctx, func(r policy.Repo) error {
		cur, err := r.Servers.Get(ctx, label, true)
		if err != nil {
			return err
		}
		if cur.URL != srv.URL || !maps.Equal(cur.Headers, srv.Headers) {
			return apperr.New(apperr.Conflict, "server_changed",
				"the server's URL or headers changed while its tools were being listed; refresh again")
		}
		if discErr != nil {
			return storeFailedRefresh(ctx, r, label, srv, cur, at, discErr)
		}
		return storeRefresh(ctx, r, label, srv, cur, found, at, took, s.health)
	})
	if err != nil {
		return nil, err
	}
	if discErr != nil {
		s.log.WarnContext(ctx, "tool discovery failed", "server_id", label, "url", policy.MaskURL(srv.URL), "error", discErr)
		return nil, discErr
	}
	return s.policies.Tools(ctx, label)
}

// storeFailedRefresh records in r that listing the tools of srv (cur now,
// locked) failed at at with discErr: the refresh result, the server
// unreachable, and an audit entry when the error is new.
func storeFailedRefresh(ctx context.Context, r policy.Repo, label string, srv, cur policy.Server, at time.Time, discErr error) error {
	if err := r.Servers.SetRefreshResult(ctx, label, at, policy.ErrorMessage(discErr)); err != nil {
		return err
	}
	if err := r.Health.MarkUnreachable(ctx, label, srv.URL, healthError(discoveryCause(srv, policy.ErrorMessage(discErr))), at); err != nil {
		return err
	}
	if cur.RefreshError != policy.ErrorMessage(discErr) {
		return policy.WriteAuditByCaller(ctx, r, policy.ActionToolsRefresh, &label, nil,
			map[string]any{"error": policy.NullIfEmpty(cur.RefreshError)}, map[string]any{"error": policy.ErrorMessage(discErr)})
	}
	return nil
}

// storeRefresh stores in r the tools found listing srv (cur now, locked)
// at at in took: the tools, the refresh result, the first discovery, the
// listing time, and an audit entry when the tools changed or an error
// went away.
func storeRefresh(ctx context.Context, r policy.Repo, label string, srv, cur policy.Server, found []policy.DiscoveredTool,
	at time.Time, took time.Duration, health policy.HealthOptions) error {
	old, err := r.Tools.List(ctx, label)
	if err != nil {
		return err
	}
	if err := r.Tools.Replace(ctx, label, found, at); err != nil {
		return err
	}
	if err := r.Servers.SetRefreshResult(ctx, label, at, ""); err != nil {
		return err
	}
	if err := r.Servers.MarkDiscovered(ctx, label, at); err != nil {
		return err
	}
	if err := r.Health.MarkListed(ctx, label, srv.URL, at, took, slowReason(health, took)); err != nil {
		return err
	}
	before, after := policy.ToolDigests(old), policy.ToolDigests(policy.ToTools(found))
	if !maps.Equal(before, after) || cur.RefreshError != "" {
		return policy.WriteAuditByCaller(ctx, r, policy.ActionToolsRefresh, &label, nil,
			map[string]any{"tools": before, "error": policy.NullIfEmpty(cur.RefreshError)},
			map[string]any{"tools": after, "error": nil})
	}
	return nil
}

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
func (s *Servers) RecordDefinitions(ctx context.Context, label string, tools []policy.DiscoveredTool) (changed []string, err error) {
	if len(tools) == 0 {
		return nil, nil
	}
	err = s.store.Tx(ctx, func(r policy.Repo) error {
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
		var write []policy.DiscoveredTool
		before, after := map[string]string{}, map[string]string{}
		for _, t := range tools {
			if msg := s.limits.CheckTool(t); msg != "" {
				s.log.WarnContext(ctx, "a listed tool was not recorded", "server_id", label, "reason", msg)
				continue
			}
			i := slices.IndexFunc(known, func(k policy.Tool) bool { return k.Discovered && k.Name == t.Name })
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
		return policy.WriteAudit(ctx, r, auth.System, policy.ActionToolsRefresh, &label, nil,
			map[string]any{"tools": before}, map[string]any{"tools": after, "seen": "at the call"})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// DiscoveredTool returns a server's tool as discovery (or a response's
// listing) stored it; false when Toolgate has not seen the tool, or only
// knows its name from a policy.
func (s *Servers) DiscoveredTool(ctx context.Context, label, name string) (policy.DiscoveredTool, bool, error) {
	tools, err := s.store.Repo().Tools.List(ctx, label)
	if err != nil {
		return policy.DiscoveredTool{}, false, err
	}
	for _, t := range tools {
		if t.Name == name && t.Discovered {
			return t.DiscoveredTool, true, nil
		}
	}
	return policy.DiscoveredTool{}, false, nil
}

// RecordListed stores tools that an upstream response listed for a server
// (its mcp_list_tools item) and Toolgate had not discovered yet. It only
// adds: a listing filtered by allowed_tools says nothing about the tools it
// leaves out, and upstream passes on less of a tool's annotations than the
// server's own tools/list (only read_only), so known definitions stay as
// discovery stored them. A server deleted meanwhile is not an error.
func (s *Servers) RecordListed(ctx context.Context, label string, tools []policy.DiscoveredTool) error {
	if len(tools) == 0 {
		return nil
	}
	return s.store.Tx(ctx, func(r policy.Repo) error {
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
		fresh := slices.DeleteFunc(slices.Clone(tools), func(t policy.DiscoveredTool) bool {
			// What discovery would refuse (a field over its limit, a name
			// with hidden characters) is not stored from a listing either.
			if msg := s.limits.CheckTool(t); msg != "" {
				s.log.WarnContext(ctx, "a tool the model's provider listed was not recorded", "server_id", label, "reason", msg)
				return true
			}
			return slices.ContainsFunc(known, func(k policy.Tool) bool { return k.Discovered && k.Name == t.Name })
		})
		if len(fresh) == 0 {
			return nil
		}
		at := s.now()
		if err := r.Tools.Upsert(ctx, label, fresh, at); err != nil {
			return err
		}
		return r.Servers.MarkDiscovered(ctx, label, at)
	})
}
