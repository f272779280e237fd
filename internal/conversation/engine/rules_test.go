package engine_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
)

// setRules replaces one list of argument rules, as the admin.
func (e *harness) setRules(l policy.RuleList, rs ...rules.Rule) {
	e.t.Helper()
	if _, err := e.policies.Rules.SetRules(as(e.t.Context(), admin), l, rs); err != nil {
		e.t.Fatalf("SetRules(%+v): %v", l, err)
	}
}

// answersIn returns the mcp_approval_responses of one request the
// provider received.
func answersIn(t *testing.T, body []byte) []approvalAnswer {
	t.Helper()
	var req struct {
		Input []approvalAnswer `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var out []approvalAnswer
	for _, in := range req.Input {
		if in.Type == "mcp_approval_response" {
			out = append(out, in)
		}
	}
	return out
}

var deleteForecast = policy.RuleList{ServerLabel: "demo", ToolName: "delete_forecast"}

// A call a rule approves runs without a card, in the same turn: the turn
// sends the follow-up itself, once; the transcript, the decision event, the
// call's allowed_by and its receipt name the rule.
func TestRules_ApprovingRuleRunsTheCallWithoutACard(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.setRules(deleteForecast, rules.Rule{When: `args.city in ["Test", "Sandbox"]`, Decision: rules.Approve, Reason: "test data"})
	n := e.up.count()
	conv, rec := e.send(ana, "", `delete_forecast {"city": "Test"}`)
	if c := rec.count(conversation.EventNameApproval); c != 0 {
		t.Fatalf("%d approval.required events; a rule approved, so want none: %v", c, rec.names())
	}
	if c := rec.count(conversation.EventNameCompleted); c != 1 {
		t.Fatalf("%d completed events, want 1 (the turn goes on after the rule): %v", c, rec.names())
	}
	d, ok := rec.first(conversation.EventNameDecision).(conversation.DecisionEvent)
	if !ok || d.State != conversation.Approved || d.DecidedBy != nil || d.Rules == nil || d.Rules.By != engine.ByRule ||
		d.Rules.Rule == nil || d.Rules.Rule.Scope != "tool" || d.Rules.Rule.Index != 0 {
		t.Fatalf("decision.recorded %+v; want approved by the tool's rule 1, nobody named", d)
	}
	if d.Reason == nil || !strings.Contains(*d.Reason, `Approved by rule 1 of the rules of delete_forecast on demo: args.city in ["Test", "Sandbox"] (test data)`) {
		t.Errorf("reason %q", deref(d.Reason))
	}
	bodies := e.up.sent()[n:]
	if len(bodies) != 2 {
		t.Fatalf("%d requests upstream, want 2 (the message, the follow-up the rule answered)", len(bodies))
	}
	if as := answersIn(t, bodies[1]); len(as) != 1 || as[0].Approve == nil || !*as[0].Approve {
		t.Errorf("the follow-up answered %+v; want one approval", as)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 1 {
		t.Errorf("delete_forecast ran %d times, want once", st.Calls["delete_forecast"])
	}
	tr := e.transcript(ana, conv)
	if tr.Conversation.Streaming || len(tr.Pending) != 0 {
		t.Errorf("conversation streaming %v with %d pending; want idle and none", tr.Conversation.Streaming, len(tr.Pending))
	}
	call := find(tr.Items, conversation.ItemCall)
	if call == nil || call.AllowedBy == nil || call.AllowedBy.Kind != "rule" || call.AllowedBy.Rule == nil || call.AllowedBy.Rule.When != `args.city in ["Test", "Sandbox"]` {
		t.Fatalf("the call %+v; want allowed_by the rule", call)
	}
	req := find(tr.Items, conversation.ItemApprovalRequest)
	if req == nil || req.Approval == nil || req.Approval.State != conversation.Approved || req.Approval.Rules == nil || req.Approval.Rules.By != engine.ByRule {
		t.Errorf("the transcript's request %+v; want it approved by the rule", req)
	}
	var receipt string
	if err := e.pool.QueryRow(t.Context(), `SELECT after::text FROM audit_log WHERE action = $1 AND call_id = $2`,
		policy.ActionToolCall, call.ID).Scan(&receipt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(receipt, `"kind": "rule"`) {
		t.Errorf("receipt %s; want allowed_by kind rule", receipt)
	}
}

// A denying rule answers for the person: the tool never runs, and the
// provider is told which rule denied it.
func TestRules_DenyingRuleDeniesUpstreamWithTheRule(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.setRules(policy.RuleList{}, rules.Rule{When: `args.city == "Paris"`, Decision: rules.Deny, Reason: "Paris is production"})
	n := e.up.count()
	_, rec := e.send(ana, "", `delete_forecast {"city": "Paris"}`)
	if c := rec.count(conversation.EventNameApproval); c != 0 {
		t.Fatalf("a card was shown: %v", rec.names())
	}
	bodies := e.up.sent()[n:]
	if len(bodies) != 2 {
		t.Fatalf("%d requests upstream, want 2", len(bodies))
	}
	as := answersIn(t, bodies[1])
	if len(as) != 1 || as[0].Approve == nil || *as[0].Approve || !strings.Contains(deref(as[0].Reason), "Denied by rule 1 of the workspace rules") ||
		!strings.Contains(deref(as[0].Reason), "Paris is production") {
		t.Fatalf("the follow-up answered %+v; want a denial naming the workspace rule", as)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
		t.Errorf("delete_forecast ran %d times, want never", st.Calls["delete_forecast"])
	}
}

// When no rule holds, a tool that asks shows the card, which says which
// rules were checked; a tool whose policy lets it run without asking runs
// (it is offered as asking only so that its rules see every call).
func TestRules_NoRuleHoldingFallsBackToThePolicy(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.setRules(policy.RuleList{ServerLabel: "demo"}, rules.Rule{When: `has(args.city) && args.city == "Paris"`, Decision: rules.Deny})
	n := e.up.count()
	conv, rec := e.send(ana, "", `delete_forecast {"city": "Berlin"}`)
	a, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok {
		t.Fatalf("no card for delete_forecast, which asks: %v", rec.names())
	}
	if a.Rules == nil || a.Rules.Checked != 1 || a.Rules.By != "" || a.Rules.Decision != "ask" || a.Reason.Reason != policy.ReasonRules {
		t.Errorf("card rules %+v, asks because %+v; want 1 rule checked, none held", a.Rules, a.Reason)
	}
	if len(e.up.sent()[n:]) != 1 {
		t.Errorf("a follow-up was sent while a card waits")
	}
	// get_forecast runs without asking (read-only), but it is offered as asking now.
	n = e.up.count()
	_, rec = e.send(ana, conv, `get_forecast {"city": "Berlin"}`)
	if c := rec.count(conversation.EventNameApproval); c != 0 {
		t.Fatalf("a card for get_forecast: %v", rec.names())
	}
	bodies := e.up.sent()[n:]
	if len(bodies) != 2 || !strings.Contains(string(bodies[0]), `"get_forecast"`) {
		t.Fatalf("%d requests; want the message and the follow-up", len(bodies))
	}
	if !requiresApproval(t, bodies[0], "get_forecast") {
		t.Errorf("get_forecast was not offered as asking though rules apply: %s", bodies[0])
	}
	tr := e.transcript(ana, conv)
	var call *conversation.Item
	for i := range tr.Items {
		if it := tr.Items[i]; it.Type == conversation.ItemCall && it.Name == "get_forecast" {
			call = &tr.Items[i]
		}
	}
	if call == nil || call.AllowedBy == nil || call.AllowedBy.Kind != "policy" || call.AllowedBy.Policy != policy.Never {
		t.Fatalf("get_forecast's call %+v; want allowed_by its policy", call)
	}
}

// requiresApproval reports whether a request offers tool in a tool entry
// that requires approval for it.
func requiresApproval(t *testing.T, body []byte, tool string) bool {
	t.Helper()
	var req struct {
		Tools []struct {
			Type            string          `json:"type"`
			AllowedTools    json.RawMessage `json:"allowed_tools"`
			RequireApproval json.RawMessage `json:"require_approval"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, tl := range req.Tools {
		if tl.Type == "mcp" && strings.Contains(string(tl.AllowedTools), `"`+tool+`"`) {
			return string(tl.RequireApproval) == `"always"` || strings.Contains(string(tl.RequireApproval), `"always"`) &&
				strings.Contains(string(tl.RequireApproval), tool)
		}
	}
	return false
}

// A response with one call a rule approves and one that needs the person:
// nothing goes upstream until the person decides; then one follow-up
// answers both.
func TestRules_MixedResponseWaitsForThePersonThenAnswersBoth(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.setRules(deleteForecast, rules.Rule{When: `args.city == "Test"`, Decision: rules.Approve})
	n := e.up.count()
	conv, rec := e.send(ana, "", `delete_forecast {"city": "Test"} and delete_forecast {"city": "Berlin"}`)
	a, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok || rec.count(conversation.EventNameApproval) != 1 || rec.count(conversation.EventNameDecision) != 1 {
		t.Fatalf("want one card and one rule decision: %v", rec.names())
	}
	if done, _ := rec.lastData().(conversation.CompletedEvent); len(done.PendingApprovalIDs) != 1 || done.PendingApprovalIDs[0] != a.ID {
		t.Errorf("completed %+v; want the card's request pending", done)
	}
	if got := len(e.up.sent()[n:]); got != 1 {
		t.Fatalf("%d requests before the person decided; want 1", got)
	}
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if rec := e.run(ana, turn); rec.last() != conversation.EventNameCompleted {
		t.Fatalf("decision turn: %v", rec.names())
	}
	bodies := e.up.sent()[n:]
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	if as := answersIn(t, bodies[1]); len(as) != 2 || !*as[0].Approve || !*as[1].Approve {
		t.Errorf("the follow-up answered %+v; want both approved", as)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 2 {
		t.Errorf("delete_forecast ran %d times, want twice", st.Calls["delete_forecast"])
	}
}

// Rules never loosen an admin's decision: with "ask for everything" on, a
// rule that approves asks instead (the card says so).
func TestRules_ApprovingRuleCannotLoosenAskEverything(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.setRules(deleteForecast, rules.Rule{When: `true`, Decision: rules.Approve})
	on := true
	if _, err := e.policies.Policies.UpdateSettings(as(t.Context(), admin), policy.SettingsPatch{AskEverything: &on}); err != nil {
		t.Fatal(err)
	}
	_, rec := e.send(ana, "", `delete_forecast {"city": "Test"}`)
	a, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok || a.Rules == nil || !a.Rules.Clamped || a.Rules.By != "" {
		t.Fatalf("want a card with the clamped rule: %v %+v", rec.names(), a.Rules)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
		t.Errorf("delete_forecast ran")
	}
}

// When the request a response still waited for expires while a rule had
// approved another of it, the follow-up goes at once (the rule's call runs,
// the expired one is denied with its reason), once, without a message.
func TestRules_ExpiryOfTheLastCardSendsTheFollowUpTheRuleOwes(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.setRules(deleteForecast, rules.Rule{When: `args.city == "Test"`, Decision: rules.Approve})
	n := e.up.count()
	conv, rec := e.send(ana, "", `delete_forecast {"city": "Test"} and delete_forecast {"city": "Berlin"}`)
	a, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok {
		t.Fatalf("no card: %v", rec.names())
	}
	const ttl = 200 * time.Millisecond
	e.chat.SetApprovalTTL(ttl)
	other := e.replica("rep_b")
	other.SetApprovalTTL(ttl)
	time.Sleep(ttl + 50*time.Millisecond)
	var wg sync.WaitGroup
	for _, svc := range []*engine.Service{e.chat, other} {
		wg.Add(1)
		go func() { defer wg.Done(); svc.ExpireApprovals(t.Context()) }()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for e.demo.State().Calls["delete_forecast"] < 1 || e.transcript(ana, conv).Conversation.Streaming {
		if time.Now().After(deadline) {
			t.Fatalf("no follow-up 10s after the last card expired: %d requests, delete_forecast ran %d times",
				e.up.count()-n, e.demo.State().Calls["delete_forecast"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	bodies := e.up.sent()[n:]
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2 (the message, one follow-up)", len(bodies))
	}
	for _, ans := range answersIn(t, bodies[1]) {
		if ans.ApprovalRequestID == a.ID && (ans.Approve == nil || *ans.Approve || !strings.Contains(deref(ans.Reason), "APPROVAL_TTL")) {
			t.Errorf("the expired request was answered %+v; want a denial saying it expired", ans)
		}
	}
	if got := len(answersIn(t, bodies[1])); got != 2 {
		t.Errorf("the follow-up answered %d requests, want 2", got)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 1 {
		t.Errorf("delete_forecast ran %d times, want once (Test, by the rule)", st.Calls["delete_forecast"])
	}
}
