package http_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/auth"
)

type ruleJSON struct {
	When     string `json:"when"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

type rulesJSON struct {
	Rules []ruleJSON `json:"rules"`
}

type ruleErrorJSON struct {
	Error struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Fields  map[string]string `json:"fields"`
		Details struct {
			RuleIndex  int    `json:"rule_index"`
			Line       int    `json:"line"`
			Column     int    `json:"column"`
			CELMessage string `json:"cel_message"`
			Problem    string `json:"problem"`
		} `json:"details"`
	} `json:"error"`
}

var ruleLists = []string{"/api/mcp/servers/weather/tools/get_forecast/rules", "/api/mcp/servers/weather/rules", "/api/rules"}

func TestRules_SavedPerListReadByMembersAudited(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	member, _ := e.newUser(auth.Member)
	for i, path := range ruleLists {
		want := rulesJSON{Rules: []ruleJSON{
			{When: `args.city in ["Test", "Sandbox"]`, Decision: "approve", Reason: "test data"},
			{When: `user.role == "admin"`, Decision: []string{"ask", "deny", "approve"}[i]},
		}}
		var got rulesJSON
		e.must(200, "PUT", path, want, &got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PUT %s (-want +got):\n%s", path, diff)
		}
		got = rulesJSON{}
		member.must(200, "GET", path, nil, &got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s as a member (-want +got):\n%s", path, diff)
		}
	}
	// The lists are separate: emptying one leaves the others.
	e.must(200, "PUT", ruleLists[1], rulesJSON{Rules: []ruleJSON{}}, nil)
	var got rulesJSON
	e.must(200, "GET", ruleLists[1], nil, &got)
	if len(got.Rules) != 0 {
		t.Errorf("emptied server list = %+v", got.Rules)
	}
	e.must(200, "GET", ruleLists[0], nil, &got)
	if len(got.Rules) != 2 {
		t.Errorf("tool list after emptying the server's = %+v", got.Rules)
	}
	var sets []auditEntry
	for _, a := range e.audit() {
		if a.Action == "rules.set" {
			sets = append(sets, a)
		}
	}
	if len(sets) != 4 {
		t.Fatalf("rules.set audit entries = %d, want 4", len(sets))
	}
	last := sets[0] // newest first: the server's list emptied
	if deref(last.ServerLabel) != "weather" || last.ToolName != nil || !strings.Contains(string(last.Before), "Sandbox") ||
		!strings.Contains(string(last.After), `"rules":[]`) {
		t.Errorf("audit entry of emptying = %+v before %s after %s", last, last.Before, last.After)
	}
	e.must(404, "GET", "/api/mcp/servers/nope/rules", nil, nil)
	e.must(404, "PUT", "/api/mcp/servers/nope/tools/x/rules", rulesJSON{Rules: []ruleJSON{}}, nil)
}

func TestRules_PutIsAdminOnlyAndNeedsSignIn(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	member, _ := e.newUser(auth.Member)
	body := rulesJSON{Rules: []ruleJSON{{When: "true", Decision: "approve"}}}
	for _, path := range ruleLists {
		var got apiError
		member.must(403, "PUT", path, body, &got)
		if got.Error.Code != "admin_only" {
			t.Errorf("PUT %s as a member: %s", path, got.Error.Code)
		}
		e.anon().must(401, "PUT", path, body, nil)
		e.anon().must(401, "GET", path, nil, nil)
		var rs rulesJSON
		e.must(200, "GET", path, nil, &rs)
		if len(rs.Rules) != 0 {
			t.Errorf("a refused PUT saved %s: %+v", path, rs.Rules)
		}
	}
	e.anon().must(401, "POST", "/api/rules/test", map[string]any{"rules": []ruleJSON{}}, nil)
}

// A refused rule is named once: the message says "rule <index>: <problem>",
// and details.problem is the problem alone, for the editor, which shows the
// rule's number and the position itself ("Rule 2, line 1, column 14:
// Syntax error: …", not "Rule 2, …: rule 1: Syntax error: … (line 1,
// column 14)").
func TestRules_ErrorNamesItsRuleOnce(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	tests := []struct {
		name    string
		path    string
		rules   []ruleJSON
		problem string
	}{
		{"syntax", "/api/rules", []ruleJSON{{When: "true", Decision: "ask"}, {When: `args.city == `, Decision: "deny"}},
			"Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"},
		{"not boolean", "/api/mcp/servers/weather/rules", []ruleJSON{{When: `args.city`, Decision: "deny"}},
			"the expression must be true or false, but it is dyn; compare it, e.g. args.count > 10"},
		{"decision", "/api/rules", []ruleJSON{{When: `true`, Decision: "ask"}, {When: `true`, Decision: "allow"}},
			`decision must be approve, deny or ask (got "allow")`},
		{"empty", "/api/rules", []ruleJSON{{When: ``, Decision: "deny"}},
			`when is empty: give a CEL expression, e.g. args.city in ["Test"]`},
		{"not in the input schema", "/api/mcp/servers/weather/tools/get_forecast/rules", []ruleJSON{{When: `args.town == "x"`, Decision: "deny"}},
			"args.town is not an argument of this tool; its input schema names: city"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ruleErrorJSON
			e.must(400, "PUT", tt.path, rulesJSON{Rules: tt.rules}, &got)
			d := got.Error.Details
			if d.Problem != tt.problem {
				t.Errorf("details.problem = %q, want %q", d.Problem, tt.problem)
			}
			want := fmt.Sprintf("rule %d: %s", d.RuleIndex, tt.problem)
			if d.Line > 0 {
				want += fmt.Sprintf(" (line %d, column %d)", d.Line, d.Column)
			}
			if got.Error.Message != want {
				t.Errorf("message = %q, want %q", got.Error.Message, want)
			}
		})
	}
}

func TestRules_SaveTimeErrorsAre400WithThePosition(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	tests := []struct {
		name      string
		path      string
		rules     []ruleJSON
		code      string
		index     int
		line, col int
	}{
		{"syntax", "/api/rules", []ruleJSON{{When: "true", Decision: "ask"}, {When: `args.city == `, Decision: "deny"}}, "invalid_rule", 1, 1, 14},
		{"type", "/api/rules", []ruleJSON{{When: `tool > 3`, Decision: "deny"}}, "invalid_rule", 0, 1, 6},
		{"not boolean", "/api/mcp/servers/weather/rules", []ruleJSON{{When: `args.city`, Decision: "deny"}}, "rule_not_boolean", 0, 0, 0},
		{"decision", "/api/rules", []ruleJSON{{When: `true`, Decision: "allow"}}, "invalid_rule", 0, 0, 0},
		{"not in the input schema", "/api/mcp/servers/weather/tools/get_forecast/rules", []ruleJSON{{When: `args.town == "x"`, Decision: "deny"}}, "unknown_argument", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ruleErrorJSON
			e.must(400, "PUT", tt.path, rulesJSON{Rules: tt.rules}, &got)
			d := got.Error.Details
			if got.Error.Code != tt.code || d.RuleIndex != tt.index || d.Line != tt.line || d.Column != tt.col {
				t.Errorf("got %s rule %d at %d:%d (%s), want %s rule %d at %d:%d", got.Error.Code, d.RuleIndex, d.Line, d.Column,
					got.Error.Message, tt.code, tt.index, tt.line, tt.col)
			}
			if tt.line > 0 && d.CELMessage == "" {
				t.Errorf("no cel_message: %+v", got)
			}
		})
	}
	var got apiError
	e.must(400, "PUT", "/api/mcp/servers/weather/tools/get_forecast/rules", rulesJSON{Rules: []ruleJSON{{When: `args.town == "x"`, Decision: "deny"}}}, &got)
	if !strings.Contains(got.Error.Message, "args.town") || !strings.Contains(got.Error.Message, "city") {
		t.Errorf("unknown argument message = %q, want it to name args.town and the schema's arguments", got.Error.Message)
	}
	many := make([]ruleJSON, 51)
	for i := range many {
		many[i] = ruleJSON{When: "true", Decision: "ask"}
	}
	e.must(400, "PUT", "/api/rules", rulesJSON{Rules: many}, &got)
	if got.Error.Code != "too_many_rules" {
		t.Errorf("51 rules: %s", got.Error.Code)
	}
	e.must(400, "PUT", "/api/rules", rulesJSON{Rules: []ruleJSON{{When: strings.Repeat("x", 1001), Decision: "ask"}}}, &got)
	e.must(400, "PUT", "/api/rules", map[string]any{}, &got)
	// A known argument of the schema is fine; so is any argument of a tool not discovered.
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/get_forecast/rules", rulesJSON{Rules: []ruleJSON{{When: `args.city == "x"`, Decision: "deny"}}}, nil)
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/not_yet/rules", rulesJSON{Rules: []ruleJSON{{When: `args.town == "x"`, Decision: "deny"}}}, nil)
}

type ruleTestJSON struct {
	Decision  string  `json:"decision"`
	RuleIndex *int    `json:"rule_index"`
	Error     *string `json:"error"`
}

func TestRules_TestEndpointDecides(t *testing.T) {
	e := newAPI(t)
	member, _ := e.newUser(auth.Member)
	rs := []ruleJSON{
		{When: `has(args.path) && args.path.startsWith("/etc/")`, Decision: "deny"},
		{When: `args.city in ["Test", "Sandbox"]`, Decision: "approve"},
		{When: `user.role == "member" && tool == "send_alert" && server == "weather"`, Decision: "ask"},
	}
	idx := func(i int) *int { return &i }
	items := make([]string, 200)
	for i := range items {
		items[i] = "x"
	}
	tests := []struct {
		name      string
		rules     []ruleJSON
		tool      string
		args      map[string]any
		decision  string
		index     *int
		wantError bool
	}{
		{"deny", rs, "", map[string]any{"path": "/etc/passwd", "city": "Test"}, "deny", idx(0), false},
		{"approve", rs, "", map[string]any{"city": "Sandbox"}, "approve", idx(1), false},
		{"ask rule", rs, "send_alert", map[string]any{"city": "Paris"}, "ask", idx(2), false},
		{"nothing matched", rs, "get_forecast", map[string]any{"city": "Paris"}, "ask", nil, false},
		{"missing key asks, never approves", []ruleJSON{{When: `args.path.startsWith("/etc/")`, Decision: "deny"}, {When: "true", Decision: "approve"}},
			"", map[string]any{}, "ask", idx(0), true},
		{"cost limit asks", []ruleJSON{{When: `args.items.all(x, args.items.all(y, x + y != ""))`, Decision: "approve"}},
			"", map[string]any{"items": items}, "ask", idx(0), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ruleTestJSON
			member.must(200, "POST", "/api/rules/test", map[string]any{"rules": tt.rules, "tool": tt.tool, "server": "weather", "args": tt.args}, &got)
			if got.Decision != tt.decision || !cmp.Equal(got.RuleIndex, tt.index) || (got.Error != nil) != tt.wantError {
				raw, _ := json.Marshal(got)
				t.Errorf("got %s, want %s at %v (error %v)", raw, tt.decision, deref(tt.index), tt.wantError)
			}
		})
	}
	var bad ruleErrorJSON
	member.must(400, "POST", "/api/rules/test", map[string]any{"rules": []ruleJSON{{When: "args.city ==", Decision: "approve"}}}, &bad)
	if bad.Error.Code != "invalid_rule" || bad.Error.Details.Line != 1 {
		t.Errorf("invalid rule in a test: %+v", bad)
	}
}
