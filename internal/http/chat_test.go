package http_test

import (
	"encoding/json"
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
