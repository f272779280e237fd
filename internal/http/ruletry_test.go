package http_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

type ruleTryJSON struct {
	Total    int `json:"total"`
	Approved int `json:"approved"`
	Denied   int `json:"denied"`
	Asked    int `json:"asked"`
	Results  []struct {
		ApprovalRequestID string          `json:"approval_request_id"`
		ConversationID    string          `json:"conversation_id"`
		RequestedBy       string          `json:"requested_by"`
		State             string          `json:"state"`
		Arguments         json.RawMessage `json:"arguments"`
		Redacted          []string        `json:"redacted"`
		Decision          string          `json:"decision"`
		RuleIndex         *int            `json:"rule_index"`
		Error             *string         `json:"error"`
	} `json:"results"`
}

const tryDelete = "/api/mcp/servers/demo/tools/delete_forecast/rules/try"

// asks sends msg in a new conversation as e and returns the approval
// request it made.
func (e *apiEnv) asks(t *testing.T, msg string) approval {
	t.Helper()
	return one[approval](t, e.send("", msg).ok(t), "approval.required")
}

func (r ruleTryJSON) summary() string {
	var b strings.Builder
	for _, x := range r.Results {
		idx := "-"
		if x.RuleIndex != nil {
			idx = string(rune('0' + *x.RuleIndex))
		}
		b.WriteString(x.Decision + "#" + idx + " ")
	}
	return strings.TrimSpace(b.String())
}

// Candidate rules are evaluated over the tool's recent requests, newest
// first, counted; nothing is saved; limit keeps the newest.
func TestRuleTry_EvaluatesTheToolsRecentRequests(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast", "get_forecast")
	ids := []string{
		e.asks(t, `delete_forecast {"city": "Test"}`).ID,
		e.asks(t, `delete_forecast {"city": "Oslo"}`).ID,
		e.asks(t, `delete_forecast {"city": "Sandbox"}`).ID,
		e.asks(t, `delete_forecast {"city": "Berlin"}`).ID,
	}
	e.asks(t, `get_forecast {"city": "Test"}`) // another tool: not counted
	rs := []ruleJSON{
		{When: `args.city in ["Test", "Sandbox"]`, Decision: "approve"},
		{When: `args.city == "Oslo" && user.role == "admin"`, Decision: "deny"},
	}
	var got ruleTryJSON
	e.must(200, "POST", tryDelete, map[string]any{"rules": rs}, &got)
	if got.Total != 4 || got.Approved != 2 || got.Denied != 1 || got.Asked != 1 {
		t.Errorf("counts = %d total, %d approved, %d denied, %d asked; want 4, 2, 1, 1", got.Total, got.Approved, got.Denied, got.Asked)
	}
	if s := got.summary(); s != "ask#- approve#0 deny#1 approve#0" {
		t.Errorf("results, newest first = %q", s)
	}
	for i, x := range got.Results {
		if x.ApprovalRequestID != ids[len(ids)-1-i] || x.State != "pending" || x.RequestedBy != e.admin.Email {
			t.Errorf("result %d = %+v, want request %s", i, x, ids[len(ids)-1-i])
		}
	}
	if string(got.Results[1].Arguments) != `{"city":"Sandbox"}` {
		t.Errorf("arguments = %s", got.Results[1].Arguments)
	}

	got = ruleTryJSON{}
	e.must(200, "POST", tryDelete, map[string]any{"rules": rs, "limit": 2}, &got)
	if got.Total != 2 || got.summary() != "ask#- approve#0" {
		t.Errorf("limit 2: %d total, %q", got.Total, got.summary())
	}
	// No rules: every request asks.
	e.must(200, "POST", tryDelete, map[string]any{"rules": []ruleJSON{}}, &got)
	if got.Total != 4 || got.Asked != 4 {
		t.Errorf("no rules: %+v", got)
	}
	// A rule that fails to evaluate asks and says why.
	e.must(200, "POST", tryDelete, map[string]any{"rules": []ruleJSON{{When: `args.city.size() > 0 && int(args.city) > 0`, Decision: "approve"}}}, &got)
	if got.Approved != 0 || got.Asked != 4 || got.Results[0].Error == nil || deref(got.Results[0].RuleIndex) != 0 {
		t.Errorf("failing rule: %+v", got)
	}
	var saved rulesJSON
	e.must(200, "GET", "/api/mcp/servers/demo/tools/delete_forecast/rules", nil, &saved)
	if len(saved.Rules) != 0 {
		t.Errorf("trying saved rules: %+v", saved.Rules)
	}
}

