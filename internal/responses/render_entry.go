package responses

import (
	"maps"
	"slices"
	"strconv"

	"github.com/toolgate/toolgate/internal/policy"
)

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

// allowAnswer adds an answered tool to the entry's allowed_tools.
func (e *entry) allowAnswer(tool string) {
	e.materialize()
	if !e.allowAll && !slices.Contains(e.allowed, tool) {
		if e.approval == "never" {
			// The added tool would run unasked if the model called it
			// again in this response: only the group's own tools skip
			// approval (object form).
			e.approval, e.never = "", slices.Clone(e.allowed)
		}
		e.allowed = append(slices.Clone(e.allowed), tool)
		slices.Sort(e.allowed)
	}
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
