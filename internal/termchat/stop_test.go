package termchat

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stopped answers a decisions request that stops, as the server does: a
// stopped denial per request of the batch, then the error stopped_by_user;
// nothing ran, no follow-up.
func stopped(w http.ResponseWriter) {
	sseEvents(w, "conversation", `{"conversation_id":"conv_1","turn_id":"turn_2","kind":"decisions"}`,
		"decision.recorded", `{"approval_request_id":"mcpr_1","server_label":"demo","tool_name":"t1","state":"denied","reason":"wrong plan","scope":"once","remember":false,"stopped":true,"policy_changed":null,"pending_approval_ids":[]}`,
		"decision.recorded", `{"approval_request_id":"mcpr_2","server_label":"demo","tool_name":"t2","state":"denied","reason":"wrong plan","scope":"once","remember":false,"stopped":true,"policy_changed":null,"pending_approval_ids":[]}`,
		"decision.recorded", `{"approval_request_id":"mcpr_3","server_label":"demo","tool_name":"t3","state":"denied","reason":"wrong plan","scope":"once","remember":false,"stopped":true,"policy_changed":null,"pending_approval_ids":[]}`,
		"error", `{"code":"stopped_by_user","message":"you stopped the turn: 3 tool call(s) denied, nothing was sent to the model; your denials go with your next message","retryable":false}`)
}

// TestRun_StopDeniesTheRestAndGivesTheModelNoTurn: the card says which
// calls wait after it; [s] asks for a reason, sends the decisions made so
// far with this one's stop, asks nothing more, and the stopped turn ends
// calmly at the prompt (not as a failure).
func TestRun_StopDeniesTheRestAndGivesTheModelNoTurn(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"1", "2", "3"} {
		h.srv.pending = append(h.srv.pending, pendingJSON("mcpr_"+id, "t"+id))
	}
	h.start()
	h.scr.expect(t, "you> ")
	h.typeLine("do things")
	h.scr.expect(t, "(1 of 3): t1 on demo")
	h.scr.expect(t, "  2 more calls wait after this one:\n    · t2 on demo {\"city\":\"Oslo\"}\n    · t3 on demo {\"city\":\"Oslo\"}\n")
	h.scr.expect(t, DecisionKeys+"\n> ")
	h.typeLine("y")
	h.scr.expect(t, "(2 of 3): t2 on demo")
	h.scr.expect(t, "  1 more call waits after this one:\n    · t3 on demo {\"city\":\"Oslo\"}\n")
	h.scr.expect(t, DecisionKeys+"\n> ")
	h.typeLine("s")
	h.scr.expect(t, "A reason for the model (optional; Enter for none):\nreason> ")
	h.typeLine(" wrong plan ")
	h.scr.expect(t, "Stopping: this call and the 1 other(s) waiting are denied and the model gets no turn")
	h.scr.expect(t, "· t1 on demo: denied (stopped): \"wrong plan\"\n")
	h.scr.expect(t, "· t3 on demo: denied (stopped): \"wrong plan\"\n")
	h.scr.expect(t, "Stopped: nothing was sent to the model. Your denials go with your next message.\n")
	h.scr.expect(t, "you> ")
	h.in.Close()
	if c := h.exitCode(); c != ExitOK {
		t.Errorf("exit %d after the end of the input", c)
	}
	if out := h.scr.String(); strings.Contains(out, "(3 of 3)") || strings.Contains(out, "error") {
		t.Errorf("asked about the third call after the stop, or called the stop an error:\n%s", out)
	}
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.decisions) != 1 {
		t.Fatalf("%d approval-response requests, want 1: %q", len(h.srv.decisions), h.srv.decisions)
	}
	var got, want any
	_ = json.Unmarshal([]byte(h.srv.decisions[0]), &got)
	_ = json.Unmarshal([]byte(`{"conversation_id":"conv_1","decisions":[
		{"approval_request_id":"mcpr_1","approve":true},
		{"approval_request_id":"mcpr_2","approve":false,"reason":"wrong plan","stop":true}]}`), &want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the decisions sent (-want +got):\n%s", d)
	}
}
