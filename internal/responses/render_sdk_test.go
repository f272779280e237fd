package responses

// The rendering of the tools as it was before the tools were written
// straight into the request (openai-go's ToolUnionParam, marshalled by
// openai-go): the oracle the new rendering is compared with
// (render_equiv_test.go), and the baseline of its benchmarks.

import (
	"maps"
	"slices"
	"strconv"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// sdkEntry is one mcp tools sdkEntry being built.
type sdkEntry struct {
	srv      policy.Server
	label    string   // the label wanted, then the label sent
	approval string   // "always" or "never"; "" with never/always: the object form
	never    []string // object form only
	always   []string // object form only
	allowAll bool     // no allowed_tools: every tool of the server is offered
	allowed  []string // when !allowAll
}

// RenderTools renders the servers' policy groups as the request's tools and
// returns the labels it used. Servers are rendered in the order given.
//
// Default layout: one sdkEntry per server labelled with the server's label.
// allowed_tools names the Never and Always tools (sorted) and is left out
// only when OfferUnknown is set; require_approval is the object form with
// the non-empty lists, or "always" when both are empty. A tool in neither
// list asks, which is how tools Toolgate has not seen stay asked. A server
// that offers nothing (no tools, OfferUnknown unset) gets no sdkEntry.
//
// Split layout: one sdkEntry per non-empty group, <label>__never with
// require_approval "never" and <label>__always with "always", each with its
// group's tools as allowed_tools. When OfferUnknown is set only the
// __always sdkEntry is sent, without allowed_tools: the API cannot express
// "every tool but these", and offering the Never tools in both entries
// would leave it to the model which rule applies, so everything asks. That
// errs on the safe side: Never tools ask until discovery has found the
// server's tools.
//
// Labels are unique in the request: a generated label that is already taken
// (by another server or generated label) or that an answer needs for
// another server gets _2, _3, … appended, in the order the servers are
// given, so the same input always gives the same labels.
//
// Answers: upstream runs an approved call with the sdkEntry whose server_label
// equals the approval request's, so for every answer whose server is among
// groups the request offers Answer.ToolName under exactly
// Answer.UpstreamLabel: the tool is added to that sdkEntry's allowed_tools
// (its require_approval stays as it is, except that a "never" sdkEntry turns
// into the object form so that the added tool still asks), or, when no
// sdkEntry has that label (the tool changed groups in the split layout, or the
// server offers nothing else), an sdkEntry with that label is added for the
// server with allowed_tools [tool] and require_approval "always". Answers
// for servers not among groups (disabled or deleted) change nothing:
// upstream then rejects the request, and that error is what the person sees.
func renderToolsSDK(groups []policy.ServerTools, answers []conversation.Answer, layout Layout) ([]responses.ToolUnionParam, Labels) {
	servers := map[string]policy.Server{}
	for _, g := range groups {
		servers[g.Server.Label] = g.Server
	}
	// Labels the answers need, with the server each belongs to.
	reserved := map[string]string{}
	for _, a := range answers {
		if _, ok := servers[a.ServerLabel]; ok {
			if _, taken := reserved[sdkAnswerLabel(a)]; !taken {
				reserved[sdkAnswerLabel(a)] = a.ServerLabel
			}
		}
	}

	var entries []*sdkEntry
	for _, g := range groups {
		entries = append(entries, sdkGroupEntries(g, layout)...)
	}
	used := map[string]bool{}
	for _, e := range entries {
		e.label = sdkUniqueLabel(e.label, e.srv.Label, used, reserved)
		used[e.label] = true
	}

	for _, a := range answers {
		srv, ok := servers[a.ServerLabel]
		if !ok || reserved[sdkAnswerLabel(a)] != a.ServerLabel {
			continue
		}
		label := sdkAnswerLabel(a)
		i := slices.IndexFunc(entries, func(e *sdkEntry) bool { return e.label == label })
		if i < 0 {
			entries = append(entries, &sdkEntry{srv: srv, label: label, approval: "always"})
			i = len(entries) - 1
		}
		if e := entries[i]; !e.allowAll && !slices.Contains(e.allowed, a.ToolName) {
			if e.approval == "never" {
				// The added tool would run unasked if the model called it
				// again in this response: only the group's own tools skip
				// approval (object form).
				e.approval, e.never = "", slices.Clone(e.allowed)
			}
			e.allowed = append(e.allowed, a.ToolName)
			slices.Sort(e.allowed)
		}
	}

	var tools []responses.ToolUnionParam // nil when empty: no "tools": [] on the wire
	labels := make(Labels, len(entries))
	for _, e := range entries {
		tools = append(tools, e.param())
		labels[e.label] = e.srv.Label
	}
	return tools, labels
}

// sdkAnswerLabel is the label an answer's approval request came from; answers
// without one came from a request in the default layout.
func sdkAnswerLabel(a conversation.Answer) string {
	if a.UpstreamLabel != "" {
		return a.UpstreamLabel
	}
	return a.ServerLabel
}

// sdkGroupEntries renders one server's groups, with the labels wanted.
func sdkGroupEntries(g policy.ServerTools, layout Layout) []*sdkEntry {
	never, always := sdkNames(g.Never), sdkNames(g.Always)
	if layout == LayoutSplit {
		if g.OfferUnknown {
			return []*sdkEntry{{srv: g.Server, label: g.Server.Label + alwaysSuffix, approval: "always", allowAll: true}}
		}
		var out []*sdkEntry
		if len(never) > 0 {
			out = append(out, &sdkEntry{srv: g.Server, label: g.Server.Label + neverSuffix, approval: "never", allowed: never})
		}
		if len(always) > 0 {
			out = append(out, &sdkEntry{srv: g.Server, label: g.Server.Label + alwaysSuffix, approval: "always", allowed: always})
		}
		return out
	}
	if !g.OfferUnknown && len(never)+len(always) == 0 {
		return nil
	}
	e := &sdkEntry{srv: g.Server, label: g.Server.Label, never: never, always: always, allowAll: g.OfferUnknown}
	if len(never)+len(always) == 0 {
		e.approval = "always"
	}
	if !g.OfferUnknown {
		e.allowed = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(never), always...))))
	}
	return []*sdkEntry{e}
}

