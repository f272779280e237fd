package http_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// setPolicy sets a demo tool's stored policy.
func (e *apiEnv) setPolicy(label, tool, p string) {
	e.t.Helper()
	e.must(200, "PUT", "/api/mcp/servers/"+label+"/tools/"+tool+"/approval-policy", map[string]any{"policy": p}, nil)
}

// askFor registers the demo server and sets tools to always.
func (e *apiEnv) askFor(tools ...string) {
	e.t.Helper()
	e.createDemo("demo")
	for _, tl := range tools {
		e.setPolicy("demo", tl, "always")
	}
}

// askToDeleteOslo sends the message that makes delete_forecast ask and
// returns its stream, conversation and approval request.
func (e *apiEnv) askToDeleteOslo() (stream, string, approval) {
	e.t.Helper()
	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(e.t)
	return s, s.conv(e.t), one[approval](e.t, s, "approval.required")
}

func lastMessage(t testing.TB, s stream) string {
	t.Helper()
	var text string
	for _, it := range s.items(t) {
		if it.Type == "message" {
			text = it.Text
		}
	}
	return text
}

func TestChat_NeverToolRunsWithoutAsking(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "get_forecast", "never")

	s := e.send("", `get_forecast {"city": "Berlin"}`).ok(t)

	if got := all[approval](t, s, "approval.required"); len(got) != 0 {
		t.Fatalf("a never tool asked: %+v", got)
	}
	var call *item
	for _, it := range s.items(t) {
		if it.Type == "mcp_call" {
			call = &it
		}
	}
	if call == nil || call.Output == nil || !strings.Contains(*call.Output, "Light rain") {
		t.Fatalf("no call with Berlin's forecast in %v", s.items(t))
	}
	if call.ServerLabel != "demo" || call.AllowedBy == nil || call.AllowedBy.Kind != "policy" || call.AllowedBy.Source != "tool" {
		t.Errorf("call = %+v, allowed_by %+v; want demo, allowed by the tool's policy", call, call.AllowedBy)
	}
	if got := e.demo.State().Calls["get_forecast"]; got != 1 {
		t.Errorf("get_forecast ran %d times on the demo server, want 1", got)
	}
	if !strings.Contains(lastMessage(t, s), "Light rain") {
		t.Errorf("answer %q does not quote the tool's output", lastMessage(t, s))
	}
	done := one[completedEvent](t, s, "completed")
	tr := e.transcript(s.conv(t))
	if tr.Conversation.LastResponseID == nil || done.ResponseID == nil || *tr.Conversation.LastResponseID != *done.ResponseID {
		t.Errorf("last response id %v, completed says %v", tr.Conversation.LastResponseID, done.ResponseID)
	}
	types := []string{}
	for _, it := range tr.Items {
		types = append(types, it.Type)
	}
	if want := []string{"user_message", "mcp_list_tools", "mcp_call", "message"}; !slices.Equal(types, want) {
		t.Errorf("transcript items %v, want %v", types, want)
	}
}

