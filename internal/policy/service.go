package policy

import (
	"context"
	"errors"
	"maps"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/hooks"
)

// Policies is the policies part of the policy API: the tools of a server
// with the caller's policies, setting and clearing policies in either
// layer, the global settings, and the workspace defaults a decision widens.
type Policies struct {
	store Store
	urls  URLChecker // nil: no URL policy
}

// Options are the settings of the policy service's parts; the zero value
// of each field is its default.
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

// NewPolicies returns the policies part over store; urls (nil: none) is
// the URL policy a server's new URL is checked against.
func NewPolicies(store Store, urls URLChecker) *Policies {
	return &Policies{store: store, urls: urls}
}

// UpdateServerIn applies p to the server in r (locked), audited as
// server.update with u as the actor: what UpdateServer stores, and what a
// wider decision's change of a server's default stores (widen.go).
func (s *Policies) UpdateServerIn(ctx context.Context, r Repo, u auth.User, label string, p ServerPatch) (before, after Server, err error) {
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
		if err := CheckURL(ctx, s.urls, after.URL); err != nil {
			return before, after, err
		}
	}
	dropped := after.HeadersDropped
	if after, err = r.Servers.Update(ctx, after); err != nil {
		return before, after, err
	}
	after.HeadersDropped = dropped
	snap, was := ServerSnapshot(after), ServerSnapshot(before)
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
	return before, after, WriteAudit(ctx, r, u, ActionServerUpdate, &label, nil, was, snap)
}

// Tools returns every known tool of a server with the caller's policies:
// the workspace's, their own, and the effective one by the one precedence.
func (s *Policies) Tools(ctx context.Context, label string) ([]Tool, error) {
	u, err := Caller(ctx)
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
func (s *Policies) Policies(ctx context.Context, label string) ([]ToolPolicy, error) {
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
func (s *Policies) SetPolicy(ctx context.Context, label, tool string, ch PolicyChange) (Tool, error) {
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
func (s *Policies) DeletePolicy(ctx context.Context, label, tool string, layer Layer) (Tool, error) {
	if err := validateToolNameToRemove(tool); err != nil {
		return Tool{}, err
	}
	return s.oneTool(ctx, label, tool, s.change(ctx, label, layer, map[string]*Policy{tool: nil}, nil))
}

// SetPolicies sets several tools' policies in a layer at once, all or
// nothing. A nil policy removes the tool's explicit policy.
func (s *Policies) SetPolicies(ctx context.Context, label string, layer Layer, policies map[string]*Policy) error {
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
func (s *Policies) change(ctx context.Context, label string, layer Layer, policies map[string]*Policy, locked *bool) error {
	u, err := Caller(ctx)
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
func (s *Policies) setPolicies(ctx context.Context, r Repo, u auth.User, label string, policies map[string]*Policy, locked *bool) error {
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
		t := FindTool(tools, label, name)
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
		if err := WriteAudit(ctx, r, u, action, &label, &name, before, after); err != nil {
			return err
		}
	}
	return nil
}

func (s *Policies) oneTool(ctx context.Context, label, name string, err error) (Tool, error) {
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
	srv, err := s.store.Repo().Servers.Get(ctx, label, false)
	if err != nil {
		return Tool{}, err
	}
	set, err := s.Settings(ctx)
	if err != nil {
		return Tool{}, err
	}
	return withEffective(srv, set, []Tool{{DiscoveredTool: DiscoveredTool{Name: name}, ServerLabel: label}}, nil)[0], nil
}

// ServerSnapshot is a server as the audit log shows it: secrets masked.
func ServerSnapshot(s Server) map[string]any {
	m := map[string]any{"label": s.Label, "url": MaskURL(s.URL), "description": s.Description,
		"headers": MaskedHeaders(s.Headers), "default_policy": s.DefaultPolicy,
		"default_policy_locked": s.DefaultPolicyLocked, "enabled": s.Enabled, "approval_ttl_seconds": s.ApprovalTTLSeconds}
	if s.UnmaskedResults { // masking is the default: named only when off
		m["mask_results"] = false
	}
	return m
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

// PolicyMap maps each policy's tool to its policy.
func PolicyMap(ps []ToolPolicy) map[string]Policy {
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

// ToTools makes discovered tools known tools, with their digests.
func ToTools(d []DiscoveredTool) []Tool {
	out := make([]Tool, len(d))
	for i, t := range d {
		out[i] = Tool{DiscoveredTool: t, Discovered: true, Digest: t.Digest()}
	}
	return out
}

// ToolDigests maps each discovered tool of ts to its digest.
func ToolDigests(ts []Tool) map[string]string {
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

// NullIfEmpty is s, or nil (JSON null in an audit entry) when it is empty.
func NullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ErrorMessage is err's message as the API shows it: an apperr's message, else the error.
func ErrorMessage(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
