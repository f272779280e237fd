package policy

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// FromConversation is the source of a tool that runs without asking because
// the person allowed it for one conversation ("Allow for this conversation").
const FromConversation Source = "conversation"

// FromGrant is the source of a tool that runs without asking because the
// person approved it for a while ("for 1 hour") in all their conversations.
const FromGrant Source = "grant"

// GrantRef is a grant a request is built with: the tool runs without asking
// while it lasts. Conversation is false for a timed grant, which covers all
// of its owner's conversations until ExpiresAt.
type GrantRef struct {
	ID           string
	Conversation bool
	ExpiresAt    *time.Time
	// CreatedAt is when the person granted it: a tool whose definition
	// changed after it is not covered (zero: not known, covered).
	CreatedAt time.Time
}

// covers reports whether g, given at g.CreatedAt, still covers t: not
// when t's definition changed after the grant (the person approved
// another definition), so a changed tool asks again.
func (g GrantRef) covers(t Tool) bool {
	return g.CreatedAt.IsZero() || !t.Discovered || t.ChangedAt == nil || !t.ChangedAt.After(g.CreatedAt)
}

// source is the source a tool allowed by g runs with.
func (g GrantRef) source() Source {
	if g.Conversation {
		return FromConversation
	}
	return FromGrant
}

// FromUnknown is the source recorded when a tool Toolgate has never seen asks:
// an unknown tool is never run without asking, whatever the defaults say.
const FromUnknown Source = "unknown"

// GroupedTool is one tool in a policy group, with where its policy came from
// and, for a tool that asks, why.
type GroupedTool struct {
	Name        string       `json:"name"`
	Source      Source       `json:"source"`
	AsksBecause *AsksBecause `json:"asks_because,omitempty"`
	// Grant is the grant a tool runs without asking by (source
	// conversation or grant).
	Grant *GrantRef `json:"-"`
	// AskLock is the level of an admin's lock at Ask on the tool (tool,
	// server, global), "" when none: see Resolution.AskLock.
	AskLock Source `json:"-"`
}

// ServerTools is one enabled server's tools grouped by effective policy: the
// input a request to the model is built from. Groups handed out are never
// changed in place (a change is new slices): the snapshot's are shared by
// every turn, and the request renderer (internal/responses) keeps what it
// rendered from them by their lists' identity.
type ServerTools struct {
	Server  Server
	Never   []GroupedTool // run without asking
	Always  []GroupedTool // ask every time
	Blocked []string      // never offered
	// OfferUnknown says whether tools Toolgate has not seen are offered (and
	// then always asked). True only while discovery has found none of the
	// server's tools and nothing is blocked by name: once Toolgate knows the
	// server's tools, requests offer exactly the known, unblocked ones, and a
	// server whose defaults block everything offers nothing unknown.
	OfferUnknown bool
	// Ruled are the tools argument rules apply to, with the policy each has
	// without them: they are offered as asking (in Always), so that every
	// call comes to Toolgate, which lets the rules decide and, when no rule
	// holds, the policy (a tool that would run without asking then runs
	// without a card).
	Ruled map[string]RuledTool
	// AllRuled: server or workspace rules apply, so every tool of the
	// server, unknown ones included, is checked against them.
	AllRuled bool
	// DefaultAskLock is the level of an admin's lock at Ask that applies
	// to a tool the server has not listed (its default or the global
	// default, locked, resolving to always); "" when none.
	DefaultAskLock Source
}

// RuledTool is the policy a tool with rules has without them.
type RuledTool struct {
	Policy Policy
	Source Source
	// Grant is the grant that makes the policy never (sources
	// conversation and grant); nil otherwise.
	Grant *GrantRef
}

// HasRules reports whether rules apply to a tool of g, and the policy it
// has without them (always/unknown for a tool g does not name).
func (g ServerTools) HasRules(tool string) (RuledTool, bool) {
	if rt, ok := g.Ruled[tool]; ok {
		return rt, true
	}
	if !g.AllRuled {
		return RuledTool{}, false
	}
	p, src := g.Lookup(tool)
	return RuledTool{Policy: p, Source: src}, p != Blocked
}

// withRules offers the tools rules apply to as asking: every tool when
// all (server or workspace rules), else those named by tools. Blocked
// tools stay blocked: rules never loosen them.
func (g *ServerTools) withRules(all bool, tools map[string]bool) {
	if !all && len(tools) == 0 {
		return
	}
	g.AllRuled = all
	g.Ruled = map[string]RuledTool{}
	keep := g.Never[:0:0]
	for _, t := range g.Never {
		if all || tools[t.Name] {
			g.Ruled[t.Name] = RuledTool{Policy: Never, Source: t.Source, Grant: t.Grant}
			g.Always = append(g.Always, GroupedTool{Name: t.Name, Source: t.Source, AsksBecause: &AsksBecause{Reason: ReasonRules}})
			continue
		}
		keep = append(keep, t)
	}
	g.Never = keep
	for _, t := range g.Always {
		if _, moved := g.Ruled[t.Name]; !moved && (all || tools[t.Name]) {
			g.Ruled[t.Name] = RuledTool{Policy: Always, Source: t.Source}
		}
	}
	slices.SortFunc(g.Always, func(a, b GroupedTool) int { return cmp.Compare(a.Name, b.Name) })
}

