package policy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/hooks"
)

// Service is the policy API: servers, tools, policies, settings and audit.
type Service struct {
	store    Store
	discover Discoverer
	urls     URLChecker // nil: no URL policy at registration
	// hookClient asks decision hooks (decisionhook.go); nil: a default one.
	hookClient *hooks.Client
	log        *slog.Logger
	now        func() time.Time
	tools      toolCache // the workspace's part of requests, at a version (snapshot.go)
	health     HealthOptions
	limits     ToolLimits // what one listing may hold (RecordListed; the Discoverer has its own)
}

// Options are a Service's settings; the zero value of each field is its
// default.
type Options struct {
	// Limits is what one server's listing may hold, for the tools a
	// response lists (RecordListed); zero fields: DefaultToolLimits.
	Limits ToolLimits
	// Health says when a server is left out; zero: DefaultHealthOptions
	// (Failures below 1: DefaultHealthFailures).
	Health HealthOptions
	// URLs makes CreateServer and UpdateServer refuse the URLs it refuses,
	// with 400 url_not_allowed, before storing them. nil: every URL is
	// accepted (discovery still dials through its own policy).
	URLs URLChecker
	// HookClient asks decision hooks (cmd/api passes one over the netguard
	// transport); nil: a client of its own.
	HookClient *hooks.Client
}

// New returns a Service over store that discovers tools with d, set up by
// opts.
func New(store Store, d Discoverer, log *slog.Logger, opts Options) *Service {
	health := opts.Health
	if health == (HealthOptions{}) {
		health = DefaultHealthOptions()
	} else if health.Failures < 1 {
		health.Failures = DefaultHealthFailures
	}
	return &Service{store: store, discover: d, log: log, now: time.Now, health: health, limits: opts.Limits.OrDefaults(),
		urls: opts.URLs, hookClient: opts.HookClient}
}

// ListServers returns every server, ordered by label.
func (s *Service) ListServers(ctx context.Context) ([]Server, error) {
	return s.store.Repo().Servers.List(ctx)
}

// Server returns one server.
func (s *Service) Server(ctx context.Context, label string) (Server, error) {
	return s.store.Repo().Servers.Get(ctx, label, false)
}

