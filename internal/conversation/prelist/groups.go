package prelist

import (
	"cmp"
	"context"
	"slices"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// What a request offers after the listings of direct mode (prelist.go).

// anyChanged reports whether a listing changed a stored definition: the
// groups read before it are stale.
func anyChanged(ls map[string]*listing) bool {
	for _, l := range ls {
		if len(l.changed) > 0 {
			return true
		}
	}
	return false
}

// checked returns groups with every tool that would run unasked and that
// the listings could not vouch for moved to asking: changed (its listing
// recorded a new definition), or unverified (no listing, a failed one, or
// one that left it out). Groups are never changed in place.
func checked(groups []policy.ServerTools, ls map[string]*listing) []policy.ServerTools {
	var out []policy.ServerTools
	for i, g := range groups {
		names := unasked(g)
		if len(names) == 0 {
			continue
		}
		l := ls[g.Server.Label]
		ask := map[string]*policy.AsksBecause{}
		for _, n := range names {
			switch {
			case l == nil || l.err != nil || !l.listed[n]:
				ask[n] = &policy.AsksBecause{Reason: conversation.ReasonUnverified}
			case l.changed[n]:
				ask[n] = &policy.AsksBecause{Reason: policy.ReasonChanged}
			}
		}
		if len(ask) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(groups)
		}
		out[i] = askInstead(g, ask)
	}
	if out == nil {
		return groups
	}
	return out
}

// askInstead moves the tools ask names from running unasked to asking.
func askInstead(g policy.ServerTools, ask map[string]*policy.AsksBecause) policy.ServerTools {
	source := func(why *policy.AsksBecause) policy.Source {
		if why.Reason == policy.ReasonChanged {
			return policy.FromChanged
		}
		return policy.FromUnknown
	}
	never := make([]policy.GroupedTool, 0, len(g.Never))
	always := slices.Clone(g.Always)
	for _, t := range g.Never {
		why, ok := ask[t.Name]
		if !ok {
			never = append(never, t)
			continue
		}
		always = append(always, policy.GroupedTool{Name: t.Name, Source: source(why), AsksBecause: why})
	}
	if g.Ruled != nil {
		ruled := make(map[string]policy.RuledTool, len(g.Ruled))
		for name, rt := range g.Ruled {
			if why, ok := ask[name]; ok && rt.Policy == policy.Never {
				rt = policy.RuledTool{Policy: policy.Always, Source: source(why)}
				if i := slices.IndexFunc(always, func(t policy.GroupedTool) bool { return t.Name == name }); i >= 0 {
					always[i] = policy.GroupedTool{Name: name, Source: source(why), AsksBecause: why}
				}
			}
			ruled[name] = rt
		}
		g.Ruled = ruled
	}
	slices.SortFunc(always, func(a, b policy.GroupedTool) int { return cmp.Compare(a.Name, b.Name) })
	g.Never, g.Always = never, always
	return g
}

// Check lists the servers of groups with tools that would run unasked
// and returns the groups the request is built from. When a listing changed
// a stored definition, the groups are read again (reread: the policies
// resolve the change: a tool allowed for the old definition asks) before
// the tools the listings could not vouch for are moved to asking.
// unchecked hears each server whose listing failed.
func (p *Listings) Check(ctx context.Context, groups []policy.ServerTools, skipped []policy.SkippedServer,
	reread func() ([]policy.ServerTools, []policy.SkippedServer, error), unchecked func(label string, err error)) ([]policy.ServerTools, []policy.SkippedServer, error) {
	ls := p.listFor(ctx, groups)
	if anyChanged(ls) {
		again, sk, err := reread()
		if err != nil {
			return nil, nil, err
		}
		groups, skipped = again, sk
	}
	for _, g := range groups {
		if l := ls[g.Server.Label]; l != nil && l.err != nil {
			unchecked(g.Server.Label, l.err)
		}
	}
	return checked(groups, ls), skipped, nil
}
