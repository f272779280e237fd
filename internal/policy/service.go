package policy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Service is the policy API: servers, tools, policies, settings and audit.
type Service struct {
	store    Store
	discover Discoverer
	log      *slog.Logger
	now      func() time.Time
}

// NewService returns a Service over store that discovers tools with d.
func NewService(store Store, d Discoverer, log *slog.Logger) *Service {
	return &Service{store: store, discover: d, log: log, now: time.Now}
}

// ListServers returns every server, ordered by label.
func (s *Service) ListServers(ctx context.Context) ([]Server, error) {
	return s.store.Repo().ListServers(ctx)
}

// Server returns one server.
func (s *Service) Server(ctx context.Context, label string) (Server, error) {
	return s.store.Repo().Server(ctx, label, false)
}

// CreateServer registers a server and discovers its tools. A discovery failure
// does not undo the registration: it is stored on the server and returned
// with it (RefreshError), so the person can fix the URL or headers.
func (s *Service) CreateServer(ctx context.Context, in NewServer) (Server, error) {
	if err := in.Validate(); err != nil {
		return Server{}, err
	}
	srv := Server{Label: in.Label, URL: in.URL, Description: in.Description, Headers: in.Headers,
		DefaultPolicy: in.DefaultPolicy, Enabled: in.Enabled == nil || *in.Enabled}
	if srv.Headers == nil {
		srv.Headers = map[string]string{}
	}
	err := s.store.Tx(ctx, func(r Repo) error {
		created, err := r.InsertServer(ctx, srv)
		if err != nil {
			return err
		}
		srv = created
		return s.audit(ctx, r, ActionServerCreate, &srv.Label, nil, nil, serverSnapshot(srv))
	})
	if err != nil {
		return Server{}, err
	}
	s.refreshAfterChange(ctx, srv.Label)
	return s.Server(ctx, srv.Label)
}

// refreshAfterChange discovers tools after a server was created or pointed
// elsewhere. The change is committed by then, so no failure here may turn
// the request into an error: a discovery failure is stored on the server, a
// concurrent change triggers its own refresh, and a client that hangs up
// does not stop the tools from being stored.
func (s *Service) refreshAfterChange(ctx context.Context, label string) {
	_, err := s.RefreshTools(context.WithoutCancel(ctx), label)
	if err != nil && apperr.KindOf(err) != apperr.Upstream {
		s.log.WarnContext(ctx, "tool discovery after a server change did not complete", "server_id", label, "error", err)
	}
}

// UpdateServer applies a patch. When the URL or headers change the tools are
// discovered again; a discovery failure is stored on the server, not returned.
func (s *Service) UpdateServer(ctx context.Context, label string, p ServerPatch) (Server, error) {
	var before, after Server
	err := s.store.Tx(ctx, func(r Repo) error {
		var err error
		if before, err = r.Server(ctx, label, true); err != nil {
			return err
		}
		if after, err = p.Apply(before); err != nil {
			return err
		}
		if !serverChanged(before, after) {
			return nil
		}
		if after, err = r.UpdateServer(ctx, after); err != nil {
			return err
		}
		return s.audit(ctx, r, ActionServerUpdate, &label, nil, serverSnapshot(before), serverSnapshot(after))
	})
	if err != nil {
		return Server{}, err
	}
	if before.URL != after.URL || !maps.Equal(before.Headers, after.Headers) {
		s.refreshAfterChange(ctx, label)
		return s.Server(ctx, label)
	}
	return after, nil
}

// DeleteServer removes a server with its tools and policies.
func (s *Service) DeleteServer(ctx context.Context, label string) error {
	return s.store.Tx(ctx, func(r Repo) error {
		srv, err := r.Server(ctx, label, true)
		if err != nil {
			return err
		}
		pols, err := r.Policies(ctx, label)
		if err != nil {
			return err
		}
		if err := r.DeleteServer(ctx, label); err != nil {
			return err
		}
		before := map[string]any{"server": serverSnapshot(srv), "policies": policyMap(pols)}
		return s.audit(ctx, r, ActionServerDelete, &label, nil, before, nil)
	})
}