// Offered reports whether the server offers the model anything at all.
func (g ServerTools) Offered() bool {
	return len(g.Never) > 0 || len(g.Always) > 0 || g.OfferUnknown
}

// Lookup returns the group a tool is in and why, as the request built from g
// treats it: never, always or blocked with its source (new and changed
// tools ask with those sources), or always/unknown for a tool g does not name.
func (g ServerTools) Lookup(tool string) (Policy, Source) {
	for _, t := range g.Never {
		if t.Name == tool {
			return Never, t.Source
		}
	}
	for _, t := range g.Always {
		if t.Name == tool {
			return Always, t.Source
		}
	}
	if slices.Contains(g.Blocked, tool) {
		return Blocked, FromTool
	}
	return Always, FromUnknown
}

// GrantOf returns the grant a tool of g runs without asking by; nil when
// none does.
func (g ServerTools) GrantOf(tool string) *GrantRef {
	for _, t := range g.Never {
		if t.Name == tool {
			return t.Grant
		}
	}
	return nil
}

// AskLock is the level of an admin's lock at Ask on a tool of g (tool,
// server, global), or "" when the tool is not locked at Ask: such a tool
// asks every time, and no grant, rule, hook or remembered approval
// loosens it.
func (g ServerTools) AskLock(tool string) Source {
	for _, t := range g.Always {
		if t.Name == tool {
			return t.AskLock
		}
	}
	if slices.ContainsFunc(g.Never, func(t GroupedTool) bool { return t.Name == tool }) || slices.Contains(g.Blocked, tool) {
		return ""
	}
	return g.DefaultAskLock
}

// AsksBecause says why a tool of g asks: not read-only, new, changed since
// it was allowed, or a policy; nil for a tool that does not ask or that g
// does not name.
func (g ServerTools) AsksBecause(tool string) *AsksBecause {
	for _, t := range g.Always {
		if t.Name == tool {
			return t.AsksBecause
		}
	}
	return nil
}

// GroupTools sorts a server's known tools into policy groups for one user.
// tools are the server's tools as Repo.Tools returns them (workspace
// policies set, effective ones not needed); mine are the user's personal
// policies for the server; allowed names the tools allowed without asking in
// the conversation the request belongs to, with the grant that allows each.
// A grant never unblocks a tool: blocked wins.
func GroupTools(srv Server, set Settings, tools []Tool, mine []UserPolicy, allowed map[string]GrantRef) ServerTools {
	g := ServerTools{Server: srv}
	discovered := false
	tools = withUserPolicies(srv.Label, tools, mine)
	def := Workspace(resolveInput(srv, set, Tool{}))
	if srv.Enabled && def.Locked && def.Policy == Always {
		g.DefaultAskLock = def.Source
	}
	for _, t := range tools {
		discovered = discovered || t.Discovered
		res := Resolve(resolveInput(srv, set, t))
		switch {
		case res.Policy == Blocked:
			g.Blocked = append(g.Blocked, t.Name)
		case res.Policy == Never:
			g.Never = append(g.Never, GroupedTool{Name: t.Name, Source: res.Source})
		// The admin's switch outranks a grant, and so does an admin's
		// lock at Ask: a locked Ask asks every time.
		case hasGrant(allowed, t.Name) && !set.AskEverything && res.AskLock == "" && !allowed[t.Name].covers(t):
			g.Always = append(g.Always, GroupedTool{Name: t.Name, Source: FromChanged, AsksBecause: &AsksBecause{Reason: ReasonChanged}})
		case hasGrant(allowed, t.Name) && !set.AskEverything && res.AskLock == "":
			gr := allowed[t.Name]
			g.Never = append(g.Never, GroupedTool{Name: t.Name, Source: gr.source(), Grant: &gr})
		default:
			g.Always = append(g.Always, GroupedTool{Name: t.Name, Source: res.Source, AsksBecause: res.AsksBecause, AskLock: res.AskLock})
		}
	}
	// Grants for tools the server has not listed (yet) still apply, unless
	// the defaults that apply to such a tool are locked at Ask.
	for name, gr := range allowed {
		if !set.AskEverything && g.DefaultAskLock == "" && !slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == name }) {
			g.Never = append(g.Never, GroupedTool{Name: name, Source: gr.source(), Grant: &gr})
		}
	}
	g.OfferUnknown = !discovered && len(g.Blocked) == 0 && def.Policy != Blocked
	byName := func(a, b GroupedTool) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(g.Never, byName)
	slices.SortFunc(g.Always, byName)
	slices.Sort(g.Blocked)
	return g
}

func hasGrant(allowed map[string]GrantRef, tool string) bool {
	_, ok := allowed[tool]
	return ok
}

