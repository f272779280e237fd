package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/postgres/migrate"
)

// Migration 00016 turns each per-conversation allowance into a
// conversation grant of the conversation's owner, and its Down turns the
// live conversation grants back (timed ones have no place there).
func TestMigration00016_ConversationAllowancesBecomeGrants(t *testing.T) {
	store, pool := newConversations(t)
	ctx := t.Context()
	mustCreate(t, store.Repo(), "conv_1")
	for {
		path, err := migrate.Down(ctx, pool)
		if err != nil || path == "" {
			t.Fatalf("migrating down to before 00016: %q, %v", path, err)
		}
		if strings.HasSuffix(path, "00016_grants.sql") {
			break
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO conversation_grants (conversation_id, server_label, tool_name, approval_request_id)
		VALUES ('conv_1', 'crm', 'lookup', 'mcpr_1')`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	gs, err := store.Repo().Grants.List(ctx, owner, conversation.GrantFilter{ConversationID: "conv_1", Now: time.Now()})
	if err != nil || len(gs) != 1 {
		t.Fatalf("grants after the migration: %+v, %v; want the allowance", gs, err)
	}
	g := gs[0]
	if !strings.HasPrefix(g.ID, "grant_") || g.OwnerID != owner || g.ConversationID == nil || *g.ConversationID != "conv_1" || g.ToolName != "lookup" ||
		g.ApprovalRequestID != "mcpr_1" || g.ExpiresAt != nil || g.RevokedAt != nil {
		t.Errorf("migrated grant %+v", g)
	}
	var other int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM grants WHERE owner_id <> $1`, owner).Scan(&other); err != nil || other != 0 {
		t.Errorf("%d grants of someone else (%v)", other, err)
	}
}
