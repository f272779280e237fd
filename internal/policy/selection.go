package policy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Selection is a person's choice, for one conversation, of the servers and
// tools its requests offer the model. A server it does not name offers all
// that its policies allow, so servers added later are on; a deselected
// server, or tool, is not offered at all, so the model cannot call it.
type Selection struct {
	Servers map[string]ServerSelection `json:"servers"`
}

// ServerSelection is the choice for one server: off, or on with every tool
// its policies offer (Tools nil) or only the tools named.
type ServerSelection struct {
	Enabled bool     `json:"enabled"`
	Tools   []string `json:"tools"`
}

// UnmarshalJSON reads a server's choice; "enabled" absent means true.
func (s *ServerSelection) UnmarshalJSON(b []byte) error {
	type plain ServerSelection
	p := plain{Enabled: true}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*s = ServerSelection(p)
	return nil
}

// Normalized returns sel with an empty map instead of nil and every tool
// list sorted without repeats, as it is stored.
func (sel Selection) Normalized() Selection {
	out := Selection{Servers: make(map[string]ServerSelection, len(sel.Servers))}
	for label, s := range sel.Servers {
		if s.Tools != nil {
			// An empty list (no tools) stays a list: nil would mean all of them.
			s.Tools = append([]string{}, slices.Compact(slices.Sorted(slices.Values(s.Tools)))...)
		}
		out.Servers[label] = s
	}
	return out
}

// offers reports whether sel lets the server offer tool.
func (sel Selection) offers(label, tool string) bool {
	s, ok := sel.Servers[label]
	return !ok || (s.Enabled && (s.Tools == nil || slices.Contains(s.Tools, tool)))
}

// Apply leaves out of groups what sel deselects. A server that offers
// nothing then is left out, unless keep names it (a request that answers
// its approval requests must carry it; the answered tool is added when the
// request is rendered).
func (sel Selection) Apply(groups []ServerTools, keep map[string]bool) []ServerTools {
	out := make([]ServerTools, 0, len(groups)) // one copy of the groups, not one per doubling
	for _, g := range groups {
		if g = sel.applyTo(g); g.Offered() || keep[g.Server.Label] {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ApplySkipped leaves out the skipped servers that sel deselects or whose
// selected tools are all gone: nobody needs to hear that a server they
// turned off is down.
func (sel Selection) ApplySkipped(skipped []SkippedServer) []SkippedServer {
	var out []SkippedServer
	for _, sk := range skipped {
		if sk.Tools = sel.applyTo(sk.Tools); sk.Tools.Offered() {
			out = append(out, sk)
		}
	}
	return out
}

func (sel Selection) applyTo(g ServerTools) ServerTools {
	s, named := sel.Servers[g.Server.Label]
	if !named || (s.Enabled && s.Tools == nil) {
		return g
	}
	keepTool := func(t GroupedTool) bool { return !sel.offers(g.Server.Label, t.Name) }
	g.Never = slices.DeleteFunc(slices.Clone(g.Never), keepTool)
	g.Always = slices.DeleteFunc(slices.Clone(g.Always), keepTool)
	// A list names known tools: tools Toolgate has not seen are not among them.
	g.OfferUnknown = false
	return g
}

// ServerChoice is one server as the person chooses for a conversation: the
// tools its policies offer them now, and which of those the conversation
// offers.
type ServerChoice struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	// Enabled: the conversation offers the server at all.
	Enabled bool `json:"enabled"`
	// OffersUnknown: Toolgate has not discovered the server's tools yet,
	// so every tool it has is offered (and asks) while it is enabled with
	// all its tools.
	OffersUnknown bool         `json:"offers_unknown"`
	Tools         []ToolChoice `json:"tools"`
}

// ToolChoice is one tool a server offers, with its effective policy (never:
// it runs without asking; always: it asks) and whether the conversation
// offers it.
type ToolChoice struct {
	Name     string `json:"name"`
	Policy   Policy `json:"policy"`
	Selected bool   `json:"selected"`
}

// Choices lists, for the groups ToolChoices returned, the servers a person
// can choose from (enabled ones that offer something) with sel applied.
func (sel Selection) Choices(groups []ServerTools) []ServerChoice {
	out := []ServerChoice{}
	for _, g := range groups {
		if !g.Server.Enabled || !g.Offered() {
			continue
		}
		s, named := sel.Servers[g.Server.Label]
		c := ServerChoice{Label: g.Server.Label, Description: g.Server.Description, Enabled: !named || s.Enabled,
			OffersUnknown: g.OfferUnknown, Tools: []ToolChoice{}}
		for _, t := range g.Never {
			c.Tools = append(c.Tools, ToolChoice{Name: t.Name, Policy: Never, Selected: sel.offers(g.Server.Label, t.Name)})
		}
		for _, t := range g.Always {
			c.Tools = append(c.Tools, ToolChoice{Name: t.Name, Policy: Always, Selected: sel.offers(g.Server.Label, t.Name)})
		}
		slices.SortFunc(c.Tools, func(a, b ToolChoice) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, c)
	}
	return out
}

// knows reports whether g names tool: offered or blocked.
func knows(g ServerTools, tool string) bool {
	named := func(t GroupedTool) bool { return t.Name == tool }
	return slices.ContainsFunc(g.Never, named) || slices.ContainsFunc(g.Always, named) || slices.Contains(g.Blocked, tool)
}

// Check refuses a selection that names a server Toolgate does not have
// (unknown_server) or a tool it does not know of that server (unknown_tool),
// given every server's groups as ToolChoices returned them.
func (sel Selection) Check(groups []ServerTools) error {
	known := map[string]ServerTools{}
	for _, g := range groups {
		known[g.Server.Label] = g
	}
	for _, label := range sortedKeys(sel.Servers) {
		g, ok := known[label]
		if !ok {
			return apperr.Invalidf("unknown_server", "servers."+label,
				"there is no MCP server with the label %q; GET /api/conversations/{id}/tools lists the servers to choose from", label)
		}
		for _, tool := range sel.Servers[label].Tools {
			if !knows(g, tool) {
				return apperr.Invalidf("unknown_tool", "servers."+label+".tools",
					"the %s server has no tool %q that Toolgate knows of; GET /api/conversations/{id}/tools lists its tools", label, tool)
			}
		}
	}
	return nil
}

// ToolChoices groups the tools of every server (enabled or not, reachable
// or not) for userID, without any conversation's allowances: what a person
// chooses a conversation's tools from.
func (s *Requests) ToolChoices(ctx context.Context, userID string) ([]ServerTools, error) {
	var out []ServerTools
	err := s.store.Tx(ctx, func(r Repo) error {
		out = nil
		set, err := r.Settings.Get(ctx)
		if err != nil {
			return err
		}
		servers, err := r.Servers.List(ctx)
		if err != nil {
			return err
		}
		for _, srv := range servers {
			tools, err := r.Tools.List(ctx, srv.Label)
			if err != nil {
				return err
			}
			mine, err := userPolicies(ctx, r, userID, srv.Label)
			if err != nil {
				return err
			}
			out = append(out, GroupTools(srv, set, tools, mine, nil))
		}
		return nil
	})
	return out, err
}
