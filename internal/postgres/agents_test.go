package postgres_test

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// TestAgents_SessionsAreTheirOwnersAndTheirHeldCallsOutliveTheOrphanSweep:
// an agent's MCP session is a conversation of kind agent, its owner's only
// (another person opening the same id finds nothing), it is not among the
// chats, and the sweep that supersedes the requests of chats' responses
// that never completed leaves its held calls' requests pending (they have
// no response; the call waits for the person).
func TestAgents_SessionsAreTheirOwnersAndTheirHeldCallsOutliveTheOrphanSweep(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	c, err := r.Conversations.OpenAgent(ctx, owner, "agt_s1", "Claude Code (MCP)", conversation.ClientInfo{Name: "claude-code", Version: "2.0"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != conversation.KindAgent || c.Client == nil || c.Client.Name != "claude-code" {
		t.Errorf("opened %+v, want kind agent with its client", c)
	}
	again, err := r.Conversations.OpenAgent(ctx, owner, "agt_s1", "renamed", conversation.ClientInfo{Name: "x"})
	if err != nil || again.Title != "Claude Code (MCP)" {
		t.Errorf("opening the same session again: %+v, %v; want the first, unchanged", again, err)
	}
	if _, err := r.Conversations.OpenAgent(ctx, other, "agt_s1", "hijack", conversation.ClientInfo{Name: "x"}); apperr.KindOf(err) != apperr.NotFound {
		t.Errorf("another person opening the session's id: %v, want NotFound", err)
	}
	mustCreate(t, r, "conv_chat")
	list, err := r.Conversations.List(ctx, owner, 0)
	if err != nil || len(list) != 1 || list[0].ID != "conv_chat" {
		t.Errorf("chats %+v (%v), want only the chat", list, err)
	}

	held := approval("mcpr_held", "agt_s1", "call_1")
	mustInsertApproval(t, r, held)
	orphan := approval("mcpr_orphan", "conv_chat", "resp_never_completed")
	mustInsertApproval(t, r, orphan)
	if _, err := r.Leases.SupersedeOrphans(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	got, hs, err := r.Approvals.Owned(ctx, owner, "mcpr_held", false)
	if err != nil || got.State != conversation.Pending || hs.Kind != conversation.KindAgent || hs.HolderGone {
		t.Errorf("the held call's request after the sweep: %+v %+v %v, want pending, of an agent, held", got.State, hs, err)
	}
	if got, _, _ := r.Approvals.Owned(ctx, owner, "mcpr_orphan", false); got.State != conversation.Superseded {
		t.Errorf("the chat's orphan is %q, want superseded (the sweep still works)", got.State)
	}
	if _, _, err := r.Approvals.Owned(ctx, other, "mcpr_held", false); apperr.KindOf(err) != apperr.NotFound {
		t.Errorf("another person reading the held call's request: %v, want NotFound", err)
	}

	// Held open by a replica (its lease renewed), the request stays; once
	// the lease runs out (that replica stopped), the sweep withdraws it.
	if err := r.Approvals.Hold(ctx, "mcpr_held", time.Hour); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Leases.WithdrawAbandoned(ctx, "gone"); err != nil || n != 0 {
		t.Fatalf("withdrew %d (%v) while the holder's lease runs; want none", n, err)
	}
	if err := r.Approvals.Hold(ctx, "mcpr_held", -time.Second); err != nil {
		t.Fatal(err)
	}
	if _, hs, _ := r.Approvals.Owned(ctx, owner, "mcpr_held", false); !hs.HolderGone {
		t.Errorf("past its lease the held call's holder is not gone: %+v", hs)
	}
	if n, err := r.Leases.WithdrawAbandoned(ctx, "gone"); err != nil || n != 1 {
		t.Fatalf("withdrew %d (%v) once the holder's lease ran out; want 1", n, err)
	}
	if got, _, _ := r.Approvals.Owned(ctx, owner, "mcpr_held", false); got.State != conversation.Withdrawn {
		t.Errorf("the abandoned held call's request is %q, want withdrawn", got.State)
	}

	// Approved, but its holder stopped before the call reached the gate:
	// a minute past the lease it is marked not_run (the call never ran).
	approved := approval("mcpr_approved", "agt_s1", "call_2")
	mustInsertApproval(t, r, approved)
	now := time.Now()
	approved.State, approved.DecidedAt = conversation.Approved, &now
	if err := r.Approvals.Decide(ctx, owner, approved); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE approval_requests SET held_until = clock_timestamp() - interval '2 minutes' WHERE id = 'mcpr_approved'`); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Leases.WithdrawAbandoned(ctx, "gone"); err != nil || n != 1 {
		t.Fatalf("marked %d (%v) for the approved call whose holder stopped; want 1", n, err)
	}
	if got, _, _ := r.Approvals.Owned(ctx, owner, "mcpr_approved", false); got.State != conversation.NotRun {
		t.Errorf("the approved call whose holder stopped is %q, want not_run", got.State)
	}
}
