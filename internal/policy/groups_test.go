package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGroupTools(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	convGrant := GrantRef{ID: "grant_1", Conversation: true}
	timedGrant := GrantRef{ID: "grant_2", ExpiresAt: &until}
	p := func(x Policy) *Policy { return &x }
	tool := func(name string, pol *Policy, discovered bool) Tool {
		return Tool{DiscoveredTool: DiscoveredTool{Name: name}, Discovered: discovered, Policy: pol}
	}
	srv := func(def *Policy) Server { return Server{Label: "crm", DefaultPolicy: def, Enabled: true} }
	tests := []struct {
		name    string
		srv     Server
		tools   []Tool
		global  Policy
		allowed map[string]GrantRef
		want    ServerTools
	}{
		{
			name:   "each policy from its source",
			srv:    srv(p(Always)),
			tools:  []Tool{tool("search", p(Never), true), tool("update", nil, true), tool("drop", p(Blocked), true)},
			global: Never,
			want: ServerTools{Never: []GroupedTool{{Name: "search", Source: FromTool}}, Always: []GroupedTool{{Name: "update", Source: FromServer, AsksBecause: &AsksBecause{Reason: ReasonPolicy}}},
				Blocked: []string{"drop"}},
		},
		{
			name:   "global default applies without a server default",
			srv:    srv(nil),
			tools:  []Tool{tool("b", nil, true), tool("a", nil, true)},
			global: Never,
			want:   ServerTools{Never: []GroupedTool{{Name: "a", Source: FromGlobal}, {Name: "b", Source: FromGlobal}}},
		},
		{
			name:    "a conversation allowance moves an asking tool to never, never a blocked one",
			srv:     srv(nil),
			tools:   []Tool{tool("update", p(Always), true), tool("drop", p(Blocked), true)},
			global:  Never,
			allowed: map[string]GrantRef{"update": convGrant, "drop": convGrant, "later": timedGrant},
			want: ServerTools{Never: []GroupedTool{{Name: "later", Source: FromGrant, Grant: &timedGrant},
				{Name: "update", Source: FromConversation, Grant: &convGrant}},
				Blocked: []string{"drop"}},
		},
		{
			name:   "nothing discovered: unknown tools are offered and ask",
			srv:    srv(nil),
			tools:  []Tool{tool("search", p(Never), false)},
			global: Never,
			want:   ServerTools{Never: []GroupedTool{{Name: "search", Source: FromTool}}, OfferUnknown: true},
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
			got := GroupTools(tc.srv, Settings{DefaultPolicy: tc.global}, tc.tools, nil, tc.allowed)
			tc.want.Server = tc.srv
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGroupTools_UsesTheUsersLayerAndSaysWhyToolsAsk(t *testing.T) {
	yes := true
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := first.Add(time.Hour)
	srv := Server{Label: "weather", Enabled: true, FirstDiscoveredAt: &first, ReadOnlyHints: HintsTrusted}
	known := func(name string, readOnly *bool, seen time.Time) Tool {
		d := DiscoveredTool{Name: name, Annotations: Annotations{ReadOnlyHint: readOnly}}
		return Tool{DiscoveredTool: d, Discovered: true, Digest: d.Digest(), FirstSeenAt: &seen}
	}
	tools := []Tool{known("get_forecast", &yes, first), known("delete_forecast", nil, first), known("added_later", &yes, later),
		known("mine_allowed", nil, first)}
	mine := []UserPolicy{{ToolName: "mine_allowed", Policy: Never, GrantedDigest: tools[3].Digest}, {ToolName: "only_mine", Policy: Blocked}}
	g := GroupTools(srv, Settings{DefaultPolicy: AskUnlessReadOnly}, tools, mine, nil)
	want := ServerTools{Server: srv,
		Never: []GroupedTool{{Name: "get_forecast", Source: FromGlobal}, {Name: "mine_allowed", Source: FromUser}},
		Always: []GroupedTool{
			{Name: "added_later", Source: FromNew, AsksBecause: &AsksBecause{Reason: ReasonNewTool}},
			{Name: "delete_forecast", Source: FromGlobal, AsksBecause: &AsksBecause{Reason: ReasonNotReadOnly}},
		},
		Blocked: []string{"only_mine"}}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p, src := g.Lookup("added_later"); p != Always || src != FromNew {
		t.Errorf("Lookup(added_later) = %s, %s", p, src)
	}
	if got := g.AsksBecause("delete_forecast"); got == nil || got.Reason != ReasonNotReadOnly {
		t.Errorf("AsksBecause(delete_forecast) = %+v", got)
	}
	// Someone else's view: no personal policies.
	other := GroupTools(srv, Settings{DefaultPolicy: AskUnlessReadOnly}, tools, nil, nil)
	if p, src := other.Lookup("mine_allowed"); p != Always || src != FromGlobal {
		t.Errorf("another user's Lookup(mine_allowed) = %s, %s", p, src)
	}
}

func TestGroupTools_AskEverythingOutranksConversationGrants(t *testing.T) {
	p := func(x Policy) *Policy { return &x }
	srv := Server{Label: "crm", Enabled: true}
	tools := []Tool{{DiscoveredTool: DiscoveredTool{Name: "search"}, Discovered: true, Policy: p(Never)},
		{DiscoveredTool: DiscoveredTool{Name: "update"}, Discovered: true, Policy: p(Always)},
		{DiscoveredTool: DiscoveredTool{Name: "drop"}, Discovered: true, Policy: p(Blocked)}}
	g := GroupTools(srv, Settings{DefaultPolicy: Never, AskEverything: true}, tools, nil, map[string]GrantRef{"update": {ID: "grant_1", Conversation: true}, "later": {ID: "grant_2"}})
	if len(g.Never) != 0 {
		t.Errorf("with ask for everything on, %+v run without asking", g.Never)
	}
	if len(g.Always) != 2 || len(g.Blocked) != 1 {
		t.Errorf("always %+v, blocked %v; want search and update asking, drop blocked", g.Always, g.Blocked)
	}
}

func TestServerTools_LookupUnknownAsks(t *testing.T) {
	g := ServerTools{Never: []GroupedTool{{Name: "search", Source: FromGlobal}}, Blocked: []string{"drop"}}
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

// A lock at Ask outranks a grant: a tool an admin locked at always (its
// own policy, or a locked default that resolves to always for it) stays
// asking with a grant, and names the lock; an unlocked one runs by it.
func TestGroupTools_LockAtAskOutranksGrants(t *testing.T) {
	p := func(x Policy) *Policy { return &x }
	srv := Server{Label: "crm", Enabled: true, DefaultPolicy: p(AskUnlessReadOnly), DefaultPolicyLocked: true}
	tools := []Tool{{DiscoveredTool: DiscoveredTool{Name: "update"}, Discovered: true, Policy: p(Always), PolicyLocked: true},
		{DiscoveredTool: DiscoveredTool{Name: "wipe"}, Discovered: true},
		{DiscoveredTool: DiscoveredTool{Name: "note"}, Discovered: true, Policy: p(Always)}}
	grants := map[string]GrantRef{"update": {ID: "grant_1", Conversation: true}, "wipe": {ID: "grant_2"},
		"note": {ID: "grant_3"}, "unlisted": {ID: "grant_4"}}
	g := GroupTools(srv, Settings{DefaultPolicy: Never}, tools, nil, grants)
	if len(g.Never) != 1 || g.Never[0].Name != "note" || g.GrantOf("note") == nil {
		t.Errorf("running without asking: %+v; want only note (unlocked) by its grant", g.Never)
	}
	for tool, want := range map[string]Source{"update": FromTool, "wipe": FromServer, "unlisted": FromServer, "note": ""} {
		if got := g.AskLock(tool); got != want {
			t.Errorf("AskLock(%s) = %q, want %q", tool, got, want)
		}
	}
}
