package http_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
)

// stopEvent is a decision.recorded as a client reads it, with the stop's marks.
type stopEvent struct {
	ApprovalRequestID string   `json:"approval_request_id"`
	State             string   `json:"state"`
	Reason            *string  `json:"reason"`
	Stopped           bool     `json:"stopped"`
	DecidedBy         *string  `json:"decided_by"`
	Pending           []string `json:"pending_approval_ids"`
}

// askThree makes the model ask for three calls in one response.
func (e *apiEnv) askThree(t *testing.T) (string, []approval) {
	t.Helper()
	s := e.send("", `delete_forecast {"city": "Oslo"} and delete_forecast {"city": "Lisbon"} and delete_forecast {"city": "Rome"}`).ok(t)
	aps := all[approval](t, s, "approval.required")
	if len(aps) != 3 {
		t.Fatalf("%d approval requests, want 3", len(aps))
	}
	return s.conv(t), aps
}

// answersIn returns the mcp_approval_response entries of an upstream request's input.
func answersIn(req map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	in, _ := req["input"].([]any)
	for _, x := range in {
		if m, ok := x.(map[string]any); ok && m["type"] == "mcp_approval_response" {
			out[m["approval_request_id"].(string)] = m
		}
	}
	return out
}

// stopAudits are the approval.decide entries marked as a stop, by request.
func stopAudits(t *testing.T, e *apiEnv) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, a := range e.audit() {
		var after map[string]any
		if a.Action != "approval.decide" || json.Unmarshal(a.After, &after) != nil || after["stopped"] != true {
			continue
		}
		after["actor"] = a.Actor
		out[after["approval_request_id"].(string)] = after
	}
	return out
}

