package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Tools that rules apply to are offered as asking, keeping the policy they
// have without the rules; blocked tools stay blocked; server or workspace
// rules cover every tool, unknown ones included.
func TestWithRules(t *testing.T) {
	base := func() ServerTools {
		return ServerTools{
			Server:  Server{Label: "crm"},
			Never:   []GroupedTool{{Name: "read", Source: FromTool}, {Name: "search", Source: FromConversation}},
			Always:  []GroupedTool{{Name: "update", Source: FromServer, AsksBecause: &AsksBecause{Reason: ReasonPolicy}}},
			Blocked: []string{"drop"},
		}
	}
	g := base()
	g.withRules(false, map[string]bool{"read": true, "drop": true})
	want := ServerTools{
		Server:  Server{Label: "crm"},
		Never:   []GroupedTool{{Name: "search", Source: FromConversation}},
		Always:  []GroupedTool{{Name: "read", Source: FromTool, AsksBecause: &AsksBecause{Reason: ReasonRules}}, {Name: "update", Source: FromServer, AsksBecause: &AsksBecause{Reason: ReasonPolicy}}},
		Blocked: []string{"drop"},
		Ruled:   map[string]RuledTool{"read": {Policy: Never, Source: FromTool}},
	}
	if d := cmp.Diff(want, g); d != "" {
		t.Errorf("tool rules (-want +got):\n%s", d)
	}
	if rt, ok := g.HasRules("read"); !ok || rt.Policy != Never {
		t.Errorf("HasRules(read) = %+v %v", rt, ok)
	}
	for _, name := range []string{"update", "search", "drop", "unknown"} {
		if _, ok := g.HasRules(name); ok {
			t.Errorf("HasRules(%s): no rules apply to it", name)
		}
	}

	g = base()
	g.withRules(true, nil)
	if len(g.Never) != 0 || len(g.Always) != 3 || !g.AllRuled {
		t.Errorf("server rules: never %v, always %v; want every tool asking", g.Never, g.Always)
	}
	if rt, ok := g.HasRules("search"); !ok || rt.Policy != Never || rt.Source != FromConversation {
		t.Errorf("HasRules(search) = %+v %v; want never from the conversation allowance", rt, ok)
	}
	if rt, ok := g.HasRules("update"); !ok || rt.Policy != Always {
		t.Errorf("HasRules(update) = %+v %v", rt, ok)
	}
	if rt, ok := g.HasRules("unknown"); !ok || rt.Policy != Always || rt.Source != FromUnknown {
		t.Errorf("HasRules(unknown) = %+v %v; want always/unknown", rt, ok)
	}
	if _, ok := g.HasRules("drop"); ok {
		t.Error("rules apply to a blocked tool")
	}

	all, tools := ruledTools([]RuleList{{ServerLabel: "other"}, {ServerLabel: "crm", ToolName: "read"}, {ServerLabel: "other", ToolName: "x"}}, "crm")
	if all || !tools["read"] || len(tools) != 1 {
		t.Errorf("ruledTools = %v %v", all, tools)
	}
	if all, _ := ruledTools([]RuleList{{}}, "crm"); !all {
		t.Error("workspace rules do not cover every server")
	}
}
