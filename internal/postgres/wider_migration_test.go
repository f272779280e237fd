package postgres_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/postgres/migrate"
)

// Migration 00043 lets a decision keep the wider scope it was made with
// (server, everything); its Down reads those as approved once (the
// default they changed stays), and Up again accepts them.
func TestMigration00043_DownReadsWiderAsOnce(t *testing.T) {
	store, pool := newConversations(t)
	ctx := t.Context()
	mustCreate(t, store.Repo(), "conv_1")
	a := conversation.Approval{ID: "mcpr_1", ConversationID: "conv_1", ResponseID: "resp_1", ServerLabel: "crm", UpstreamLabel: "crm",
		ToolName: "lookup", StoredArguments: "{}", State: conversation.Pending}
	if err := store.Repo().Approvals.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE approval_requests SET state = 'approved', scope = 'server', decided_at = now() WHERE id = 'mcpr_1'`); err != nil {
		t.Fatalf("scope server: %v", err)
	}
	for {
		path, err := migrate.Down(ctx, pool)
		if err != nil || path == "" {
			t.Fatalf("migrating down to before 00043: %q, %v", path, err)
		}
		if strings.HasSuffix(path, "00043_decide_wider.sql") {
			break
		}
	}
	var scope string
	if err := pool.QueryRow(ctx, `SELECT scope FROM approval_requests WHERE id = 'mcpr_1'`).Scan(&scope); err != nil || scope != "once" {
		t.Fatalf("after Down the wider decision's scope is %q (%v); want once", scope, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE approval_requests SET scope = 'everything' WHERE id = 'mcpr_1'`); err == nil {
		t.Fatal("before 00043 the scope everything was accepted")
	}
	if _, err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE approval_requests SET scope = 'everything' WHERE id = 'mcpr_1'`); err != nil {
		t.Fatalf("scope everything after Up again: %v", err)
	}
}