func TestStop_DeniesTheBatchSendsNothingAndTheNextMessageCarriesTheDenials(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	r := newReceiver(t)
	e.createHook(r, "decision.recorded")
	disp := e.dispatcher("replica-a", fastRetries)
	e.wakeOnNotify(disp)
	run(t, disp)
	conv, aps := e.askThree(t)
	before := e.up.count()

	// Others cannot stop it: nothing changes.
	ben, _ := e.newUser(auth.Member)
	wantError(t, "another user", ben.decide(conv, aps[1].ID, false, map[string]any{"stop": true}), 404, "conversation_not_found")
	if res := e.anon().call("POST", "/api/responses/approval-response",
		map[string]any{"conversation_id": conv, "approval_request_id": aps[1].ID, "approve": false, "stop": true}); res.status != 401 {
		t.Errorf("anonymous stop: %d, want 401", res.status)
	}

	s := e.decide(conv, aps[1].ID, false, map[string]any{"stop": true, "reason": "wrong plan"})
	if s.status != 200 || len(s.events) == 0 || s.events[len(s.events)-1].Name != "error" {
		t.Fatalf("stop: status %d, events %v, body %s", s.status, s.names(), s.body)
	}
	end := one[turnError](t, s, "error")
	if end.Code != conversation.CodeStoppedByUser || end.Retryable || !strings.Contains(end.Message, "3 tool call(s) denied") {
		t.Errorf("the turn ended %+v; want stopped_by_user, not retryable, saying 3 calls were denied", end)
	}
	ds := all[stopEvent](t, s, "decision.recorded")
	if len(ds) != 3 {
		t.Fatalf("%d decision.recorded, want 3 (one per request of the batch): %v", len(ds), s.names())
	}
	for _, d := range ds {
		if d.State != "denied" || !d.Stopped || deref2(d.Reason) != "wrong plan" || deref2(d.DecidedBy) != "admin@toolgate.test" || len(d.Pending) != 0 {
			t.Errorf("decision %+v; want denied by the person, stopped, with their reason, nothing pending", d)
		}
	}
	if n := e.up.count() - before; n != 0 {
		t.Fatalf("%d requests went to the model after the stop, want none", n)
	}

	tr := e.transcript(conv)
	last := tr.Items[len(tr.Items)-1]
	if last.TurnErr == nil || last.TurnErr.Code != conversation.CodeStoppedByUser || tr.Conversation.Streaming || len(tr.Pending) != 0 {
		t.Errorf("transcript ends %+v (%+v), streaming %v, %d pending; want the stop, idle, none pending",
			last, last.TurnErr, tr.Conversation.Streaming, len(tr.Pending))
	}
	audits := stopAudits(t, e)
	for i, a := range aps {
		got, ok := audits[a.ID]
		if !ok || got["state"] != "denied" || got["reason"] != "wrong plan" || got["actor"] != "admin@toolgate.test" {
			t.Errorf("audit of %s: %v; want a denial by the person, with their reason, marked stopped", a.ID, got)
		}
		if i != 1 && got["covered_by"] != aps[1].ID {
			t.Errorf("audit of %s names covered_by %v, want the stopped request %s", a.ID, got["covered_by"], aps[1].ID)
		}
	}
	hooks := r.waitFor(3, func(c hookCall) bool { return c.Event == "decision.recorded" })
	for _, h := range hooks {
		if h.Payload.Data["stopped"] != true || h.Payload.Data["state"] != "denied" || !strings.HasPrefix(h.Payload.Text, "Stopped by admin@toolgate.test") {
			t.Errorf("webhook %+v; want a stopped denial", h.Payload)
		}
	}

	// A second stop, another decision, a retry: refused, nothing applied twice, nothing sent.
	wantError(t, "stop twice", e.decide(conv, aps[1].ID, false, map[string]any{"stop": true}), 409, "approval_already_decided")
	wantError(t, "approve a stopped sibling", e.decide(conv, aps[0].ID, true, nil), 409, "approval_already_decided")
	wantError(t, "retry", e.stream("/api/conversations/"+conv+"/retry", nil), 409, "nothing_to_retry")
	if n := len(stopAudits(t, e)); n != 3 || e.up.count() != before {
		t.Errorf("%d stop audit entries, %d requests upstream; want 3 and none", n, e.up.count()-before)
	}

	// The next message carries the three denials, with the stop said first.
	next := e.send(conv, "thanks, let us talk").ok(t)
	if n := e.up.count() - before; n != 1 {
		t.Fatalf("%d requests for the next message, want 1", n)
	}
	answers := answersIn(e.up.sent()[before])
	for _, a := range aps {
		ans := answers[a.ID]
		reason, _ := ans["reason"].(string)
		if ans == nil || ans["approve"] != false || !strings.HasPrefix(reason, conversation.StoppedPrefix) || !strings.HasSuffix(reason, "wrong plan") {
			t.Errorf("the next message's answer to %s: %v; want a denial saying the user stopped, then the reason", a.ID, ans)
		}
	}
	for _, it := range next.items(t) {
		if it.Type == "mcp_call" {
			t.Errorf("a tool ran after the stop: %+v", it)
		}
	}
}

func TestStop_Refusals(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	conv, aps := e.askThree(t)
	before := e.up.count()
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"stop that approves", map[string]any{"conversation_id": conv, "approval_request_id": aps[0].ID, "approve": true, "stop": true}, "stop"},
		{"stop with a correction", map[string]any{"conversation_id": conv, "approval_request_id": aps[0].ID, "approve": false, "stop": true,
			"correction": map[string]any{"city": "Paris"}}, "stop"},
		{"stop that approves, in an array", map[string]any{"conversation_id": conv, "decisions": []map[string]any{
			{"approval_request_id": aps[0].ID, "approve": false}, {"approval_request_id": aps[1].ID, "approve": true, "stop": true}}}, "decisions[1].stop"},
	} {
		got := wantError(t, tc.name, e.stream("/api/responses/approval-response", tc.body), 400, "invalid_stop")
		if got.Error.Fields[tc.field] == "" || !strings.Contains(got.Error.Message, "approve: false") && !strings.Contains(got.Error.Message, "correction") {
			t.Errorf("%s: %+v; want the field %s named and a sentence saying what to send", tc.name, got.Error, tc.field)
		}
	}
	if tr := e.transcript(conv); len(tr.Pending) != 3 || e.up.count() != before || len(stopAudits(t, e)) != 0 {
		t.Errorf("%d pending, %d requests upstream, %d stop audits; want nothing changed", len(tr.Pending), e.up.count()-before, len(stopAudits(t, e)))
	}
}

