package postgres_test

import (
	"errors"
	"testing"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// In a conversation transaction a decision is held back and sent with the
// next statement: that statement (and everything after it) sees it, a
// decision left held when the function returns is sent before the commit,
// one that fails (no such request) fails the statement it went with and
// rolls the transaction back, and a rollback drops what was held.
func TestPipeTx_HeldDecisionsGoWithTheNextStatement(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	for _, id := range []string{"mcpr_1", "mcpr_2", "mcpr_3"} {
		mustInsertApproval(t, r, approval(id, "conv_1", "resp_1"))
	}
	decided := func(a conversation.Approval, state string) conversation.Approval {
		a.State, a.DecidedBy = state, ptr("owner@example.com")
		return a
	}
	a1, a2, a3 := approval("mcpr_1", "conv_1", "resp_1"), approval("mcpr_2", "conv_1", "resp_1"), approval("mcpr_3", "conv_1", "resp_1")

	err := store.Tx(ctx, func(tx conversation.Repo) error {
		if err := tx.Approvals.Decide(ctx, owner, decided(a1, conversation.Approved)); err != nil {
			return err
		}
		aps, err := tx.Approvals.OfResponse(ctx, owner, "conv_1", "resp_1")
		if err != nil {
			return err
		}
		if aps[0].State != conversation.Approved || aps[1].State != conversation.Pending {
			t.Errorf("read after a held decision: %s, %s; want approved, pending", aps[0].State, aps[1].State)
		}
		// Held when the function returns: sent before the commit.
		return tx.Approvals.Decide(ctx, owner, decided(a2, conversation.Denied))
	})
	if err != nil {
		t.Fatal(err)
	}
	got := mustApprovals(t, r, "conv_1", "mcpr_1", "mcpr_2", "mcpr_3")
	if got[0].State != conversation.Approved || got[1].State != conversation.Denied || got[2].State != conversation.Pending {
		t.Errorf("after commit: %s, %s, %s; want approved, denied, pending", got[0].State, got[1].State, got[2].State)
	}

	// A decision on a request that does not exist fails the statement it
	// goes with, and nothing of the transaction stays.
	err = store.Tx(ctx, func(tx conversation.Repo) error {
		if err := tx.Approvals.Decide(ctx, owner, decided(a3, conversation.Approved)); err != nil {
			return err
		}
		if err := tx.Approvals.Decide(ctx, owner, decided(approval("mcpr_nope", "conv_1", "resp_1"), conversation.Approved)); err != nil {
			return err
		}
		_, err := tx.Approvals.OfResponse(ctx, owner, "conv_1", "resp_1")
		return err
	})
	if ae, ok := apperr.As(err); !ok || ae.Code != "approval_not_found" {
		t.Errorf("a held decision on a missing request: %v; want approval_not_found", err)
	}
	// Held, then rolled back: dropped.
	errRollback := errors.New("roll back")
	err = store.Tx(ctx, func(tx conversation.Repo) error {
		if err := tx.Approvals.Decide(ctx, owner, decided(a3, conversation.Approved)); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("Tx = %v, want the error fn returned", err)
	}
	if s := mustApprovals(t, r, "conv_1", "mcpr_3")[0].State; s != conversation.Pending {
		t.Errorf("mcpr_3 after two transactions that rolled back: %s, want pending", s)
	}
	// A transaction that sends nothing never begins; one whose first batch
	// fails in its BEGIN's company still ends. Every connection is back.
	if err := store.Tx(ctx, func(conversation.Repo) error { return nil }); err != nil {
		t.Errorf("an empty transaction: %v", err)
	}
	err = store.Tx(ctx, func(tx conversation.Repo) error {
		_, err := tx.Conversations.Get(ctx, owner, "conv_nope", true)
		return err
	})
	if apperr.KindOf(err) != apperr.NotFound {
		t.Errorf("a transaction whose first statement finds nothing: %v; want NotFound", err)
	}
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d connections still held after the transactions ended", n)
	}
}