// Stored arguments are redacted: a rule sees the placeholder, never the
// secret.
func TestRuleTry_RedactedArgumentsReadAsThePlaceholder(t *testing.T) {
	e := newAPI(t)
	e.askFor("send_alert")
	e.asks(t, `send_alert {"city": "Oslo", "message": "storm", "password": "hunter2"}`)
	var got ruleTryJSON
	e.must(200, "POST", "/api/mcp/servers/demo/tools/send_alert/rules/try", map[string]any{"rules": []ruleJSON{
		{When: `args.exists(k, args[k] == "hunter2")`, Decision: "approve"},
		{When: `args.exists(k, args[k] == "[redacted]")`, Decision: "deny"},
	}}, &got)
	if got.Total != 1 || got.summary() != "deny#1" || !slices.Equal(got.Results[0].Redacted, []string{"password"}) ||
		strings.Contains(string(got.Results[0].Arguments), "hunter2") {
		t.Errorf("got %q %+v", got.summary(), got.Results)
	}
}

// A member sees only the requests of their own conversations; an admin
// every conversation's, with whose they are. user is the requester.
func TestRuleTry_MembersSeeOnlyTheirOwnRequests(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ana, anaUser := e.newUser(auth.Member)
	ben, _ := e.newUser(auth.Member)
	ana.asks(t, `delete_forecast {"city": "Oslo"}`)
	e.asks(t, `delete_forecast {"city": "Rome"}`)
	body := map[string]any{"rules": []ruleJSON{{When: `user.role == "member"`, Decision: "approve"}}}

	var got ruleTryJSON
	ben.must(200, "POST", tryDelete, body, &got)
	if got.Total != 0 || len(got.Results) != 0 {
		t.Errorf("ben sees others' requests: %+v", got)
	}
	ana.must(200, "POST", tryDelete, body, &got)
	if got.Total != 1 || got.Approved != 1 || got.Results[0].RequestedBy != anaUser.Email || !strings.Contains(string(got.Results[0].Arguments), "Oslo") {
		t.Errorf("ana sees %+v, want her one request", got)
	}
	e.must(200, "POST", tryDelete, body, &got)
	if got.Total != 2 || got.summary() != "ask#- approve#0" || got.Results[1].RequestedBy != anaUser.Email {
		t.Errorf("the admin sees %q %+v, want both (user is the requester, not the admin)", got.summary(), got.Results)
	}
}

func TestRuleTry_AuthAndBadInput(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	member, _ := e.newUser(auth.Member)
	ok := map[string]any{"rules": []ruleJSON{{When: "true", Decision: "approve"}}}
	e.anon().must(401, "POST", tryDelete, ok, nil)

	var got apiError
	member.must(404, "POST", "/api/mcp/servers/nope/tools/delete_forecast/rules/try", ok, &got)
	if got.Error.Code != "server_not_found" {
		t.Errorf("unknown server: %s", got.Error.Code)
	}
	member.must(404, "POST", "/api/mcp/servers/demo/tools/no_such_tool/rules/try", ok, &got)
	if got.Error.Code != "tool_not_found" {
		t.Errorf("unknown tool: %s", got.Error.Code)
	}
	// A tool's name may need escaping; it is read from the path once.
	member.must(404, "POST", "/api/mcp/servers/demo/tools/a%2Fb/rules/try", ok, &got)
	if got.Error.Code != "tool_not_found" || !strings.Contains(got.Error.Message, `"a/b"`) {
		t.Errorf("escaped tool name: %+v", got.Error)
	}

	// The same errors as saving, with the rule and its position.
	var bad ruleErrorJSON
	member.must(400, "POST", tryDelete, map[string]any{"rules": []ruleJSON{{When: "true", Decision: "ask"}, {When: `args.city == `, Decision: "deny"}}}, &bad)
	if d := bad.Error.Details; bad.Error.Code != "invalid_rule" || d.RuleIndex != 1 || d.Line != 1 || d.Column != 14 {
		t.Errorf("syntax error: %+v", bad.Error)
	}
	member.must(400, "POST", tryDelete, map[string]any{"rules": []ruleJSON{{When: `args.town == "x"`, Decision: "deny"}}}, &bad)
	if bad.Error.Code != "unknown_argument" {
		t.Errorf("argument not in the schema: %+v", bad.Error)
	}
	for _, limit := range []int{-1, 101} {
		member.must(400, "POST", tryDelete, map[string]any{"rules": []ruleJSON{}, "limit": limit}, &got)
		if got.Error.Code != "invalid_limit" {
			t.Errorf("limit %d: %s", limit, got.Error.Code)
		}
	}
	member.must(400, "POST", tryDelete, map[string]any{}, &got)
	if got.Error.Code != "invalid_rule" {
		t.Errorf("no rules: %s", got.Error.Code)
	}
}
