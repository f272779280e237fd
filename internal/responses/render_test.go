package responses_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/responses"
)

func srv(label string) policy.Server {
	return policy.Server{Label: label, URL: "https://" + label + ".example.com/mcp", Enabled: true}
}

func tools(names ...string) []policy.GroupedTool {
	out := make([]policy.GroupedTool, 0, len(names))
	for _, n := range names {
		out = append(out, policy.GroupedTool{Name: n, Source: policy.FromTool})
	}
	return out
}

// TestRenderTools compares the tools array as it goes over the wire.
func TestRenderTools(t *testing.T) {
	crm := srv("crm")
	crm.Description = "CRM records"
	crm.Headers = map[string]string{"X-Api-Key": "secret-1", "X-Tenant": "acme"}

	for _, tc := range []struct {
		name    string
		groups  []policy.ServerTools
		answers []conversation.Answer
		layout  responses.Layout
		want    string
		labels  responses.Labels
	}{{
		name: "default: never, always and blocked",
		groups: []policy.ServerTools{{Server: srv("crm"), Never: tools("search"),
			Always: tools("update_record", "delete_record"), Blocked: []string{"wipe"}}},
		layout: responses.LayoutDefault,
		want: `[{"type":"mcp","server_label":"crm","server_url":"https://crm.example.com/mcp",
			"allowed_tools":["delete_record","search","update_record"],
			"require_approval":{"always":{"tool_names":["delete_record","update_record"]},"never":{"tool_names":["search"]}}}]`,
		labels: responses.Labels{"crm": "crm"},
	}, {
		name:   "default: only never tools leave the always list out",
		groups: []policy.ServerTools{{Server: srv("crm"), Never: tools("search", "get")}},
		want: `[{"type":"mcp","server_label":"crm","server_url":"https://crm.example.com/mcp",
			"allowed_tools":["get","search"],"require_approval":{"never":{"tool_names":["get","search"]}}}]`,
		labels: responses.Labels{"crm": "crm"},
	}, {
		name:   "default: offer unknown tools (no allowed_tools; unknown tools ask)",
		groups: []policy.ServerTools{{Server: srv("crm"), Never: tools("search"), OfferUnknown: true}},
		want: `[{"type":"mcp","server_label":"crm","server_url":"https://crm.example.com/mcp",
			"require_approval":{"never":{"tool_names":["search"]}}}]`,
		labels: responses.Labels{"crm": "crm"},
	}, {
		name:   "default: both lists empty with unknown tools offered asks for everything",
		groups: []policy.ServerTools{{Server: srv("crm"), OfferUnknown: true}},
		want: `[{"type":"mcp","server_label":"crm","server_url":"https://crm.example.com/mcp",
			"require_approval":"always"}]`,
		labels: responses.Labels{"crm": "crm"},
	}, {
		name:   "a server that offers nothing gets no entry",
		groups: []policy.ServerTools{{Server: srv("crm"), Blocked: []string{"wipe"}}, {Server: srv("wiki"), OfferUnknown: true}},
		want: `[{"type":"mcp","server_label":"wiki","server_url":"https://wiki.example.com/mcp",
			"require_approval":"always"}]`,
		labels: responses.Labels{"wiki": "wiki"},
	}, {
		name:   "headers and description",
		groups: []policy.ServerTools{{Server: crm, Always: tools("update_record")}},
		want: `[{"type":"mcp","server_label":"crm","server_url":"https://crm.example.com/mcp",
			"server_description":"CRM records","headers":{"X-Api-Key":"secret-1","X-Tenant":"acme"},
			"allowed_tools":["update_record"],"require_approval":{"always":{"tool_names":["update_record"]}}}]`,
		labels: responses.Labels{"crm": "crm"},
	}, {
		name: "split: one entry per group, headers on both",
		groups: []policy.ServerTools{{Server: crm, Never: tools("search"),
			Always: tools("update_record", "delete_record"), Blocked: []string{"wipe"}}},
		layout: responses.LayoutSplit,
		want: `[{"type":"mcp","server_label":"crm__never","server_url":"https://crm.example.com/mcp",
			"server_description":"CRM records","headers":{"X-Api-Key":"secret-1","X-Tenant":"acme"},
			"allowed_tools":["search"],"require_approval":"never"},
			{"type":"mcp","server_label":"crm__always","server_url":"https://crm.example.com/mcp",
			"server_description":"CRM records","headers":{"X-Api-Key":"secret-1","X-Tenant":"acme"},
			"allowed_tools":["delete_record","update_record"],"require_approval":"always"}]`,
		labels: responses.Labels{"crm__never": "crm", "crm__always": "crm"},
	}, {
		name:   "split: only the groups that have tools",
		groups: []policy.ServerTools{{Server: srv("a"), Always: tools("x")}, {Server: srv("b"), Never: tools("y")}},
		layout: responses.LayoutSplit,
		want: `[{"type":"mcp","server_label":"a__always","server_url":"https://a.example.com/mcp","allowed_tools":["x"],"require_approval":"always"},
			{"type":"mcp","server_label":"b__never","server_url":"https://b.example.com/mcp","allowed_tools":["y"],"require_approval":"never"}]`,
		labels: responses.Labels{"a__always": "a", "b__never": "b"},
	}, {
		name:   "split: unknown tools offered: one entry, everything asks, never group dropped",
		groups: []policy.ServerTools{{Server: srv("crm"), Never: tools("search"), Always: tools("update"), OfferUnknown: true}},
		layout: responses.LayoutSplit,
		want: `[{"type":"mcp","server_label":"crm__always","server_url":"https://crm.example.com/mcp",
			"require_approval":"always"}]`,
		labels: responses.Labels{"crm__always": "crm"},
	}, {
		// The layout changed since the approval request: its label is now a
		// server's own label, which wins; the generated label moves aside.
		name: "split: a label an answer needs for another server is skipped (_2, _3)",
		groups: []policy.ServerTools{
			{Server: srv("a"), Always: tools("x")},
			{Server: srv("a__always"), Always: tools("y")},
			{Server: srv("c"), Always: tools("z")},
		},
		answers: []conversation.Answer{
			{ApprovalRequestID: "mcpr_1", Approve: true, ServerLabel: "a__always", UpstreamLabel: "a__always", ToolName: "y"},
			{ApprovalRequestID: "mcpr_2", Approve: true, ServerLabel: "c", UpstreamLabel: "a__always_2", ToolName: "z"},
		},
		layout: responses.LayoutSplit,
		want: `[{"type":"mcp","server_label":"a__always_3","server_url":"https://a.example.com/mcp","allowed_tools":["x"],"require_approval":"always"},
			{"type":"mcp","server_label":"a__always__always","server_url":"https://a__always.example.com/mcp","allowed_tools":["y"],"require_approval":"always"},
			{"type":"mcp","server_label":"c__always","server_url":"https://c.example.com/mcp","allowed_tools":["z"],"require_approval":"always"},
			{"type":"mcp","server_label":"a__always","server_url":"https://a__always.example.com/mcp","allowed_tools":["y"],"require_approval":"always"},
			{"type":"mcp","server_label":"a__always_2","server_url":"https://c.example.com/mcp","allowed_tools":["z"],"require_approval":"always"}]`,
		labels: responses.Labels{"a__always_3": "a", "a__always__always": "a__always", "c__always": "c",
			"a__always": "a__always", "a__always_2": "c"},
	}, {
		name: "default answers: missing tool added, server offering nothing else added, unknown server ignored",
		groups: []policy.ServerTools{
			{Server: srv("crm"), Never: tools("search"), Always: tools("update"), Blocked: []string{"delete"}},
			{Server: srv("wiki"), Blocked: []string{"edit"}},
		},
		answers: []conversation.Answer{
			{ApprovalRequestID: "mcpr_1", Approve: false, Reason: "no", ServerLabel: "crm", UpstreamLabel: "crm", ToolName: "delete"},
			{ApprovalRequestID: "mcpr_2", Approve: true, ServerLabel: "crm", UpstreamLabel: "crm", ToolName: "update"},
			{ApprovalRequestID: "mcpr_3", Approve: true, ServerLabel: "wiki", UpstreamLabel: "wiki", ToolName: "edit"},
			{ApprovalRequestID: "mcpr_4", Approve: true, ServerLabel: "gone", UpstreamLabel: "gone", ToolName: "x"},
			{ApprovalRequestID: "mcpr_5", Approve: true, ServerLabel: "wiki", ToolName: "read"}, // no UpstreamLabel: the server's
		},
		want: `[{"type":"mcp","server_label":"crm","server_url":"https://crm.example.com/mcp",
			"allowed_tools":["delete","search","update"],
			"require_approval":{"always":{"tool_names":["update"]},"never":{"tool_names":["search"]}}},
			{"type":"mcp","server_label":"wiki","server_url":"https://wiki.example.com/mcp",
			"allowed_tools":["edit","read"],"require_approval":"always"}]`,
		labels: responses.Labels{"crm": "crm", "wiki": "wiki"},
	}, {
		name:    "default answers: unknown tools offered already offer the tool",
		groups:  []policy.ServerTools{{Server: srv("crm"), OfferUnknown: true}},
		answers: []conversation.Answer{{ApprovalRequestID: "mcpr_1", Approve: true, ServerLabel: "crm", UpstreamLabel: "crm", ToolName: "x"}},
		want: `[{"type":"mcp","server_label":"crm","server_url":"https://crm.example.com/mcp",
			"require_approval":"always"}]`,
		labels: responses.Labels{"crm": "crm"},
	}, {
		name: "split answers: tool moved to never keeps its __always label; missing tool added",
		groups: []policy.ServerTools{
			{Server: srv("w"), Never: tools("delete", "get")},
			{Server: srv("v"), Never: tools("get"), Always: tools("set")},
		},
		answers: []conversation.Answer{
			{ApprovalRequestID: "mcpr_1", Approve: true, ServerLabel: "w", UpstreamLabel: "w__always", ToolName: "delete"},
			{ApprovalRequestID: "mcpr_2", Approve: true, ServerLabel: "v", UpstreamLabel: "v__always", ToolName: "reset"},
		},
		layout: responses.LayoutSplit,
		want: `[{"type":"mcp","server_label":"w__never","server_url":"https://w.example.com/mcp","allowed_tools":["delete","get"],"require_approval":"never"},
			{"type":"mcp","server_label":"v__never","server_url":"https://v.example.com/mcp","allowed_tools":["get"],"require_approval":"never"},
			{"type":"mcp","server_label":"v__always","server_url":"https://v.example.com/mcp","allowed_tools":["reset","set"],"require_approval":"always"},
			{"type":"mcp","server_label":"w__always","server_url":"https://w.example.com/mcp","allowed_tools":["delete"],"require_approval":"always"}]`,
		labels: responses.Labels{"w__never": "w", "w__always": "w", "v__never": "v", "v__always": "v"},
	}, {
		name:    "split answers: a tool added to a never entry still asks",
		groups:  []policy.ServerTools{{Server: srv("w"), Never: tools("get")}},
		answers: []conversation.Answer{{ApprovalRequestID: "mcpr_1", Approve: true, ServerLabel: "w", UpstreamLabel: "w__never", ToolName: "delete"}},
		layout:  responses.LayoutSplit,
		want: `[{"type":"mcp","server_label":"w__never","server_url":"https://w.example.com/mcp","allowed_tools":["delete","get"],
			"require_approval":{"never":{"tool_names":["get"]}}}]`,
		labels: responses.Labels{"w__never": "w"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			layout := tc.layout
			if layout == "" {
				layout = responses.LayoutDefault
			}
			got := responses.RenderTools(tc.groups, tc.answers, layout)
			wire := got.JSON
			if d := jsonDiff(t, wire, []byte(tc.want)); d != "" {
				t.Errorf("tools (-want +got):\n%s\ngot: %s", d, wire)
			}
			var entries []json.RawMessage
			if err := json.Unmarshal(wire, &entries); err != nil || len(entries) != got.Entries {
				t.Errorf("Entries = %d for %d entries (%v)", got.Entries, len(entries), err)
			}
			labels := got.Labels
			if d := cmp.Diff(tc.labels, labels); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
		})
	}
}

func TestLabelsServer(t *testing.T) {
	l := responses.Labels{"crm__always": "crm"}
	if got := l.Server("crm__always"); got != "crm" {
		t.Errorf("Server(crm__always) = %q", got)
	}
	if got := l.Server("other"); got != "other" {
		t.Errorf("Server(other) = %q, want the label kept as is", got)
	}
}
