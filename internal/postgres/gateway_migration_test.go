package postgres_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/postgres/migrate"
)

// Migration 00037's Down drops the calls through the MCP face and the
// approvals' digests, and turns not_run approvals (a state the older schema
// lacks) into expired ones: they can no longer be answered and did not
// run. Up again restores the table and the state.
func TestMigration00037_DownTurnsNotRunIntoExpired(t *testing.T) {
	store, pool := newConversations(t)
	ctx := t.Context()
	mustCreate(t, store.Repo(), "conv_1")
	a := conversation.Approval{ID: "mcpr_1", ConversationID: "conv_1", ResponseID: "resp_1", ServerLabel: "crm", UpstreamLabel: "crm",
		ToolName: "lookup", StoredArguments: "{}", State: conversation.Pending, ArgumentsSHA256: strings.Repeat("a", 64), DefinitionDigest: "sha256:x"}
	if err := store.Repo().Approvals.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE approval_requests SET state = 'not_run', decided_at = now() WHERE id = 'mcpr_1'`); err != nil {
		t.Fatal(err)
	}
	for {
		path, err := migrate.Down(ctx, pool)
		if err != nil || path == "" {
			t.Fatalf("migrating down to before 00037: %q, %v", path, err)
		}
		if strings.HasSuffix(path, "00037_gateway_calls.sql") {
			break
		}
	}
	var state string
	if err := pool.QueryRow(ctx, `SELECT state FROM approval_requests WHERE id = 'mcpr_1'`).Scan(&state); err != nil || state != conversation.Expired {
		t.Fatalf("after Down the not_run approval is %q (%v); want expired", state, err)
	}
	var table *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass('gateway_calls')::text`).Scan(&table); err != nil || table != nil {
		t.Fatalf("gateway_calls after Down: %v, %v", table, err)
	}
	if _, err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE approval_requests SET state = 'not_run' WHERE id = 'mcpr_1'`); err != nil {
		t.Fatalf("not_run after Up again: %v", err)
	}
}
