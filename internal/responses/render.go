package responses

import (
	"maps"
	"slices"
	"strconv"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Layout is how a server's policy groups are rendered as mcp tools entries.
type Layout string

const (
	// LayoutDefault renders one entry per server, with require_approval in
	// the object form ({"always": {...}, "never": {...}}).
	LayoutDefault Layout = "default"
	// LayoutSplit renders one entry per policy group with a string
	// require_approval ("never" or "always"), for OpenAI-compatible
	// providers that only accept the string form. Labels get a suffix:
	// <label>__never and <label>__always.
	LayoutSplit Layout = "split"
)

// Suffixes of the split layout's labels.
const (
	neverSuffix  = "__never"
	alwaysSuffix = "__always"
)

// Labels maps every server_label of one request (the upstream label) to
// the label of the Toolgate server it stands for.
type Labels map[string]string

// Server returns the server an upstream label stands for; a label the
// request did not send is returned as is.
func (l Labels) Server(upstream string) string {
	if s, ok := l[upstream]; ok {
		return s
	}
	return upstream
}

// Tools is a request's tools as they go over the wire.
type Tools struct {
	JSON    []byte // the "tools" array; nil when the request offers none (no "tools" key is sent)
	Entries int    // mcp entries in JSON
	Labels  Labels // every server_label of JSON, with the server it stands for
}

// entryKind says which of a server's groups an entry renders.
type entryKind uint8

const (
	kindDefault entryKind = iota // the default layout's one entry per server
	kindNever                    // the split layout's __never entry
	kindAlways                   // the split layout's __always entry
	kindAnswer                   // added for an answer whose label no entry has
)

// entry is one mcp tools entry being built. It renders its group (g) as the
// layout says until an answer changes it: it is then custom, with its lists
// spelled out.
type entry struct {
	g      *policy.ServerTools // the group (for kindAnswer: the server's)
	kind   entryKind
	label  string // the label wanted, then the label sent
	custom bool   // the fields below are set (materialize)

	approval string   // "always" or "never"; "" with never/always: the object form
	never    []string // object form only
	always   []string // object form only
	allowAll bool     // no allowed_tools: every tool of the server is offered
	allowed  []string // when !allowAll
}

// RenderTools renders the servers' policy groups as the request's tools.
// Servers are rendered in the order given.
//
// Default layout: one entry per server labelled with the server's label.
// allowed_tools names the Never and Always tools (sorted) and is left out
// only when OfferUnknown is set; require_approval is the object form with
// the non-empty lists, or "always" when both are empty. A tool in neither
// list asks, which is how tools Toolgate has not seen stay asked. A server
// that offers nothing (no tools, OfferUnknown unset) gets no entry.
//
// Split layout: one entry per non-empty group, <label>__never with
// require_approval "never" and <label>__always with "always", each with its
// group's tools as allowed_tools. When OfferUnknown is set only the
// __always entry is sent, without allowed_tools: the API cannot express
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
// Answers: upstream runs an approved call with the entry whose server_label
// equals the approval request's, so for every answer whose server is among
// groups the request offers Answer.ToolName under exactly
// Answer.UpstreamLabel: the tool is added to that entry's allowed_tools
// (its require_approval stays as it is, except that a "never" entry turns
// into the object form so that the added tool still asks), or, when no
// entry has that label (the tool changed groups in the split layout, or the
// server offers nothing else), an entry with that label is added for the
// server with allowed_tools [tool] and require_approval "always". Answers
// for servers not among groups (disabled or deleted) change nothing:
// upstream then rejects the request, and that error is what the person sees.
func RenderTools(groups []policy.ServerTools, answers []conversation.Answer, layout Layout) Tools {
	r := render(groups, answers, layout, nil)
	t := Tools{Entries: len(r.entries), Labels: r.labels}
	if len(r.entries) > 0 {
		t.JSON = r.appendJSON(make([]byte, 0, r.size))
	}
	return t
}

// rendered is a request's tools, ready to be written.
type rendered struct {
	entries []entry
	heads   [][]byte // through the face: each entry's server_url and headers (nil: direct)
	frags   [][]byte // each entry's JSON after its server_label (and head)
	labels  Labels
	size    int // of the JSON array
}

// render lays out the entries of groups and answers (as RenderTools says)
// and renders each: from cache when it holds the entry as rendered before
// (nil: no cache).
func render(groups []policy.ServerTools, answers []conversation.Answer, layout Layout, cache *toolCache) rendered {
	return renderVia(groups, answers, layout, cache, nil)
}

// renderVia is render with the entries pointing at face (nil: at the
// servers themselves). Through the face an entry's fragment leaves out
// server_url and headers, so that it is the same for every request and
// cached as it is; the head, with the request's token, is written per
// request in front of it.
func renderVia(groups []policy.ServerTools, answers []conversation.Answer, layout Layout, cache *toolCache, face *faceRequest) rendered {
	var servers map[string]*policy.ServerTools
	var reserved map[string]string // labels the answers need, with the server each belongs to
	if len(answers) > 0 {
		servers = make(map[string]*policy.ServerTools, len(groups))
		for i := range groups {
			servers[groups[i].Server.Label] = &groups[i]
		}
		reserved = map[string]string{}
		for _, a := range answers {
			if _, ok := servers[a.ServerLabel]; ok {
				if _, taken := reserved[answerLabel(a)]; !taken {
					reserved[answerLabel(a)] = a.ServerLabel
				}
			}
		}
	}

	entries := make([]entry, 0, len(groups))
	for i := range groups {
		entries = appendEntries(entries, &groups[i], layout)
	}
	used := make(map[string]bool, len(entries))
	for i := range entries {
		e := &entries[i]
		e.label = uniqueLabel(e.label, e.g.Server.Label, used, reserved)
		used[e.label] = true
	}

	for _, a := range answers {
		g, ok := servers[a.ServerLabel]
		if !ok || reserved[answerLabel(a)] != a.ServerLabel {
			continue
		}
		label := answerLabel(a)
		i := slices.IndexFunc(entries, func(e entry) bool { return e.label == label })
		if i < 0 {
			entries = append(entries, entry{g: g, kind: kindAnswer, label: label})
			i = len(entries) - 1
		}
		e := &entries[i]
		e.materialize()
		if !e.allowAll && !slices.Contains(e.allowed, a.ToolName) {
			if e.approval == "never" {
				// The added tool would run unasked if the model called it
				// again in this response: only the group's own tools skip
				// approval (object form).
				e.approval, e.never = "", slices.Clone(e.allowed)
			}
			e.allowed = append(slices.Clone(e.allowed), a.ToolName)
			slices.Sort(e.allowed)
		}
	}

	var n uint64
	if cache != nil {
		n = cache.begin()
		defer cache.end(n, len(entries))
	}
	r := rendered{entries: entries, frags: make([][]byte, len(entries)), labels: make(Labels, len(entries)), size: 2}
	viaFace := face != nil
	if viaFace {
		r.heads = make([][]byte, len(entries))
	}
	for i := range entries {
		e := &entries[i]
		if e.custom || cache == nil {
			e.materialize()
			r.frags[i] = e.appendFrag(make([]byte, 0, e.fragSize()), viaFace)
		} else {
			r.frags[i] = cache.frag(e, n, viaFace)
		}
		if viaFace {
			r.heads[i] = face.head(e.g.Server.Label)
			r.size += len(r.heads[i])
		}
		r.labels[e.label] = e.g.Server.Label
		r.size += len(entryStart) + len(e.label) + 2 + 1 + len(r.frags[i]) + 2 // escapes in the label may add more
	}
	return r
}

// entryStart begins every entry; the label and its fragment follow.
const entryStart = `{"type":"mcp","server_label":`

// appendJSON appends the tools array.
func (r *rendered) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i := range r.entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, entryStart...)
		b = appendString(b, r.entries[i].label)
		b = append(b, ',')
		if r.heads != nil {
			b = append(b, r.heads[i]...)
		}
		b = append(b, r.frags[i]...)
		b = append(b, '}')
	}
	return append(b, ']')
}