// CreateServer registers a server and discovers its tools. A discovery failure
// does not undo the registration: it is stored on the server and returned
// with it (RefreshError), so the person can fix the URL or headers.
func (s *Service) CreateServer(ctx context.Context, in NewServer) (Server, error) {
	if _, err := requireAdmin(ctx, "servers"); err != nil {
		return Server{}, err
	}
	if err := in.Validate(); err != nil {
		return Server{}, err
	}
	if err := s.checkURL(ctx, in.URL); err != nil {
		return Server{}, err
	}
	srv := Server{Label: in.Label, URL: in.URL, Description: in.Description, Headers: in.Headers,
		DefaultPolicy: in.DefaultPolicy, DefaultPolicyLocked: in.DefaultPolicyLocked, Enabled: in.Enabled == nil || *in.Enabled,
		ApprovalTTLSeconds: in.ApprovalTTLSeconds, ReadOnlyHints: HintsClaimed, UnmaskedResults: in.MaskResults != nil && !*in.MaskResults}
	if srv.Headers == nil {
		srv.Headers = map[string]string{}
	}
	err := s.store.Tx(ctx, func(r Repo) error {
		created, err := r.Servers.Insert(ctx, srv)
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
	u, err := requireAdmin(ctx, "servers")
	if err != nil {
		return Server{}, err
	}
	var before, after Server
	err = s.store.Tx(ctx, func(r Repo) error {
		var err error
		before, after, err = s.updateServerIn(ctx, r, u, label, p)
		return err
	})
	if err != nil {
		return Server{}, err
	}
	if before.URL != after.URL || !maps.Equal(before.Headers, after.Headers) {
		s.refreshAfterChange(ctx, label)
		srv, err := s.Server(ctx, label)
		srv.HeadersDropped = after.HeadersDropped
		return srv, err
	}
	return after, nil
}

// updateServerIn applies p to the server in r (locked), audited as
// server.update with u as the actor: what UpdateServer stores, and what a
// wider decision's change of a server's default stores (widen.go).
func (s *Service) updateServerIn(ctx context.Context, r Repo, u auth.User, label string, p ServerPatch) (before, after Server, err error) {
	if before, err = r.Servers.Get(ctx, label, true); err != nil {
		return before, before, err
	}
	if after, err = p.Apply(before); err != nil {
		return before, after, err
	}
	if !serverChanged(before, after) {
		return before, after, nil
	}
	if after.URL != before.URL {
		if err := s.checkURL(ctx, after.URL); err != nil {
			return before, after, err
		}
	}
	dropped := after.HeadersDropped
	if after, err = r.Servers.Update(ctx, after); err != nil {
		return before, after, err
	}
	after.HeadersDropped = dropped
	snap, was := serverSnapshot(after), serverSnapshot(before)
	if len(dropped) > 0 {
		snap["headers_dropped"] = dropped // the URL moved to another host without them
	}
	if before.ReadOnlyHints != after.ReadOnlyHints {
		// Accepting (or taking back) the server's read-only hints.
		was["read_only_hints"], snap["read_only_hints"] = before.ReadOnlyHints, after.ReadOnlyHints
	}
	if before.UnmaskedResults != after.UnmaskedResults {
		was["mask_results"], snap["mask_results"] = !before.UnmaskedResults, !after.UnmaskedResults
	}
	return before, after, s.insertAudit(ctx, r, u, ActionServerUpdate, &label, nil, was, snap)
}

// DeleteServer removes a server with its tools and policies.
func (s *Service) DeleteServer(ctx context.Context, label string) error {
	if _, err := requireAdmin(ctx, "servers"); err != nil {
		return err
	}
	return s.store.Tx(ctx, func(r Repo) error {
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
		before := map[string]any{"server": serverSnapshot(srv), "policies": policyMap(pols)}
		return s.audit(ctx, r, ActionServerDelete, &label, nil, before, nil)
	})
}

// RefreshTools discovers the server's tools now and stores them. On failure
// the error is stored on the server and returned as an Upstream error.
func (s *Service) RefreshTools(ctx context.Context, label string) ([]Tool, error) {
	if _, err := requireAdmin(ctx, "servers"); err != nil {
		return nil, err
	}
	return s.refresh(ctx, label)
}

// refresh is RefreshTools for a caller allowed to refresh. It also records
// the server's health: a discovery that works makes it reachable again, one
// that fails unreachable.
func (s *Service) refresh(ctx context.Context, label string) ([]Tool, error) {
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
	err = s.store.Tx(ctx, func(r Repo) error {
		cur, err := r.Servers.Get(ctx, label, true)
		if err != nil {
			return err
		}
		if cur.URL != srv.URL || !maps.Equal(cur.Headers, srv.Headers) {
			return apperr.New(apperr.Conflict, "server_changed",
				"the server's URL or headers changed while its tools were being listed; refresh again")
		}
		if discErr != nil {
			if err := r.Servers.SetRefreshResult(ctx, label, at, errorMessage(discErr)); err != nil {
				return err
			}
			if err := r.Health.MarkUnreachable(ctx, label, srv.URL, healthError(discoveryCause(srv, errorMessage(discErr))), at); err != nil {
				return err
			}
			if cur.RefreshError != errorMessage(discErr) {
				return s.audit(ctx, r, ActionToolsRefresh, &label, nil,
					map[string]any{"error": nullIfEmpty(cur.RefreshError)}, map[string]any{"error": errorMessage(discErr)})
			}
			return nil
		}
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
		if err := r.Health.MarkListed(ctx, label, srv.URL, at, took, s.slowReason(took)); err != nil {
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
		s.log.WarnContext(ctx, "tool discovery failed", "server_id", label, "url", MaskURL(srv.URL), "error", discErr)
		return nil, discErr
	}
	return s.Tools(ctx, label)
}

// Tools returns every known tool of a server with the caller's policies:
// the workspace's, their own, and the effective one by the one precedence.
func (s *Service) Tools(ctx context.Context, label string) ([]Tool, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	var tools []Tool
	err = s.store.Tx(ctx, func(r Repo) error {
		srv, err := r.Servers.Get(ctx, label, false)
		if err != nil {
			return err
		}
		set, err := r.Settings.Get(ctx)
		if err != nil {
			return err
		}
		if tools, err = r.Tools.List(ctx, label); err != nil {
			return err
		}
		mine, err := r.Policies.OfUser(ctx, u.ID, label)
		if err != nil {
			return err
		}
		tools = withEffective(srv, set, tools, mine)
		return nil
	})
	return tools, err
}

// Policies returns a server's explicit tool policies.
func (s *Service) Policies(ctx context.Context, label string) ([]ToolPolicy, error) {
	var out []ToolPolicy
	err := s.store.Tx(ctx, func(r Repo) error {
		if _, err := r.Servers.Get(ctx, label, false); err != nil {
			return err
		}
		var err error
		out, err = r.Policies.List(ctx, label)
		return err
	})
	return out, err
}

// PolicyChange is one tool's policy change in a layer.
type PolicyChange struct {
	Layer  Layer
	Policy *Policy // nil removes the explicit policy of that layer
	// Locked (workspace layer only): nil keeps an existing policy's lock
	// (new policies start unlocked).
	Locked *bool
}

// SetPolicy sets one tool's explicit policy in a layer and returns the tool
// as the caller sees it.
func (s *Service) SetPolicy(ctx context.Context, label, tool string, ch PolicyChange) (Tool, error) {
	if err := ValidateToolName("tool_name", tool); err != nil {
		return Tool{}, err
	}
	if ch.Policy == nil {
		return Tool{}, apperr.Invalidf("invalid_policy", "policy", "policy is required: one of always, never, blocked")
	}
	if _, err := ParsePolicy("policy", string(*ch.Policy)); err != nil {
		return Tool{}, err
	}
	return s.oneTool(ctx, label, tool, s.change(ctx, label, ch.Layer, map[string]*Policy{tool: ch.Policy}, ch.Locked))
}

// DeletePolicy removes a tool's explicit policy in a layer, so what applies
// without it applies again. Removing a policy that is not there changes nothing.
func (s *Service) DeletePolicy(ctx context.Context, label, tool string, layer Layer) (Tool, error) {
	if err := validateToolNameToRemove(tool); err != nil {
		return Tool{}, err
	}
	return s.oneTool(ctx, label, tool, s.change(ctx, label, layer, map[string]*Policy{tool: nil}, nil))
}

// SetPolicies sets several tools' policies in a layer at once, all or
// nothing. A nil policy removes the tool's explicit policy.
func (s *Service) SetPolicies(ctx context.Context, label string, layer Layer, policies map[string]*Policy) error {
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
	return s.change(ctx, label, layer, policies, nil)
}

// change applies validated policies to a layer in one transaction.
func (s *Service) change(ctx context.Context, label string, layer Layer, policies map[string]*Policy, locked *bool) error {
	u, err := caller(ctx)
	if err != nil {
		return err
	}
	switch layer {
	case LayerWorkspace:
		if !u.IsAdmin() {
			return errAdminOnly("workspace policies")
		}
		return s.store.Tx(ctx, func(r Repo) error { return s.setPolicies(ctx, r, u, label, policies, locked) })
	case LayerUser:
		if locked != nil {
			return apperr.Invalidf("invalid_locked", "locked",
				"locked is only for workspace policies (layer=workspace, admins); a personal policy cannot be locked")
		}
		return s.store.Tx(ctx, func(r Repo) error { return s.setUserPolicies(ctx, r, u, label, policies) })
	}
	return apperr.Invalidf("invalid_layer", "layer", "layer must be workspace or user (got %q)", layer)
}

// setPolicies applies validated workspace policies in the transaction r.
func (s *Service) setPolicies(ctx context.Context, r Repo, u auth.User, label string, policies map[string]*Policy, locked *bool) error {
	if _, err := r.Servers.Get(ctx, label, true); err != nil {
		return err
	}
	current, err := r.Policies.List(ctx, label)
	if err != nil {
		return err
	}
	tools, err := r.Tools.List(ctx, label)
	if err != nil {
		return err
	}
	have := map[string]ToolPolicy{}
	for _, p := range current {
		have[p.ToolName] = p
	}
	for _, name := range sortedKeys(policies) {
		p := policies[name]
		old, had := have[name]
		lock := old.Locked
		if locked != nil {
			lock = *locked
		}
		t := findTool(tools, label, name)
		switch {
		case p == nil && !had:
			continue
		case p != nil && had && old.Policy == *p && old.Locked == lock && (*p != Never || old.GrantedDigest == t.Digest):
			continue // no change, no audit entry
		case p == nil:
			if _, err := r.Policies.Delete(ctx, label, name); err != nil {
				return err
			}
		default:
			tp := ToolPolicy{ServerLabel: label, ToolName: name, Policy: *p, Locked: lock, UpdatedBy: u.Email, UpdatedByID: &u.ID}
			tp.GrantedDigest, tp.GrantedDefinition = granted(t, *p)
			if err := r.Policies.Upsert(ctx, tp); err != nil {
				return err
			}
		}
		action, before, after := ActionPolicySet, policyState(old.Policy, old.Locked, had), policyState(deref(p), lock, p != nil)
		if p == nil {
			action = ActionPolicyDelete
		}
		if err := s.insertAudit(ctx, r, u, action, &label, &name, before, after); err != nil {
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
	return withEffective(srv, set, []Tool{{DiscoveredTool: DiscoveredTool{Name: name}, ServerLabel: label}}, nil)[0], nil
}

// Settings returns the global settings.
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	return s.store.Repo().Settings.Get(ctx)
}

// UpdateSettings applies a settings patch.
func (s *Service) UpdateSettings(ctx context.Context, p SettingsPatch) (Settings, error) {
	u, err := requireAdmin(ctx, "the global settings")
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
func (s *Service) updateSettingsIn(ctx context.Context, r Repo, u auth.User, p SettingsPatch) (before, after Settings, err error) {
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
	return cur, out, s.insertAudit(ctx, r, u, ActionSettingsWrite, nil, nil, settingsSnapshot(cur), settingsSnapshot(next))
}

// Audit returns a page of the audit log, newest first: all of it for an
// admin; for a member, their own entries and every decision and receipt
// about their own conversations (expired, ended with the turn, decided by a
// rule: Toolgate's entries), never another user's conversations.
func (s *Service) Audit(ctx context.Context, q AuditQuery) (AuditPage, error) {
	u, err := caller(ctx)
	if err != nil {
		return AuditPage{}, err
	}
	if !u.IsAdmin() {
		q.ActorID = u.ID
	}
	if q.Limit <= 0 {
		q.Limit = 50
	}
	if q.Limit > 500 {
		return AuditPage{}, apperr.Invalidf("invalid_limit", "limit", "limit must be between 1 and 500 (got %d)", q.Limit)
	}
	q.Limit++ // one more tells whether there is a next page
	entries, err := s.store.Repo().Audit.List(ctx, q)
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

func (s *Service) audit(ctx context.Context, r Repo, action string, server, tool *string, before, after any) error {
	u, err := caller(ctx)
	if err != nil {
		return err
	}
	return s.insertAudit(ctx, r, u, action, server, tool, before, after)
}

func (s *Service) insertAudit(ctx context.Context, r Repo, u auth.User, action string, server, tool *string, before, after any) error {
	b, err := marshalState(before)
	if err != nil {
		return err
	}
	a, err := marshalState(after)
	if err != nil {
		return err
	}
	return r.Audit.Insert(ctx, AuditEntry{Actor: u.Email, ActorID: u.ID, Action: action, ServerLabel: server, ToolName: tool, Before: b, After: a})
}

func marshalState(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(v)
}

// serverSnapshot is a server as the audit log shows it: secrets masked.
func serverSnapshot(s Server) map[string]any {
	m := map[string]any{"label": s.Label, "url": MaskURL(s.URL), "description": s.Description,
		"headers": MaskedHeaders(s.Headers), "default_policy": s.DefaultPolicy,
		"default_policy_locked": s.DefaultPolicyLocked, "enabled": s.Enabled, "approval_ttl_seconds": s.ApprovalTTLSeconds}
	if s.UnmaskedResults { // masking is the default: named only when off
		m["mask_results"] = false
	}
	return m
}

func settingsSnapshot(s Settings) map[string]any {
	return map[string]any{"default_policy": s.DefaultPolicy, "default_policy_locked": s.DefaultPolicyLocked, "ask_everything": s.AskEverything}
}

func serverChanged(a, b Server) bool {
	return a.URL != b.URL || a.Description != b.Description || !maps.Equal(a.Headers, b.Headers) ||
		deref(a.DefaultPolicy) != deref(b.DefaultPolicy) || a.DefaultPolicyLocked != b.DefaultPolicyLocked || a.Enabled != b.Enabled ||
		!equalPtr(a.ApprovalTTLSeconds, b.ApprovalTTLSeconds) || a.ReadOnlyHints != b.ReadOnlyHints ||
		a.UnmaskedResults != b.UnmaskedResults
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func policyMap(ps []ToolPolicy) map[string]Policy {
	m := make(map[string]Policy, len(ps))
	for _, p := range ps {
		m[p.ToolName] = p.Policy
	}
	return m
}

func policyState(p Policy, locked, ok bool) any {
	if !ok {
		return nil
	}
	if locked {
		return map[string]any{"policy": p, "locked": true}
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
