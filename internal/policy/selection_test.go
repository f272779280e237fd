package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Apply leaves out deselected servers and tools; a server that offers nothing
// then is dropped unless a request answers for it; unknown tools are offered
// only while the server offers all its tools.
func TestSelection_Apply(t *testing.T) {
	demo := ServerTools{Server: Server{Label: "demo"}, Never: []GroupedTool{{Name: "get"}, {Name: "list"}}, Always: []GroupedTool{{Name: "del"}}}
	fresh := ServerTools{Server: Server{Label: "fresh"}, OfferUnknown: true}
	groups := []ServerTools{demo, fresh}
	offered := func(gs []ServerTools) map[string][]string {
		out := map[string][]string{}
		for _, g := range gs {
			names := []string{}
			for _, x := range append(append([]GroupedTool{}, g.Never...), g.Always...) {
				names = append(names, x.Name)
			}
			if g.OfferUnknown {
				names = append(names, "*")
			}
			out[g.Server.Label] = names
		}
		return out
	}
	for _, c := range []struct {
		name string
		sel  Selection
		keep map[string]bool
		want map[string][]string
	}{
		{"nothing chosen", Selection{}, nil, map[string][]string{"demo": {"get", "list", "del"}, "fresh": {"*"}}},
		{"a tool off", Selection{Servers: map[string]ServerSelection{"demo": {Enabled: true, Tools: []string{"list", "del"}}}}, nil,
			map[string][]string{"demo": {"list", "del"}, "fresh": {"*"}}},
		{"a server off", Selection{Servers: map[string]ServerSelection{"demo": {Enabled: false}}}, nil, map[string][]string{"fresh": {"*"}}},
		{"no tools", Selection{Servers: map[string]ServerSelection{"demo": {Enabled: true, Tools: []string{}}}}, nil, map[string][]string{"fresh": {"*"}}},
		{"off, but answered", Selection{Servers: map[string]ServerSelection{"demo": {Enabled: false}}}, map[string]bool{"demo": true},
			map[string][]string{"demo": {}, "fresh": {"*"}}},
		{"a list stops unknown tools", Selection{Servers: map[string]ServerSelection{"fresh": {Enabled: true, Tools: []string{"x"}}}}, nil,
			map[string][]string{"demo": {"get", "list", "del"}}},
		{"a server not there", Selection{Servers: map[string]ServerSelection{"gone": {Enabled: false}}}, nil,
			map[string][]string{"demo": {"get", "list", "del"}, "fresh": {"*"}}},
	} {
		if diff := cmp.Diff(c.want, offered(c.sel.Apply(groups, c.keep))); diff != "" {
			t.Errorf("%s: offered (-want +got):\n%s", c.name, diff)
		}
	}
	if len(demo.Never) != 2 {
		t.Errorf("Apply changed the groups it was given: %+v", demo)
	}
}

// An empty list stays a list when stored: nil would mean every tool.
func TestSelection_NormalizedKeepsAnEmptyList(t *testing.T) {
	got := Selection{Servers: map[string]ServerSelection{"a": {Enabled: true, Tools: []string{}}, "b": {Enabled: true, Tools: []string{"y", "x", "y"}}}}.Normalized()
	if got.Servers["a"].Tools == nil || len(got.Servers["a"].Tools) != 0 {
		t.Errorf("empty list became %#v", got.Servers["a"].Tools)
	}
	if diff := cmp.Diff([]string{"x", "y"}, got.Servers["b"].Tools); diff != "" {
		t.Errorf("sorted without repeats (-want +got):\n%s", diff)
	}
	if (Selection{}).Normalized().Servers == nil {
		t.Error("a nil map stays nil; want {}")
	}
}