func TestChat_AlwaysToolAsksAndApprovalRunsIt(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")

	s := e.send("", `please delete_forecast {"city": "Oslo"}`).ok(t)
	conv := s.conv(t)
	ap := one[approval](t, s, "approval.required")
	if ap.ServerLabel != "demo" || ap.ToolName != "delete_forecast" || ap.AsksBecause.Source != "tool" || ap.AsksBecause.Policy != "always" {
		t.Errorf("approval = %+v", ap)
	}
	if ap.Annotations["destructiveHint"] != true {
		t.Errorf("annotations %v lack destructiveHint", ap.Annotations)
	}
	if !strings.HasPrefix(ap.ID, "mcpr_") || string(ap.Arguments) != `{"city":"Oslo"}` {
		t.Errorf("id %q arguments %s", ap.ID, ap.Arguments)
	}
	if done := one[completedEvent](t, s, "completed"); done.Pending != 1 || !slices.Equal(done.PendingIDs, []string{ap.ID}) {
		t.Errorf("completed %+v, want one pending", done)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; !ok {
		t.Fatal("Oslo was deleted before anyone approved")
	}

	f := e.decide(conv, ap.ID, true, nil).ok(t)
	if d := one[decisionEvent](t, f, "decision.recorded"); d.State != "approved" || len(d.Pending) != 0 {
		t.Errorf("decision %+v", d)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; ok {
		t.Error("Oslo is still there after the approval")
	}
	tr := e.transcript(conv)
	var call *item
	for _, it := range tr.Items {
		if it.Type == "mcp_call" {
			call = &it
		}
	}
	if call == nil || call.Output == nil || call.ApprovalRequestID != ap.ID || call.AllowedBy == nil || call.AllowedBy.Kind != "approval" {
		t.Fatalf("transcript call %+v", call)
	}
	if len(tr.Pending) != 0 {
		t.Errorf("pending after the decision: %+v", tr.Pending)
	}
	reqs := e.up.sent()
	last := reqs[len(reqs)-1]
	if last["previous_response_id"] != *one[completedEvent](t, s, "completed").ResponseID {
		t.Errorf("follow-up previous_response_id %v", last["previous_response_id"])
	}
	in, _ := json.Marshal(last["input"])
	if !strings.Contains(string(in), `"type":"mcp_approval_response"`) || !strings.Contains(string(in), ap.ID) {
		t.Errorf("follow-up input %s", in)
	}
}

func TestChat_DenyWithReasonChangesNothingAndReachesUpstream(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	ap := one[approval](t, s, "approval.required")

	f := e.decide(s.conv(t), ap.ID, false, map[string]any{"reason": "Oslo's forecast is still needed"}).ok(t)

	if d := one[decisionEvent](t, f, "decision.recorded"); d.State != "denied" || d.Reason == nil || *d.Reason != "Oslo's forecast is still needed" {
		t.Errorf("decision %+v", d)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; !ok || e.demo.State().Calls["delete_forecast"] != 0 {
		t.Errorf("the denied tool ran: state %+v", e.demo.State())
	}
	reqs := e.up.sent()
	in, _ := json.Marshal(reqs[len(reqs)-1]["input"])
	if !strings.Contains(string(in), `"approve":false`) || !strings.Contains(string(in), "still needed") {
		t.Errorf("follow-up input %s lacks the denial with its reason", in)
	}
	if msg := lastMessage(t, f); !strings.Contains(msg, "still needed") {
		t.Errorf("the model's answer %q does not show it got the reason", msg)
	}
	tr := e.transcript(s.conv(t))
	for _, it := range tr.Items {
		if it.Type == "mcp_approval_request" && (it.Approval == nil || it.Approval.State != "denied") {
			t.Errorf("transcript approval %+v", it.Approval)
		}
	}
}

func TestChat_RememberChangesThePolicyAndIsAudited(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast", "get_forecast")

	s := e.send("", `get_forecast {"city": "Oslo"}`).ok(t)
	ap := one[approval](t, s, "approval.required")
	f := e.decide(s.conv(t), ap.ID, true, map[string]any{"remember": true}).ok(t)
	if d := one[decisionEvent](t, f, "decision.recorded"); d.PolicyChanged == nil || d.PolicyChanged.Policy != "never" {
		t.Errorf("decision %+v does not report the policy change", d)
	}
	// Remember writes the decider's personal policy, never the workspace's.
	if tl := e.tools("demo")["get_forecast"]; deref(tl.Policy) != "always" || deref(tl.UserPolicy) != "never" || tl.PolicySource != "user" {
		t.Errorf("get_forecast policy %v, personal %v (%s); want always (unchanged) and never", deref(tl.Policy), deref(tl.UserPolicy), tl.PolicySource)
	}
	// No prompt any more, in any conversation.
	again := e.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	if n := len(all[approval](t, again, "approval.required")); n != 0 {
		t.Errorf("remembered tool asked again")
	}

	s = e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	ap = one[approval](t, s, "approval.required")
	e.decide(s.conv(t), ap.ID, false, map[string]any{"remember": true, "reason": "never delete"}).ok(t)
	if tl := e.tools("demo")["delete_forecast"]; deref(tl.Policy) != "always" || deref(tl.UserPolicy) != "blocked" {
		t.Errorf("delete_forecast policy %v, personal %v; want always (unchanged) and blocked", deref(tl.Policy), deref(tl.UserPolicy))
	}
	// A blocked tool is not offered: the next request leaves it out.
	e.send("", "hello").ok(t)
	reqs := e.up.sent()
	tools, _ := json.Marshal(reqs[len(reqs)-1]["tools"])
	if strings.Contains(string(tools), "delete_forecast") || !strings.Contains(string(tools), "get_forecast") {
		t.Errorf("tools sent after blocking: %s", tools)
	}

	var sets, decisions int
	for _, a := range e.audit() {
		switch {
		case a.Action == "policy.set" && deref(a.ToolName) == "get_forecast" && strings.Contains(string(a.After), "never"):
			sets++
		case a.Action == "policy.set" && deref(a.ToolName) == "delete_forecast" && strings.Contains(string(a.After), "blocked"):
			sets++
		case a.Action == "approval.decide":
			decisions++
		}
	}
	if sets != 2 || decisions != 2 {
		t.Errorf("audit has %d remembered policies and %d decisions, want 2 and 2", sets, decisions)
	}
}

func TestChat_ConversationScopeAllowsOnlyInThatConversation(t *testing.T) {
	e := newAPI(t)
	e.askFor("get_forecast")
	s := e.send("", `get_forecast {"city": "Oslo"}`).ok(t)
	conv := s.conv(t)
	ap := one[approval](t, s, "approval.required")
	e.decide(conv, ap.ID, true, map[string]any{"scope": "conversation"}).ok(t)

	same := e.send(conv, `get_forecast {"city": "Lisbon"}`).ok(t)
	if n := len(all[approval](t, same, "approval.required")); n != 0 {
		t.Fatalf("asked again in the same conversation")
	}
	for _, it := range same.items(t) {
		if it.Type == "mcp_call" && (it.AllowedBy == nil || it.AllowedBy.Kind != "conversation") {
			t.Errorf("call allowed_by %+v, want conversation", it.AllowedBy)
		}
	}
	other := e.send("", `get_forecast {"city": "Lisbon"}`).ok(t)
	if n := len(all[approval](t, other, "approval.required")); n != 1 {
		t.Errorf("another conversation got %d prompts, want 1", n)
	}
	if tl := e.tools("demo")["get_forecast"]; tl.Policy == nil || *tl.Policy != "always" {
		t.Errorf("the stored policy changed to %v", deref(tl.Policy))
	}
}

func TestChat_TwoParallelApprovalsMakeOneFollowUp(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast", "send_alert")
	s := e.send("", `delete_forecast {"city": "Oslo"} and send_alert {"city": "Oslo", "message": "storm"}`).ok(t)
	aps := all[approval](t, s, "approval.required")
	if len(aps) != 2 {
		t.Fatalf("%d approval requests, want 2", len(aps))
	}
	conv := s.conv(t)
	before := e.up.count()

	first := e.decide(conv, aps[0].ID, true, nil).ok(t)
	done := one[completedEvent](t, first, "completed")
	if done.Sent || done.Pending != 1 || !slices.Equal(done.PendingIDs, []string{aps[1].ID}) {
		t.Errorf("after the first decision: %+v, want nothing sent and the second pending", done)
	}
	if e.up.count() != before {
		t.Fatal("something went upstream while an approval was still pending")
	}
	second := e.decide(conv, aps[1].ID, false, map[string]any{"reason": "no alerts today"}).ok(t)
	if e.up.count() != before+1 {
		t.Fatalf("%d follow-ups, want 1", e.up.count()-before)
	}
	in, _ := json.Marshal(e.up.sent()[before]["input"])
	if strings.Count(string(in), "mcp_approval_response") != 2 || !strings.Contains(string(in), "no alerts today") {
		t.Errorf("follow-up input %s, want both answers", in)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; ok || len(e.demo.State().Alerts) != 0 {
		t.Errorf("demo state %+v: want Oslo deleted and no alert", e.demo.State())
	}
	if msg := lastMessage(t, second); !strings.Contains(msg, "no alerts today") {
		t.Errorf("answer %q", msg)
	}
}

func TestChat_DecisionsArrayAnswersAllAtOnce(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast", "send_alert", "get_forecast")
	s := e.send("", `delete_forecast {"city": "Oslo"} send_alert {"city": "Oslo", "message": "storm"} get_forecast {"city": "Berlin"}`).ok(t)
	aps := all[approval](t, s, "approval.required")
	if len(aps) != 3 {
		t.Fatalf("%d approval requests; want 3", len(aps))
	}
	before := e.up.count()
	f := e.stream("/api/responses/approval-response", map[string]any{"conversation_id": s.conv(t), "decisions": []map[string]any{
		{"approval_request_id": aps[0].ID, "approve": false, "reason": "keep Oslo"},
		{"approval_request_id": aps[1].ID, "approve": true},
		{"approval_request_id": aps[2].ID, "approve": true},
	}}).ok(t)
	if n := len(all[decisionEvent](t, f, "decision.recorded")); n != 3 || e.up.count() != before+1 {
		t.Errorf("%d decisions, %d follow-ups; want 3 in exactly one", n, e.up.count()-before)
	}
	// The one follow-up answers every request.
	answers := map[string]bool{}
	if sent := e.up.sent(); len(sent) > before {
		in, _ := sent[before]["input"].([]any)
		for _, x := range in {
			if m, ok := x.(map[string]any); ok && m["type"] == "mcp_approval_response" {
				answers[fmt.Sprint(m["approval_request_id"])] = m["approve"] == true
			}
		}
	}
	if len(answers) != 3 || answers[aps[0].ID] || !answers[aps[1].ID] || !answers[aps[2].ID] {
		t.Errorf("the follow-up answered %v; want %s denied, the other two approved", answers, aps[0].ID)
	}
	if len(e.demo.State().Alerts) != 1 {
		t.Errorf("alerts %+v", e.demo.State().Alerts)
	}
}
