package engine_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
)

// storedReceipt is one tool.call row of the audit log.
type storedReceipt struct {
	Actor, ActorID, CallID, ConversationID string
	Receipt                                record.Receipt
}

func (e *harness) receipts() []storedReceipt {
	e.t.Helper()
	rows, err := e.pool.Query(e.t.Context(), `SELECT actor, coalesce(actor_id, ''), coalesce(call_id, ''),
		coalesce(conversation_id, ''), after FROM audit_log WHERE action = 'tool.call' ORDER BY id`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []storedReceipt
	for rows.Next() {
		var r storedReceipt
		var after []byte
		if err := rows.Scan(&r.Actor, &r.ActorID, &r.CallID, &r.ConversationID, &after); err != nil {
			e.t.Fatal(err)
		}
		if err := json.Unmarshal(after, &r.Receipt); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// wantOneReceipt wants exactly one receipt, ana's, for the transcript's
// approved call.
func (e *harness) wantOneReceipt(conv, approval string) {
	e.t.Helper()
	call := find(e.transcript(ana, conv).Items, conversation.ItemCall)
	if call == nil {
		e.t.Fatal("no call in the transcript")
	}
	rs := e.receipts()
	if len(rs) != 1 {
		e.t.Fatalf("%d receipts, want 1: %+v", len(rs), rs)
	}
	r := rs[0]
	if r.Actor != ana.Email || r.ActorID != ana.ID || r.CallID != call.ID || r.ConversationID != conv {
		e.t.Errorf("receipt row %+v, want ana's for call %s of %s", r, call.ID, conv)
	}
	rc := r.Receipt
	if rc.CallID != call.ID || rc.ResponseID != call.ResponseID || deref(rc.ApprovalRequestID) != approval ||
		deref(rc.DecidedByID) != ana.ID || rc.AllowedBy == nil || rc.AllowedBy.Kind != "approval" ||
		rc.ArgumentsText != `{"city":"Berlin"}` || rc.ArgumentsSHA256 != sha(rc.ArgumentsText) || rc.Outcome != record.OutcomeOutput || rc.OutputSHA256 == nil {
		e.t.Errorf("receipt %+v", rc)
	}
}

// A follow-up cut before the call arrived: the read-back settles the call,
// and records its receipt (the owner's email taken from the account).
func TestReceipts_ReadBackRecordsTheCall(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	conv, a := e.askToDelete()
	e.up.setBehavior("cut; at=2")
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	e.run(ana, turn)
	e.wantOneReceipt(conv, a.ID)
}

// A follow-up cut after the call arrived but before the response ended:
// the relay records the call and the read-back sees it again; it still has
// one receipt.
func TestReceipts_OnePerCallWhenTheReadBackSeesItAgain(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	conv, a := e.askToDelete()
	e.up.setBehavior("cut; at=9")
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	if rec.count(conversation.EventNameItem) == 0 {
		t.Fatalf("the call did not arrive before the cut: %v", rec.names())
	}
	e.wantOneReceipt(conv, a.ID)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