// RefreshTools discovers the server's tools now and stores them. On failure
// the error is stored on the server and returned as an Upstream error.
func (s *Service) RefreshTools(ctx context.Context, label string) ([]Tool, error) {
	srv, err := s.store.Repo().Server(ctx, label, false)
	if err != nil {
		return nil, err
	}
	found, discErr := s.discover.ListTools(ctx, srv.URL, srv.Headers)
	if discErr != nil && ctx.Err() != nil {
		return nil, ctx.Err() // the caller went away; that says nothing about the server
	}
	at := s.now()
	err = s.store.Tx(ctx, func(r Repo) error {
		cur, err := r.Server(ctx, label, true)
		if err != nil {
			return err
		}
		if cur.URL != srv.URL || !maps.Equal(cur.Headers, srv.Headers) {
			return apperr.New(apperr.Conflict, "server_changed",
				"the server's URL or headers changed while its tools were being listed; refresh again")
		}
		if discErr != nil {
			if err := r.SetRefreshResult(ctx, label, at, errorMessage(discErr)); err != nil {
				return err
			}
			if cur.RefreshError != errorMessage(discErr) {
				return s.audit(ctx, r, ActionToolsRefresh, &label, nil,
					map[string]any{"error": nullIfEmpty(cur.RefreshError)}, map[string]any{"error": errorMessage(discErr)})
			}
			return nil
		}
		old, err := r.Tools(ctx, label)
		if err != nil {
			return err
		}
		if err := r.ReplaceTools(ctx, label, found, at); err != nil {
			return err
		}
		if err := r.SetRefreshResult(ctx, label, at, ""); err != nil {
			return err
		}
		before, after := toolDigests(old), toolDigests(toTools(found))
		if !maps.Equal(before, after) || cur.RefreshError != "" {
			return s.audit(ctx, r, ActionToolsRefresh, &label, nil,
				map[string]any{"tools": before, "error": nullIfEmpty(cur.RefreshError)},
				map[string]any{"tools": after, "error": nil})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if discErr != nil {
		s.log.WarnContext(ctx, "tool discovery failed", "server_id", label, "url", srv.URL, "error", discErr)
		return nil, discErr
	}
	return s.Tools(ctx, label)
}

// Tools returns every known tool of a server with its effective policy.
func (s *Service) Tools(ctx context.Context, label string) ([]Tool, error) {
	var tools []Tool
	err := s.store.Tx(ctx, func(r Repo) error {
		srv, err := r.Server(ctx, label, false)
		if err != nil {
			return err
		}
		set, err := r.Settings(ctx)
		if err != nil {
			return err
		}
		if tools, err = r.Tools(ctx, label); err != nil {
			return err
		}
		for i := range tools {
			tools[i].EffectivePolicy, tools[i].PolicySource = Resolve(tools[i].Policy, srv.DefaultPolicy, set.DefaultPolicy)
		}
		return nil
	})
	return tools, err
}

// Policies returns a server's explicit tool policies.
func (s *Service) Policies(ctx context.Context, label string) ([]ToolPolicy, error) {
	var out []ToolPolicy
	err := s.store.Tx(ctx, func(r Repo) error {
		if _, err := r.Server(ctx, label, false); err != nil {
			return err
		}
		var err error
		out, err = r.Policies(ctx, label)
		return err
	})
	return out, err
}

// SetPolicy sets one tool's explicit policy and returns the tool.
func (s *Service) SetPolicy(ctx context.Context, label, tool string, p Policy) (Tool, error) {
	if err := ValidateToolName("tool_name", tool); err != nil {
		return Tool{}, err
	}
	if _, err := ParsePolicy("policy", string(p)); err != nil {
		return Tool{}, err
	}
	return s.oneTool(ctx, label, tool, s.SetPolicies(ctx, label, map[string]*Policy{tool: &p}))
}

// DeletePolicy removes a tool's explicit policy so its server's or the global
// default applies again. Removing a policy that is not there changes nothing.
func (s *Service) DeletePolicy(ctx context.Context, label, tool string) (Tool, error) {
	if err := ValidateToolName("tool_name", tool); err != nil {
		return Tool{}, err
	}
	return s.oneTool(ctx, label, tool, s.SetPolicies(ctx, label, map[string]*Policy{tool: nil}))
}

// SetPolicies sets several tools' policies at once, all or nothing. A nil
// policy removes the tool's explicit policy.
func (s *Service) SetPolicies(ctx context.Context, label string, policies map[string]*Policy) error {
	f := apperr.Fields{}
	code := "invalid_tool_name"
	for _, name := range sortedKeys(policies) {
		if err := ValidateToolName("policies."+name, name); err != nil {
			f.Add("policies."+name, "%s", fieldMsg(err, "policies."+name))
		} else if p := policies[name]; p != nil && !p.Valid() {
			f.Add("policies."+name, "policy for %q must be one of always, never, blocked, or null (got %q)", name, *p)
			code = "invalid_policy"
		}
	}
	if err := f.Err(code, "nothing was changed: "+f.Join()); err != nil {
		return err
	}
	return s.store.Tx(ctx, func(r Repo) error { return s.setPolicies(ctx, r, label, policies) })
}

// setPolicies applies validated policies in the transaction r.
func (s *Service) setPolicies(ctx context.Context, r Repo, label string, policies map[string]*Policy) error {
	if _, err := r.Server(ctx, label, true); err != nil {
		return err
	}
	current, err := r.Policies(ctx, label)
	if err != nil {
		return err
	}
	have := policyMap(current)
	actor, err := s.actor(ctx, r)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(policies) {
		p := policies[name]
		old, had := have[name]
		switch {
		case p == nil && !had, p != nil && had && old == *p:
			continue // no change, no audit entry
		case p == nil:
			if _, err := r.DeletePolicy(ctx, label, name); err != nil {
				return err
			}
		default:
			if err := r.UpsertPolicy(ctx, ToolPolicy{ServerLabel: label, ToolName: name, Policy: *p, UpdatedBy: actor}); err != nil {
				return err
			}
		}
		action, before, after := ActionPolicySet, policyState(old, had), policyState(deref(p), p != nil)
		if p == nil {
			action = ActionPolicyDelete
		}
		if err := s.insertAudit(ctx, r, actor, action, &label, &name, before, after); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) oneTool(ctx context.Context, label, name string, err error) (Tool, error) {
	if err != nil {
		return Tool{}, err
	}
	tools, err := s.Tools(ctx, label)
	if err != nil {
		return Tool{}, err
	}
	for _, t := range tools {
		if t.Name == name {
			return t, nil
		}
	}
	// Not discovered and no policy: report it as the defaults see it.
	srv, err := s.Server(ctx, label)
	if err != nil {
		return Tool{}, err
	}
	set, err := s.Settings(ctx)
	if err != nil {
		return Tool{}, err
	}
	t := Tool{DiscoveredTool: DiscoveredTool{Name: name}, ServerLabel: label}
	t.EffectivePolicy, t.PolicySource = Resolve(nil, srv.DefaultPolicy, set.DefaultPolicy)
	return t, nil
}

// Settings returns the global settings.
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	return s.store.Repo().Settings(ctx)
}

// UpdateSettings applies a settings patch.
func (s *Service) UpdateSettings(ctx context.Context, p SettingsPatch) (Settings, error) {
	var out Settings
	err := s.store.Tx(ctx, func(r Repo) error {
		cur, err := r.Settings(ctx)
		if err != nil {
			return err
		}
		next, err := p.Apply(cur)
		if err != nil {
			return err
		}
		if next == cur {
			out = cur
			return nil
		}
		if out, err = r.PutSettings(ctx, next); err != nil {
			return err
		}
		// The entry is recorded under the new name when the name itself changes,
		// so the log shows who the change made responsible from now on.
		return s.insertAudit(ctx, r, next.LocalUser, ActionSettingsWrite, nil, nil, settingsSnapshot(cur), settingsSnapshot(next))
	})
	return out, err
}

// Audit returns a page of the audit log, newest first.
func (s *Service) Audit(ctx context.Context, q AuditQuery) (AuditPage, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	if q.Limit > 500 {
		return AuditPage{}, apperr.Invalidf("invalid_limit", "limit", "limit must be between 1 and 500 (got %d)", q.Limit)
	}
	q.Limit++ // one more tells whether there is a next page
	entries, err := s.store.Repo().Audit(ctx, q)
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{Entries: entries}
	if len(entries) == q.Limit {
		page.Entries = entries[:q.Limit-1]
		c := encodeCursor(page.Entries[len(page.Entries)-1].ID)
		page.NextCursor = &c
	}
	if page.Entries == nil {
		page.Entries = []AuditEntry{}
	}
	return page, nil
}

func (s *Service) actor(ctx context.Context, r Repo) (string, error) {
	set, err := r.Settings(ctx)
	return set.LocalUser, err
}

func (s *Service) audit(ctx context.Context, r Repo, action string, server, tool *string, before, after any) error {
	actor, err := s.actor(ctx, r)
	if err != nil {
		return err
	}
	return s.insertAudit(ctx, r, actor, action, server, tool, before, after)
}

func (s *Service) insertAudit(ctx context.Context, r Repo, actor, action string, server, tool *string, before, after any) error {
	b, err := marshalState(before)
	if err != nil {
		return err
	}
	a, err := marshalState(after)
	if err != nil {
		return err
	}
	return r.InsertAudit(ctx, AuditEntry{Actor: actor, Action: action, ServerLabel: server, ToolName: tool, Before: b, After: a})
}

func marshalState(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(v)
}

// serverSnapshot is a server as the audit log shows it: secrets masked.
func serverSnapshot(s Server) map[string]any {
	return map[string]any{"label": s.Label, "url": s.URL, "description": s.Description,
		"headers": MaskedHeaders(s.Headers), "default_policy": s.DefaultPolicy, "enabled": s.Enabled}
}

func settingsSnapshot(s Settings) map[string]any {
	return map[string]any{"default_policy": s.DefaultPolicy, "local_user": s.LocalUser}
}

func serverChanged(a, b Server) bool {
	return a.URL != b.URL || a.Description != b.Description || !maps.Equal(a.Headers, b.Headers) ||
		deref(a.DefaultPolicy) != deref(b.DefaultPolicy) || a.Enabled != b.Enabled
}

func policyMap(ps []ToolPolicy) map[string]Policy {
	m := make(map[string]Policy, len(ps))
	for _, p := range ps {
		m[p.ToolName] = p.Policy
	}
	return m
}

func policyState(p Policy, ok bool) any {
	if !ok {
		return nil
	}
	return map[string]Policy{"policy": p}
}

func toTools(d []DiscoveredTool) []Tool {
	out := make([]Tool, len(d))
	for i, t := range d {
		out[i] = Tool{DiscoveredTool: t, Discovered: true, Digest: t.Digest()}
	}
	return out
}

func toolDigests(ts []Tool) map[string]string {
	m := map[string]string{}
	for _, t := range ts {
		if t.Discovered {
			m[t.Name] = t.Digest
		}
	}
	return m
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func errorMessage(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
