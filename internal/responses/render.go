package responses

import (
	"slices"

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
	servers, reserved := reserveAnswers(groups, answers)
	entries := layoutEntries(groups, layout, reserved)
	entries = applyAnswers(entries, answers, servers, reserved)
	return renderEntries(entries, cache, face)
}

// reserveAnswers indexes groups by server label and reserves the labels the
// answers need, with the server each belongs to (both nil without answers).
func reserveAnswers(groups []policy.ServerTools, answers []conversation.Answer) (servers map[string]*policy.ServerTools, reserved map[string]string) {
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
	return servers, reserved
}

// layoutEntries lays out the entries of groups, each with a unique label.
func layoutEntries(groups []policy.ServerTools, layout Layout, reserved map[string]string) []entry {
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
	return entries
}

// applyAnswers offers each answered tool under its answer's label: in the
// entry with that label, or in one added for it.
func applyAnswers(entries []entry, answers []conversation.Answer, servers map[string]*policy.ServerTools, reserved map[string]string) []entry {
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
		entries[i].allowAnswer(a.ToolName)
	}
	return entries
}

// renderEntries renders each entry: from cache when it holds the entry as
// rendered before (nil: no cache), through face when it is not nil.
func renderEntries(entries []entry, cache *toolCache, face *faceRequest) rendered {
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

// appendPieces adds the tools array to b: each entry's cached fragment
// (and head) as it is, with what joins them.
func (r *rendered) appendPieces(b *pieces) {
	var join []byte // what comes before the next head or fragment
	for i := range r.entries {
		if i == 0 {
			join = append(join, '[')
		} else {
			join = append(join, "},"...)
		}
		join = append(join, entryStart...)
		join = appendString(join, r.entries[i].label)
		join = append(join, ',')
		b.add(join)
		join = nil
		if r.heads != nil {
			b.add(r.heads[i])
		}
		b.add(r.frags[i])
	}
	b.add(closeTools)
}

var closeTools = []byte("}]")

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
