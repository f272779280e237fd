package postgres_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/decide"
	"github.com/toolgate/toolgate/internal/rules"
)

func putRules(t *testing.T, r policy.Repo, l policy.RuleList, rs ...rules.Rule) {
	t.Helper()
	if err := r.Rules.Put(t.Context(), l, rs, "admin@example.com"); err != nil {
		t.Fatal(err)
	}
}

// The tool's rules are checked first, then the server's, then the
// workspace's; the first that holds decides.
func TestRules_ToolThenServerThenWorkspace(t *testing.T) {
	r := newPolicyRepo(t)
	u := auth.User{ID: owner, Email: "owner@example.com", Role: auth.Member}
	putRules(t, r, policy.RuleList{ServerLabel: "crm", ToolName: "send"},
		rules.Rule{When: `args.to == "test@example.com"`, Decision: rules.Approve, Reason: "test address"})
	putRules(t, r, policy.RuleList{ServerLabel: "crm"}, rules.Rule{When: `args.to.endsWith("@rival.example")`, Decision: rules.Deny})
	putRules(t, r, policy.RuleList{}, rules.Rule{When: `has(args.to)`, Decision: rules.Ask}, rules.Rule{When: `true`, Decision: rules.Approve})
	tests := []struct {
		tool string
		to   any
		want policy.RuleDecision
	}{
		{"send", "test@example.com", policy.RuleDecision{Decision: rules.Approve, Scope: rules.ScopeTool, Index: 0,
			When: `args.to == "test@example.com"`, Reason: "test address", Checked: 4}},
		{"send", "x@rival.example", policy.RuleDecision{Decision: rules.Deny, Scope: rules.ScopeServer, Index: 0,
			When: `args.to.endsWith("@rival.example")`, Checked: 4}},
		{"other", "someone@example.com", policy.RuleDecision{Decision: rules.Ask, Scope: rules.ScopeWorkspace, Index: 0, When: `has(args.to)`, Checked: 3}},
		{"other", nil, policy.RuleDecision{Decision: rules.Ask, Scope: rules.ScopeServer, Index: 0,
			When: `args.to.endsWith("@rival.example")`, Checked: 3}}, // the server's rule fails (no "to"): ask, not the workspace's approve
	}
	for _, tt := range tests {
		args := map[string]any{}
		if tt.to != nil {
			args["to"] = tt.to
		}
		got, err := decide.DecideByRules(t.Context(), r, u, "crm", tt.tool, args)
		if err != nil {
			t.Fatal(err)
		}
		got.Error = ""
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s(%v) (-want +got):\n%s", tt.tool, tt.to, diff)
		}
	}
	if has, err := decide.HasRules(t.Context(), r, "crm", "send"); err != nil || !has {
		t.Errorf("HasRules = %v, %v", has, err)
	}
}

// Rules never loosen an admin's lock or block: an approving rule asks for a
// locked always and denies for a blocked tool; a denying rule still denies.
func TestRules_NeverLoosenLockedOrBlocked(t *testing.T) {
	r := newPolicyRepo(t)
	ctx := t.Context()
	u := auth.User{ID: owner, Email: "owner@example.com", Role: auth.Member}
	putRules(t, r, policy.RuleList{ServerLabel: "crm"},
		rules.Rule{When: `args.n == 1`, Decision: rules.Deny}, rules.Rule{When: `true`, Decision: rules.Approve})
	for _, p := range []policy.ToolPolicy{
		{ServerLabel: "crm", ToolName: "locked", Policy: policy.Always, Locked: true, UpdatedBy: "admin"},
		{ServerLabel: "crm", ToolName: "blocked", Policy: policy.Blocked, UpdatedBy: "admin"},
		{ServerLabel: "crm", ToolName: "asks", Policy: policy.Always, UpdatedBy: "admin"},
	} {
		if err := r.Policies.Upsert(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		tool    string
		n       float64
		want    rules.Decision
		clamped bool
	}{
		{"locked", 2, rules.Ask, true},
		{"locked", 1, rules.Deny, false},
		{"blocked", 2, rules.Deny, true},
		{"asks", 2, rules.Approve, false},
	}
	for _, tt := range tests {
		got, err := decide.DecideByRules(ctx, r, u, "crm", tt.tool, map[string]any{"n": tt.n})
		if err != nil {
			t.Fatal(err)
		}
		if got.Decision != tt.want || got.Clamped != tt.clamped {
			t.Errorf("%s n=%v: %s clamped %v, want %s clamped %v", tt.tool, tt.n, got.Decision, got.Clamped, tt.want, tt.clamped)
		}
	}
}
