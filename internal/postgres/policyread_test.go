package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
)

// The policy read of a turn's request (policy_version and the user's
// personal policies, each never granted for another digest with the tool's
// definition now) is the same whether PolicyVersion makes it or OpenTurn
// folds it into the statement that opens the turn; OpenTurn's sees what its
// own transaction changed (a policy a decision remembered), and is made
// only when asked for.
func TestPolicyRead_OpenTurnReadsWhatPolicyVersionReads(t *testing.T) {
	svc, _, pool := replicaPolicies(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `INSERT INTO user_tool_policies (user_id, server_label, tool_name, policy, granted_digest, granted_definition) VALUES
		($1, 'crm', 'update', 'never', 'sha256:old', '{"title": "old"}'),
		($1, 'crm', 'search', 'always', NULL, NULL),
		($1, 'crm', 'gone', 'blocked', NULL, NULL),
		($2, 'crm', 'search', 'never', NULL, NULL)`, owner, other); err != nil {
		t.Fatal(err)
	}
	var title, desc string
	var schema json.RawMessage
	var ann policy.Annotations
	if err := pool.QueryRow(ctx, `SELECT title, description, input_schema, annotations FROM mcp_tools WHERE name = 'update'`).
		Scan(&title, &desc, &schema, &ann); err != nil {
		t.Fatal(err)
	}
	var version int64
	if err := pool.QueryRow(ctx, `SELECT version FROM policy_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	want := policy.Read{Version: version, Mine: []policy.UserPolicy{
		{UserID: owner, ServerLabel: "crm", ToolName: "gone", Policy: policy.Blocked},
		{UserID: owner, ServerLabel: "crm", ToolName: "search", Policy: policy.Always},
		{UserID: owner, ServerLabel: "crm", ToolName: "update", Policy: policy.Never, GrantedDigest: "sha256:old",
			GrantedDefinition: &policy.Definition{Title: "old"},
			ToolDefinition:    &policy.Definition{Title: title, Description: desc, InputSchema: schema, Annotations: ann}},
	}}
	store := postgres.NewStore(pool)
	v, mine, err := store.PolicyVersion(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq := cmp.Comparer(func(a, b json.RawMessage) bool { return string(compact(t, a)) == string(compact(t, b)) })
	if diff := cmp.Diff(want, policy.Read{Version: v, Mine: mine}, jsonEq); diff != "" {
		t.Errorf("PolicyVersion (-want +got):\n%s", diff)
	}
	if v, mine, err := store.PolicyVersion(ctx, "usr_nobody"); err != nil || v != version || len(mine) != 0 {
		t.Errorf("PolicyVersion(no personal policies) = %d, %v, %v; want %d, none", v, mine, err, version)
	}

	convs := postgres.NewConversationStore(pool)
	mustCreate(t, convs.Repo(), "conv_1")
	policies := postgres.NewConversationPolicies(svc)
	u := auth.User{ID: owner, Email: "owner@example.com", Role: auth.Member}
	var got policy.Read
	err = convs.Tx(ctx, func(r conversation.Repo) error {
		// Remembered in the transaction that opens the turn: in force for
		// its request.
		if err := policies.Decisions.Remember(ctx, r, u, "crm", "later", policy.Never); err != nil {
			return err
		}
		_, _, err := r.Turns.Open(ctx, conversation.TurnOpening{ConversationID: "conv_1", TurnID: "turn_1", Owner: owner,
			Replica: "rep_a", LeaseTTL: time.Minute, Now: time.Now(), Policies: &got})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want.Mine = append(want.Mine[:1:1], append([]policy.UserPolicy{{UserID: owner, ServerLabel: "crm", ToolName: "later", Policy: policy.Never}},
		want.Mine[1:]...)...)
	if diff := cmp.Diff(want, got, jsonEq); diff != "" {
		t.Errorf("OpenTurn's policy read (-want +got):\n%s", diff)
	}
	// Not asked for: not made (the statement runs as before).
	if _, _, err := convs.Repo().Turns.Open(ctx, conversation.TurnOpening{ConversationID: "conv_1", TurnID: "turn_2", Owner: owner,
		Replica: "rep_a", LeaseTTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func compact(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return out
}

// A decision's check that the tool is not blocked (Effective in the
// decision's transaction) reads the policy version and the personal
// policies and takes the rest from the replica's copy: it answers as
// policy.Effective over the tables does, as the workspace changes.
func TestEffective_FromTheCopyAsFromTheTables(t *testing.T) {
	svc, _, pool := replicaPolicies(t)
	ctx := t.Context()
	store := postgres.NewStore(pool)
	convs := postgres.NewConversationStore(pool)
	policies := postgres.NewConversationPolicies(svc)
	tools := []string{"search", "update", "unknown"}
	check := func(step string) {
		t.Helper()
		for _, user := range []string{owner, other} {
			for _, tool := range tools {
				want, _, err := policy.Effective(ctx, store.Repo(), user, "crm", tool)
				if err != nil {
					t.Fatal(err)
				}
				var got policy.Policy
				if err := convs.Tx(ctx, func(r conversation.Repo) error {
					got, err = policies.Decisions.Effective(ctx, r, user, "crm", tool)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s: %s's crm/%s = %s, want %s (as from the tables)", step, user, tool, got, want)
				}
			}
		}
	}
	check("defaults")
	for _, st := range []struct{ what, sql string }{
		{"a workspace policy", `INSERT INTO tool_policies (server_label, tool_name, policy, updated_by) VALUES ('crm', 'search', 'always', 'x')`},
		{"personal policies", `INSERT INTO user_tool_policies (user_id, server_label, tool_name, policy) VALUES
			('` + owner + `', 'crm', 'update', 'blocked'), ('` + owner + `', 'crm', 'unknown', 'always')`},
		{"a workspace block", `INSERT INTO tool_policies (server_label, tool_name, policy, updated_by) VALUES ('crm', 'update', 'blocked', 'x')`},
		{"ask everything", `UPDATE settings SET ask_everything = true`},
		{"the server's default", `UPDATE mcp_servers SET default_policy = 'blocked'`},
		{"the server disabled", `UPDATE mcp_servers SET enabled = false`},
		{"the server deleted", `DELETE FROM mcp_servers`},
	} {
		if _, err := pool.Exec(ctx, st.sql); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		check(st.what)
	}
}