// sdkUniqueLabel returns want, or want_2, want_3, … : the first that is not used
// and not needed by an answer for another server.
func sdkUniqueLabel(want, server string, used map[string]bool, reserved map[string]string) string {
	free := func(l string) bool {
		owner, isReserved := reserved[l]
		return !used[l] && (!isReserved || owner == server)
	}
	if free(want) {
		return want
	}
	for n := 2; ; n++ {
		if l := want + "_" + strconv.Itoa(n); free(l) {
			return l
		}
	}
}

func sdkNames(tools []policy.GroupedTool) []string {
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// param is the sdkEntry as the SDK sends it.
func (e *sdkEntry) param() responses.ToolUnionParam {
	m := &responses.ToolMcpParam{
		ServerLabel: e.label,
		ServerURL:   openai.String(e.srv.URL),
	}
	if e.srv.Description != "" {
		m.ServerDescription = openai.String(e.srv.Description)
	}
	if len(e.srv.Headers) > 0 {
		m.Headers = maps.Clone(e.srv.Headers)
	}
	if !e.allowAll {
		// Never empty here: entries are only made for tools to offer.
		m.AllowedTools = responses.ToolMcpAllowedToolsUnionParam{OfMcpAllowedTools: slices.Clone(e.allowed)}
	}
	if e.approval != "" {
		m.RequireApproval = responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String(e.approval)}
	} else {
		f := &responses.ToolMcpRequireApprovalMcpToolApprovalFilterParam{}
		if len(e.always) > 0 {
			f.Always.ToolNames = slices.Clone(e.always)
		}
		if len(e.never) > 0 {
			f.Never.ToolNames = slices.Clone(e.never)
		}
		m.RequireApproval = responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalFilter: f}
	}
	return responses.ToolUnionParam{OfMcp: m}
}
