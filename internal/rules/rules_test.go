package rules_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/rules"
)

func mustCompile(t testing.TB, rs []rules.Rule) *rules.Set {
	t.Helper()
	s, err := rules.Compile(rs, nil)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

func TestEval_FirstMatchDecides(t *testing.T) {
	s := mustCompile(t, []rules.Rule{
		{When: `has(args.path) && args.path.startsWith("/etc/")`, Decision: rules.Deny},
		{When: `args.city in ["Test", "Sandbox"]`, Decision: rules.Approve},
		{When: `user.role == "admin" && tool == "search"`, Decision: rules.Approve},
	})
	tests := []struct {
		call  rules.Call
		want  rules.Decision
		index int
	}{
		{rules.Call{Args: map[string]any{"path": "/etc/passwd", "city": "Test"}}, rules.Deny, 0},
		{rules.Call{Args: map[string]any{"city": "Sandbox"}}, rules.Approve, 1},
		{rules.Call{Args: map[string]any{"city": "Paris"}, Tool: "search", User: rules.User{Role: "admin"}}, rules.Approve, 2},
		{rules.Call{Args: map[string]any{"city": "Paris"}, Tool: "search", User: rules.User{Role: "member"}}, rules.Ask, -1},
	}
	for _, tt := range tests {
		got := s.Eval(tt.call)
		if got.Decision != tt.want || got.Index != tt.index || got.Err != nil {
			t.Errorf("Eval(%v) = %s #%d (%v), want %s #%d", tt.call.Args, got.Decision, got.Index, got.Err, tt.want, tt.index)
		}
	}
}

// A rule that fails to evaluate (a missing key, the cost limit) asks and
// stops: the approving rule after it is not reached.
func TestEval_FailureAsksNeverApproves(t *testing.T) {
	s := mustCompile(t, []rules.Rule{
		{When: `args.path.startsWith("/etc/")`, Decision: rules.Deny},
		{When: `true`, Decision: rules.Approve},
	})
	got := s.Eval(rules.Call{Args: map[string]any{"city": "Test"}})
	if got.Decision != rules.Ask || got.Index != 0 || got.Err == nil {
		t.Fatalf("missing key: got %s #%d err %v, want ask #0 with an error", got.Decision, got.Index, got.Err)
	}
	costly := mustCompile(t, []rules.Rule{
		{When: `args.items.all(x, args.items.all(y, args.items.all(z, x + y + z != "")))`, Decision: rules.Approve},
	})
	items := make([]any, 100)
	for i := range items {
		items[i] = "x"
	}
	got = costly.Eval(rules.Call{Args: map[string]any{"items": items}})
	if got.Decision != rules.Ask || got.Err == nil {
		t.Fatalf("cost limit: got %s err %v, want ask with an error", got.Decision, got.Err)
	}
}

func TestCompile_ErrorsNameRuleAndPosition(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)
	tests := []struct {
		name  string
		rs    []rules.Rule
		code  string
		index int
		line  int
	}{
		{"syntax", []rules.Rule{{When: "true", Decision: rules.Ask}, {When: "args.city ==", Decision: rules.Deny}}, "invalid_rule", 1, 1},
		{"type", []rules.Rule{{When: `tool + 1 == 2`, Decision: rules.Deny}}, "invalid_rule", 0, 1},
		{"not bool", []rules.Rule{{When: `args.city`, Decision: rules.Deny}}, "rule_not_boolean", 0, 0},
		{"unknown var", []rules.Rule{{When: `argz.city == "x"`, Decision: rules.Deny}}, "invalid_rule", 0, 1},
		{"unknown arg", []rules.Rule{{When: `args.town == "x"`, Decision: rules.Deny}}, "unknown_argument", 0, 0},
		{"unknown arg index", []rules.Rule{{When: `args["town"] == "x"`, Decision: rules.Deny}}, "unknown_argument", 0, 0},
		{"bad decision", []rules.Rule{{When: `true`, Decision: "maybe"}}, "invalid_rule", 0, 0},
		{"too many", slices.Repeat([]rules.Rule{{When: "true", Decision: rules.Ask}}, rules.MaxRules+1), "too_many_rules", -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := rules.Check(tt.rs, schema)
			e, ok := apperr.As(err)
			if !ok || e.Kind != apperr.Invalid || e.Code != tt.code {
				t.Fatalf("got %v, want invalid %s", err, tt.code)
			}
			if tt.index < 0 {
				return
			}
			d, _ := e.Details.(rules.RuleErrorDetails)
			if d.RuleIndex != tt.index || d.Line != tt.line || (tt.line > 0 && (d.Column == 0 || d.CELMessage == "")) {
				t.Fatalf("details %+v, want rule %d line %d with a column and message", d, tt.index, tt.line)
			}
		})
	}
	if err := rules.Check([]rules.Rule{{When: `args.city in ["Test"]`, Decision: rules.Approve}}, schema); err != nil {
		t.Fatalf("a known argument: %v", err)
	}
}

func twentyRules(t testing.TB) *rules.Set {
	rs := make([]rules.Rule, 0, 20)
	for i := range 19 {
		rs = append(rs, rules.Rule{When: fmt.Sprintf(`has(args.city) && args.city == "city%d" && user.role == "admin"`, i), Decision: rules.Deny})
	}
	rs = append(rs, rules.Rule{When: `args.city in ["Test", "Sandbox"] && tool.startsWith("get_")`, Decision: rules.Approve})
	return mustCompile(t, rs)
}

var benchCall = rules.Call{Args: map[string]any{"city": "Sandbox", "days": 3.0}, Tool: "get_forecast", Server: "weather",
	User: rules.User{ID: "u1", Email: "a@example.com", Role: "member"}}

// BenchmarkEval_20Rules evaluates 20 rules where the last one matches.
func BenchmarkEval_20Rules(b *testing.B) {
	s := twentyRules(b)
	for b.Loop() {
		if r := s.Eval(benchCall); r.Decision != rules.Approve {
			b.Fatalf("got %s", r.Decision)
		}
	}
}

// TestEval_20RulesLatency logs the p50/p99 of evaluating 20 rules (the
// target is 50µs p99); it does not assert on time.
func TestEval_20RulesLatency(t *testing.T) {
	s := twentyRules(t)
	const n = 10_000
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		if r := s.Eval(benchCall); r.Decision != rules.Approve {
			t.Fatalf("got %s", r.Decision)
		}
		d[i] = time.Since(start)
	}
	slices.Sort(d)
	t.Logf("20 rules, %d evaluations: p50 %v, p99 %v, max %v", n, d[n/2], d[n*99/100], d[n-1])
}