// A stop and an approval of a sibling from another tab, at once: whichever
// comes first, nothing goes to the model, every request is decided exactly
// once, and the next message carries what was recorded.
func TestStop_RacesAnApprovalOfASibling(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	conv, aps := e.askThree(t)
	before := e.up.count()
	var wg sync.WaitGroup
	var stop, approve stream
	wg.Add(2)
	go func() { defer wg.Done(); stop = e.decide(conv, aps[2].ID, false, map[string]any{"stop": true}) }()
	go func() { defer wg.Done(); approve = e.decide(conv, aps[0].ID, true, nil) }()
	wg.Wait()
	if stop.status != 200 || one[turnError](t, stop, "error").Code != conversation.CodeStoppedByUser {
		t.Fatalf("the stop: %d %s %v", stop.status, stop.body, stop.names())
	}
	approvedFirst := approve.status == 200
	if !approvedFirst {
		wantError(t, "the approval after the stop", approve, 409, "approval_already_decided")
	}
	if n := e.up.count() - before; n != 0 {
		t.Fatalf("%d requests went to the model, want none", n)
	}
	states := map[string]string{}
	for _, it := range e.transcript(conv).Items {
		if it.Approval != nil {
			states[it.Approval.ID] = it.Approval.State
		}
	}
	wantFirst := "denied"
	if approvedFirst {
		wantFirst = "approved"
	}
	if states[aps[0].ID] != wantFirst || states[aps[1].ID] != "denied" || states[aps[2].ID] != "denied" {
		t.Errorf("states %v (approval first: %v)", states, approvedFirst)
	}
	decides := 0
	for _, a := range e.audit() {
		if a.Action == "approval.decide" {
			decides++
		}
	}
	if decides != 3 {
		t.Errorf("%d approval.decide entries, want 3: each request decided once", decides)
	}
	e.send(conv, "go on").ok(t)
	answers := answersIn(e.up.sent()[before])
	if len(answers) != 3 || answers[aps[0].ID]["approve"] != approvedFirst || answers[aps[1].ID]["approve"] != false {
		t.Errorf("the next message's answers %v; want all three, the first as recorded", answers)
	}
}

// MCP_ROUTE=gateway, a request alone in its response: after the stop
// nothing reaches the model or the MCP face; the next message's denial
// runs nothing either.
func TestStop_GatewayAloneInItsBatchRunsNothing(t *testing.T) {
	e := newAPIWith(t, envOptions{gateway: true})
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	before, faced, calls := e.up.count(), e.faceHits.count("demo"), len(e.demo.Calls())
	s := e.decide(conv, ap.ID, false, map[string]any{"stop": true})
	if s.status != 200 || one[turnError](t, s, "error").Code != conversation.CodeStoppedByUser || len(all[stopEvent](t, s, "decision.recorded")) != 1 {
		t.Fatalf("stop: %d %s %v", s.status, s.body, s.names())
	}
	time.Sleep(200 * time.Millisecond) // anything that would run after the stop has had time to
	if e.up.count() != before || e.faceHits.count("demo") != faced {
		t.Fatalf("after the stop: %d requests to the model, %d to the face; want none", e.up.count()-before, e.faceHits.count("demo")-faced)
	}
	next := e.send(conv, "never mind").ok(t)
	if ans := answersIn(e.up.sent()[before])[ap.ID]; ans == nil || ans["approve"] != false {
		t.Errorf("the next message's answer %v; want the denial", ans)
	}
	for _, it := range next.items(t) {
		if it.Type == "mcp_call" {
			t.Errorf("a tool call after the stop: %+v", it)
		}
	}
	if n := len(e.demo.Calls()) - calls; n != 0 {
		t.Errorf("the MCP server ran %d tool calls, want none", n)
	}
}