// mapped is l without the labels that stand for themselves (Server gives
// those back as they are): what a stream keeps for as long as it is open,
// nil in the default layout unless a label had to be made unique.
func (l Labels) mapped() Labels {
	var out Labels
	for upstream, server := range l {
		if upstream != server {
			if out == nil {
				out = Labels{}
			}
			out[upstream] = server
		}
	}
	return out
}

// answerLabel is the label an answer's approval request came from; answers
// without one came from a request in the default layout.
func answerLabel(a conversation.Answer) string {
	if a.UpstreamLabel != "" {
		return a.UpstreamLabel
	}
	return a.ServerLabel
}

// appendEntries appends the entries of one server's groups, with the
// labels wanted.
func appendEntries(out []entry, g *policy.ServerTools, layout Layout) []entry {
	label := g.Server.Label
	if layout == LayoutSplit {
		if g.OfferUnknown {
			return append(out, entry{g: g, kind: kindAlways, label: label + alwaysSuffix})
		}
		if len(g.Never) > 0 {
			out = append(out, entry{g: g, kind: kindNever, label: label + neverSuffix})
		}
		if len(g.Always) > 0 {
			out = append(out, entry{g: g, kind: kindAlways, label: label + alwaysSuffix})
		}
		return out
	}
	if !g.OfferUnknown && len(g.Never)+len(g.Always) == 0 {
		return out
	}
	return append(out, entry{g: g, kind: kindDefault, label: label})
}

