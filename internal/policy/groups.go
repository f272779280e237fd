package policy

import (
	"cmp"
	"context"
	"slices"

	"github.com/toolgate/toolgate/internal/apperr"
)

// FromConversation is the source of a tool that runs without asking because
// the person allowed it for one conversation ("Allow for this conversation").
const FromConversation Source = "conversation"

// FromUnknown is the source recorded when a tool Toolgate has never seen asks:
// an unknown tool is never run without asking, whatever the defaults say.
const FromUnknown Source = "unknown"

// GroupedTool is one tool in a policy group, with where its policy came from.
type GroupedTool struct {
	Name   string `json:"name"`
	Source Source `json:"source"`
}

// ServerTools is one enabled server's tools grouped by effective policy: the
// input a request to the model is built from.
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
}

// Offered reports whether the server offers the model anything at all.
func (g ServerTools) Offered() bool {
	return len(g.Never) > 0 || len(g.Always) > 0 || g.OfferUnknown
}

// Lookup returns the group a tool is in and why, as the request built from g
// treats it: never, always or blocked with its source, or always/unknown
// for a tool g does not name.
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

// GroupTools sorts a server's known tools into policy groups. tools are the
// server's tools as Repo.Tools returns them (explicit policies set, effective
// ones not needed); global is the global default; allowed names the tools
// allowed without asking in the conversation the request belongs to. A
// conversation grant never unblocks a tool: blocked wins.
func GroupTools(srv Server, tools []Tool, global Policy, allowed map[string]bool) ServerTools {
	g := ServerTools{Server: srv}
	discovered := false
	for _, t := range tools {
		discovered = discovered || t.Discovered
		p, src := Resolve(t.Policy, srv.DefaultPolicy, global)
		switch {
		case p == Blocked:
			g.Blocked = append(g.Blocked, t.Name)
		case p == Never:
			g.Never = append(g.Never, GroupedTool{t.Name, src})
		case allowed[t.Name]:
			g.Never = append(g.Never, GroupedTool{t.Name, FromConversation})
		default:
			g.Always = append(g.Always, GroupedTool{t.Name, src})
		}
	}
	// Grants for tools the server has not listed (yet) still apply.
	for name := range allowed {
		if !slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == name }) {
			g.Never = append(g.Never, GroupedTool{name, FromConversation})
		}
	}
	def, _ := Resolve(nil, srv.DefaultPolicy, global)
	g.OfferUnknown = !discovered && len(g.Blocked) == 0 && def != Blocked
	byName := func(a, b GroupedTool) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(g.Never, byName)
	slices.SortFunc(g.Always, byName)
	slices.Sort(g.Blocked)
	return g
}

// RequestTools groups the tools of every enabled server for one request.
// grants maps a server label to the tools allowed without asking in the
// conversation the request belongs to. Servers that offer nothing are left out.
func (s *Service) RequestTools(ctx context.Context, grants map[string]map[string]bool) ([]ServerTools, error) {
	var out []ServerTools
	err := s.store.Tx(ctx, func(r Repo) error {
		set, err := r.Settings(ctx)
		if err != nil {
			return err
		}
		servers, err := r.ListServers(ctx)
		if err != nil {
			return err
		}
		for _, srv := range servers {
			if !srv.Enabled {
				continue
			}
			tools, err := r.Tools(ctx, srv.Label)
			if err != nil {
				return err
			}
			if g := GroupTools(srv, tools, set.DefaultPolicy, grants[srv.Label]); g.Offered() {
				out = append(out, g)
			}
		}
		return nil
	})
	return out, err
}

// RecordListed stores tools that an upstream response listed for a server
// (its mcp_list_tools item) and Toolgate had not discovered yet. It only
// adds: a listing filtered by allowed_tools says nothing about the tools it
// leaves out, and upstream passes on less of a tool's annotations than the
// server's own tools/list (only read_only), so known definitions stay as
// discovery stored them. A server deleted meanwhile is not an error.
func (s *Service) RecordListed(ctx context.Context, label string, tools []DiscoveredTool) error {
	if len(tools) == 0 {
		return nil
	}
	return s.store.Tx(ctx, func(r Repo) error {
		if _, err := r.Server(ctx, label, true); err != nil {
			if apperr.KindOf(err) == apperr.NotFound {
				return nil
			}
			return err
		}
		known, err := r.Tools(ctx, label)
		if err != nil {
			return err
		}
		fresh := slices.DeleteFunc(slices.Clone(tools), func(t DiscoveredTool) bool {
			return slices.ContainsFunc(known, func(k Tool) bool { return k.Discovered && k.Name == t.Name })
		})
		if len(fresh) == 0 {
			return nil
		}
		return r.UpsertTools(ctx, label, fresh, s.now())
	})
}

// Remember sets a tool's policy as part of a decision, in the caller's
// transaction r, so the policy and the decision are stored together or not
// at all. The change is audited like any other policy change.
func (s *Service) Remember(ctx context.Context, r Repo, label, tool string, p Policy) error {
	return s.setPolicies(ctx, r, label, map[string]*Policy{tool: &p})
}

// Effective returns one tool's effective policy, read in r. A server that
// no longer exists blocks all its tools.
func Effective(ctx context.Context, r Repo, label, tool string) (Policy, Source, error) {
	srv, err := r.Server(ctx, label, false)
	if apperr.KindOf(err) == apperr.NotFound {
		return Blocked, FromServer, nil
	}
	if err != nil {
		return "", "", err
	}
	set, err := r.Settings(ctx)
	if err != nil {
		return "", "", err
	}
	tools, err := r.Tools(ctx, label)
	if err != nil {
		return "", "", err
	}
	var explicit *Policy
	for _, t := range tools {
		if t.Name == tool {
			explicit = t.Policy
		}
	}
	p, src := Resolve(explicit, srv.DefaultPolicy, set.DefaultPolicy)
	if !srv.Enabled {
		return Blocked, FromServer, nil
	}
	return p, src, nil
}