// withUserPolicies sets each tool's UserPolicy (and what it was granted
// for) from mine, adding the names that only have a personal policy.
func withUserPolicies(label string, tools []Tool, mine []UserPolicy) []Tool {
	if len(mine) == 0 {
		return tools
	}
	tools = slices.Clone(tools)
	for _, up := range mine {
		i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == up.ToolName })
		if i < 0 {
			tools = append(tools, Tool{DiscoveredTool: DiscoveredTool{Name: up.ToolName}, ServerLabel: label})
			i = len(tools) - 1
		}
		if d := up.ToolDefinition; d != nil && tools[i].Discovered {
			tools[i].Title, tools[i].Description, tools[i].InputSchema, tools[i].Annotations = d.Title, d.Description, d.InputSchema, d.Annotations
		}
		p := up.Policy
		tools[i].UserPolicy = &p
		tools[i].userGrant = &Explicit{Policy: up.Policy, GrantedDigest: up.GrantedDigest, GrantedDefinition: up.GrantedDefinition}
	}
	slices.SortFunc(tools, func(a, b Tool) int { return cmp.Compare(a.Name, b.Name) })
	return tools
}

// resolveInput is what Resolve needs to know about t (with its workspace
// and, set by withUserPolicies, personal policy) on srv.
func resolveInput(srv Server, set Settings, t Tool) ResolveInput {
	in := ResolveInput{ServerDisabled: !srv.Enabled, AskEverything: set.AskEverything, Global: set.DefaultPolicy, GlobalLocked: set.DefaultPolicyLocked,
		ServerDefault: srv.DefaultPolicy, ServerLocked: srv.DefaultPolicyLocked, User: t.userGrant,
		HintsTrusted: srv.ReadOnlyHints == HintsTrusted}
	if t.Policy != nil {
		in.Workspace = &Explicit{Policy: *t.Policy, Locked: t.PolicyLocked, GrantedDigest: t.GrantedDigest,
			GrantedDefinition: t.GrantedDefinition}
	}
	if t.Discovered {
		in.ReadOnly, in.Digest, in.ChangedAt, in.FirstSeen = t.Annotations.ReadOnlyHint, t.Digest, t.ChangedAt, t.FirstSeenAt
		in.Definition = DefinitionOf(t.DiscoveredTool)
		in.New = srv.FirstDiscoveredAt != nil && t.FirstSeenAt != nil && t.FirstSeenAt.After(*srv.FirstDiscoveredAt)
	}
	return in
}

// withEffective sets the caller's effective policy on each tool.
func withEffective(srv Server, set Settings, tools []Tool, mine []UserPolicy) []Tool {
	tools = withUserPolicies(srv.Label, tools, mine)
	for i := range tools {
		res := Resolve(resolveInput(srv, set, tools[i]))
		tools[i].EffectivePolicy, tools[i].PolicySource, tools[i].Locked = res.Policy, res.Source, res.Locked
		tools[i].AsksBecause, tools[i].Changed = res.AsksBecause, res.Changed
	}
	return tools
}

func userPolicies(ctx context.Context, r Repo, userID, label string) ([]UserPolicy, error) {
	if userID == "" {
		return nil, nil
	}
	return r.Policies.OfUser(ctx, userID, label)
}

// Remember sets u's personal policy for a tool as part of a decision, in
// the caller's transaction r, so the policy and the decision are stored
// together or not at all. It never changes the workspace's policy; it is
// refused (policy_locked) when it would loosen a locked workspace setting or
// an admin's block, and audited like any other policy change, with u as
// the actor.
func (s *Policies) Remember(ctx context.Context, r Repo, u auth.User, label, tool string, p Policy) error {
	if u.ID == "" {
		return errNoCaller
	}
	return s.setUserPolicies(ctx, r, u, label, map[string]*Policy{tool: &p})
}

// Effective returns one tool's effective policy for the user userID, read
// in r. A server that no longer exists blocks all its tools.
func Effective(ctx context.Context, r Repo, userID, label, tool string) (Policy, Source, error) {
	res, err := ResolveTool(ctx, r, userID, label, tool)
	return res.Policy, res.Source, err
}

// ResolveTool is Effective with the whole resolution (an admin's lock at
// Ask among it).
func ResolveTool(ctx context.Context, r Repo, userID, label, tool string) (Resolution, error) {
	srv, err := r.Servers.Get(ctx, label, false)
	if apperr.KindOf(err) == apperr.NotFound {
		return Resolution{Policy: Blocked, Source: FromServer}, nil
	}
	if err != nil {
		return Resolution{}, err
	}
	set, err := r.Settings.Get(ctx)
	if err != nil {
		return Resolution{}, err
	}
	tools, err := r.Tools.List(ctx, label)
	if err != nil {
		return Resolution{}, err
	}
	mine, err := userPolicies(ctx, r, userID, label)
	if err != nil {
		return Resolution{}, err
	}
	t := Tool{DiscoveredTool: DiscoveredTool{Name: tool}, ServerLabel: label}
	for _, k := range withUserPolicies(label, tools, mine) {
		if k.Name == tool {
			t = k
		}
	}
	return Resolve(resolveInput(srv, set, t)), nil
}