// materialize spells out the entry's lists from its group, once.
func (e *entry) materialize() {
	if e.custom {
		return
	}
	e.custom = true
	g := e.g
	switch e.kind {
	case kindDefault:
		e.never, e.always, e.allowAll = names(g.Never), names(g.Always), g.OfferUnknown
		if len(e.never)+len(e.always) == 0 {
			e.approval = "always"
		}
		if !e.allowAll {
			e.allowed = union(e.never, e.always)
		}
	case kindNever:
		e.approval, e.allowed = "never", names(g.Never)
	case kindAlways:
		e.approval = "always"
		if g.OfferUnknown {
			e.allowAll = true
		} else {
			e.allowed = names(g.Always)
		}
	case kindAnswer:
		e.approval = "always"
	}
}

// uniqueLabel returns want, or want_2, want_3, … : the first that is not used
// and not needed by an answer for another server.
func uniqueLabel(want, server string, used map[string]bool, reserved map[string]string) string {
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

// names is the tools' names, sorted, each once.
func names(tools []policy.GroupedTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return slices.Compact(out)
}

// union merges two sorted lists of distinct names into one.
func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}

// fragSize is about the length of the materialized entry's fragment (more
// when names need escaping).
func (e *entry) fragSize() int {
	n := 128 + len(e.g.Server.URL) + len(e.g.Server.Description)
	for k, v := range e.g.Server.Headers {
		n += len(k) + len(v) + 6
	}
	for _, l := range [][]string{e.allowed, e.never, e.always} {
		for _, name := range l {
			n += len(name) + 3
		}
	}
	return n
}

// appendFrag appends the materialized entry's JSON after its server_label
// (no braces): server_url, server_description, headers, allowed_tools,
// require_approval. Through the face (viaFace) it leaves out server_url and
// headers: the server's real URL and stored headers stay in Toolgate, and
// the face's URL and token are written in front (faceRequest.head).
func (e *entry) appendFrag(b []byte, viaFace bool) []byte {
	srv := &e.g.Server
	if viaFace {
		if srv.Description != "" {
			b = append(b, `"server_description":`...)
			b = appendString(b, srv.Description)
			b = append(b, ',')
		}
		return e.appendTools(b)
	}
	b = append(b, `"server_url":`...)
	b = appendString(b, srv.URL)
	if srv.Description != "" {
		b = append(b, `,"server_description":`...)
		b = appendString(b, srv.Description)
	}
	if len(srv.Headers) > 0 {
		b = append(b, `,"headers":{`...)
		for i, k := range slices.Sorted(maps.Keys(srv.Headers)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, srv.Headers[k])
		}
		b = append(b, '}')
	}
	return e.appendTools(append(b, ','))
}

// appendTools appends the entry's allowed_tools and require_approval.
func (e *entry) appendTools(b []byte) []byte {
	if !e.allowAll {
		// Never empty here: entries are only made for tools to offer.
		b = append(b, `"allowed_tools":`...)
		b = appendStrings(b, e.allowed)
		b = append(b, ',')
	}
	b = append(b, `"require_approval":`...)
	if e.approval != "" {
		return appendString(b, e.approval)
	}
	b = append(b, '{')
	if len(e.always) > 0 {
		b = append(b, `"always":{"tool_names":`...)
		b = appendStrings(b, e.always)
		b = append(b, '}')
	}
	if len(e.never) > 0 {
		if len(e.always) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"never":{"tool_names":`...)
		b = appendStrings(b, e.never)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendStrings appends a JSON array of strings.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}
