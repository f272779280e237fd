package engine_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// A remembered decision stores the decision, the decider's personal policy
// and the audit entries of both; the approval request shows what the tool
// declared, as discovery stored it.
func TestDecision_RemembersPersonallyAndAudits(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	if !strings.Contains(string(a.Annotations), `"destructiveHint":true`) {
		t.Errorf("approval annotations %s; want delete_forecast's, as discovered", a.Annotations)
	}
	approve := true
	turn, err := e.chat.StartDecisions(as(t.Context(), ana), conv, []conversation.Decision{{ApprovalRequestID: a.ID, Approve: &approve, Remember: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rec := e.run(ana, turn); rec.last() != conversation.EventNameCompleted {
		t.Fatalf("decision turn: %v", rec.names())
	}
	if got := e.approval(conv, a.ID); got.State != conversation.Approved || !got.Remember {
		t.Errorf("approval %s, remember %v; want approved and remembered", got.State, got.Remember)
	}
	if p := e.personal(); p != "never" {
		t.Errorf("ana's policy for delete_forecast %q, want never", p)
	}
	if d, p := e.audits(); d != 1 || p != 1 {
		t.Errorf("%d decision and %d policy audit entries by ana, want 1 and 1", d, p)
	}
}

// A decision, the policy it remembers and its audit entry are one
// transaction: when the audit entry cannot be stored, none of them is.
func TestDecision_NothingRecordedWhenItsAuditFails(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	e.exec(`ALTER TABLE audit_log ADD CONSTRAINT no_decisions CHECK (action <> 'approval.decide') NOT VALID`)
	approve := true
	_, err := e.chat.StartDecisions(as(t.Context(), ana), conv, []conversation.Decision{{ApprovalRequestID: a.ID, Approve: &approve, Remember: true}})
	if err == nil || apperr.KindOf(err) == apperr.Invalid {
		t.Fatalf("StartDecisions = %v, want the storage error", err)
	}
	if got := e.approval(conv, a.ID); got.State != conversation.Pending {
		t.Errorf("approval %s, want still pending", got.State)
	}
	if p := e.personal(); p != "" {
		t.Errorf("ana's policy for delete_forecast %q, want none", p)
	}
	if d, p := e.audits(); d != 0 || p != 0 {
		t.Errorf("%d decision and %d policy audit entries, want none", d, p)
	}
	if tr := e.transcript(ana, conv); tr.Conversation.Streaming {
		t.Error("a turn was left running")
	}
}

// Tool arguments are stored redacted, in the approval request and in every
// transcript item: the secret never reaches the database.
func TestTurn_ArgumentsAreStoredRedacted(t *testing.T) {
	e := newEngine(t, engineOptions{})
	const secret = "tok-secret-123"
	conv, a := e.asking(ana, "")
	if a.Redacted == nil || a.Redacted[0] != "api_token" || strings.Contains(string(a.Arguments), secret) {
		t.Errorf("approval shows %s, redacted %v", a.Arguments, a.Redacted)
	}
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	if rec.last() != conversation.EventNameCompleted {
		t.Fatalf("decision turn: %v", rec.names())
	}
	call := find(e.transcript(ana, conv).Items, conversation.ItemCall)
	if call == nil || len(call.Redacted) != 1 || !strings.Contains(string(call.Arguments), `"api_token":"[redacted]"`) {
		t.Fatalf("the call: %+v; want its arguments redacted", call)
	}
	var stored, items int
	err = e.pool.QueryRow(t.Context(), `SELECT
			(SELECT count(*) FROM approval_requests WHERE arguments LIKE '%' || $1 || '%'),
			(SELECT count(*) FROM conversation_items WHERE data::text LIKE '%' || $1 || '%' AND type <> 'user_message')`,
		secret).Scan(&stored, &items)
	if err != nil {
		t.Fatal(err)
	}
	if stored != 0 || items != 0 {
		t.Errorf("the secret is stored in %d approval requests and %d items the model sent", stored, items)
	}
}

// personal is ana's stored personal policy for demo's delete_forecast, "" for none.
func (e *harness) personal() policy.Policy {
	e.t.Helper()
	var p policy.Policy
	err := e.pool.QueryRow(e.t.Context(), `SELECT coalesce(max(policy), '') FROM user_tool_policies
		WHERE user_id = $1 AND server_label = 'demo' AND tool_name = 'delete_forecast'`, ana.ID).Scan(&p)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// audits counts ana's audit entries of decisions and of policy changes.
func (e *harness) audits() (decisions, policies int) {
	e.t.Helper()
	err := e.pool.QueryRow(e.t.Context(), `SELECT count(*) FILTER (WHERE action = $2), count(*) FILTER (WHERE action = $3)
		FROM audit_log WHERE actor_id = $1`, ana.ID, policy.ActionDecision, policy.ActionPolicySet).Scan(&decisions, &policies)
	if err != nil {
		e.t.Fatal(err)
	}
	return decisions, policies
}
