package postgres_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolgate/toolgate/internal/conversation"
)

// TestOpenTurn_DoesWhatItsFourStatementsDid: OpenTurn claims the turn under
// the replica's lease, marks the answers sent, stores the opening events
// after the conversation's last one (and prunes the old text deltas), and
// returns exactly the grants Grants returns for the conversation.
func TestOpenTurn_DoesWhatItsFourStatementsDid(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	mustCreate(t, r, "conv_2")
	mustInsertApproval(t, r, approval("mcpr_1", "conv_1", "resp_1"))
	mustInsertApproval(t, r, approval("mcpr_2", "conv_1", "resp_1"))
	now := time.Now()
	later, earlier := now.Add(time.Hour), now.Add(-time.Minute)
	for _, g := range []conversation.Grant{
		convGrant("grant_000000000000000000000001", "conv_1", "crm", "delete_contact"),
		convGrant("grant_000000000000000000000002", "conv_2", "crm", "export"),
		{ID: "grant_000000000000000000000003", ServerLabel: "crm", ToolName: "lookup", ApprovalRequestID: "mcpr_x", CreatedAt: now, ExpiresAt: &later},
		{ID: "grant_000000000000000000000004", ServerLabel: "crm", ToolName: "stale", ApprovalRequestID: "mcpr_y", CreatedAt: now, ExpiresAt: &earlier},
	} {
		if err := r.Grants.Add(ctx, owner, g); err != nil {
			t.Fatal(err)
		}
	}
	old, err := r.Events.Append(ctx, "conv_1", "turn_0", []conversation.NewEvent{
		{Name: "text.delta", Data: []byte(`{"delta":"x"}`)}, {Name: "response.completed", Data: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}

	evs := []conversation.NewEvent{{Name: "conversation", Data: []byte(`{"a":1}`)}, {Name: "item", Data: []byte(`{"b":2}`)}}
	last, grants, err := r.Turns.Open(ctx, conversation.TurnOpening{ConversationID: "conv_1", TurnID: "turn_1", Owner: owner,
		Replica: "rep_a", LeaseTTL: time.Minute, SentIDs: []string{"mcpr_2"}, Events: evs, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if last != old+2 {
		t.Errorf("last = %d, want %d", last, old+2)
	}
	want, err := r.Grants.List(ctx, owner, conversation.GrantFilter{ConversationID: "conv_1", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, grants, cmpopts.IgnoreFields(conversation.Grant{}, "ConversationTitle", "State"),
		cmpopts.EquateApproxTime(time.Microsecond)); diff != "" {
		t.Errorf("grants (-Grants +OpenTurn):\n%s", diff)
	}
	c := mustConversation(t, r, "conv_1")
	if c.ActiveTurn != "turn_1" || c.LeaseOwner != "rep_a" || c.LeaseExpired || c.LastEventID != last {
		t.Errorf("conversation after OpenTurn: turn %q lease %q expired %v last event %d", c.ActiveTurn, c.LeaseOwner, c.LeaseExpired, c.LastEventID)
	}
	var sent []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM approval_requests WHERE sent_in_turn = 'turn_1'`).Scan(&sent); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mcpr_2"}, sent); diff != "" {
		t.Errorf("answers marked sent (-want +got):\n%s", diff)
	}
	stored, err := r.Events.After(ctx, "conv_1", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range stored {
		got = append(got, e.Name+"/"+e.TurnID)
	}
	if diff := cmp.Diff([]string{"response.completed/turn_0", "conversation/turn_1", "item/turn_1"}, got); diff != "" {
		t.Errorf("events (-want +got), the old text delta pruned:\n%s", diff)
	}

	_, _, err = r.Turns.Open(ctx, conversation.TurnOpening{ConversationID: "nope", TurnID: "turn_2", Owner: owner, Replica: "rep_a",
		LeaseTTL: time.Minute, Events: evs, Now: now})
	wantNotFound(t, "OpenTurn(missing)", err, "conversation_not_found")
}
