package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGroupTools(t *testing.T) {
	p := func(x Policy) *Policy { return &x }
	tool := func(name string, pol *Policy, discovered bool) Tool {
		return Tool{DiscoveredTool: DiscoveredTool{Name: name}, Discovered: discovered, Policy: pol}
	}
	srv := func(def *Policy) Server { return Server{Label: "crm", DefaultPolicy: def} }
	tests := []struct {
		name    string
		srv     Server
		tools   []Tool
		global  Policy
		allowed map[string]bool
		want    ServerTools
	}{
		{
			name:   "each policy from its source",
			srv:    srv(p(Always)),
			tools:  []Tool{tool("search", p(Never), true), tool("update", nil, true), tool("drop", p(Blocked), true)},
			global: Never,
			want: ServerTools{Never: []GroupedTool{{"search", FromTool}}, Always: []GroupedTool{{"update", FromServer}},
				Blocked: []string{"drop"}},
		},
		{
			name:   "global default applies without a server default",
			srv:    srv(nil),
			tools:  []Tool{tool("b", nil, true), tool("a", nil, true)},
			global: Never,
			want:   ServerTools{Never: []GroupedTool{{"a", FromGlobal}, {"b", FromGlobal}}},
		},
		{
			name:    "a conversation allowance moves an asking tool to never, never a blocked one",
			srv:     srv(nil),
			tools:   []Tool{tool("update", p(Always), true), tool("drop", p(Blocked), true)},
			global:  Never,
			allowed: map[string]bool{"update": true, "drop": true, "later": true},
			want: ServerTools{Never: []GroupedTool{{"later", FromConversation}, {"update", FromConversation}},
				Blocked: []string{"drop"}},
		},
		{
			name:   "nothing discovered: unknown tools are offered and ask",
			srv:    srv(nil),
			tools:  []Tool{tool("search", p(Never), false)},
			global: Never,
			want:   ServerTools{Never: []GroupedTool{{"search", FromTool}}, OfferUnknown: true},
		},
		{
			name:   "nothing discovered but a blocked name: only named tools are offered",
			srv:    srv(nil),
			tools:  []Tool{tool("drop", p(Blocked), false)},
			global: Never,
			want:   ServerTools{Blocked: []string{"drop"}},
		},
		{
			name:   "nothing discovered and everything blocked by default",
			srv:    srv(p(Blocked)),
			global: Never,
			want:   ServerTools{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := GroupTools(tc.srv, tc.tools, tc.global, tc.allowed)
			tc.want.Server = tc.srv
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerTools_LookupUnknownAsks(t *testing.T) {
	g := ServerTools{Never: []GroupedTool{{"search", FromGlobal}}, Blocked: []string{"drop"}}
	for _, tc := range []struct {
		tool string
		p    Policy
		src  Source
	}{{"search", Never, FromGlobal}, {"drop", Blocked, FromTool}, {"new_tool", Always, FromUnknown}} {
		if p, src := g.Lookup(tc.tool); p != tc.p || src != tc.src {
			t.Errorf("Lookup(%q) = %s, %s; want %s, %s", tc.tool, p, src, tc.p, tc.src)
		}
	}
	if (ServerTools{}).Offered() {
		t.Error("a server with nothing to offer is offered")
	}
}
