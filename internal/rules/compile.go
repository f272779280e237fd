package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
)

// env is the CEL environment every rule is compiled in: args (the call's
// arguments as JSON), tool and server (names), user (id, email, role).
var env = mustEnv()

func mustEnv() *cel.Env {
	e, err := cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("tool", cel.StringType),
		cel.Variable("server", cel.StringType),
		cel.Variable("user", cel.MapType(cel.StringType, cel.StringType)),
		cel.CrossTypeNumericComparisons(true),
	)
	if err != nil {
		panic(fmt.Sprintf("rules: CEL environment: %v", err))
	}
	return e
}

// compiled is one rule ready to evaluate.
type compiled struct {
	Rule
	prg cel.Program
}

// Set is a list of compiled rules.
type Set struct{ rules []compiled }

// Len is the number of rules in s.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// Compile checks rs and compiles them. schema, when it is a JSON schema with
// properties, is the tool's inputSchema: a top-level args.<field> it does not
// name is an error. An invalid rule is an apperr Invalid error whose details
// (RuleErrorDetails) name the rule and, for a CEL error, its position.
func Compile(rs []Rule, schema json.RawMessage) (*Set, error) {
	if err := validateShape(rs); err != nil {
		return nil, err
	}
	props, hasProps := schemaProperties(schema)
	s := &Set{rules: make([]compiled, 0, len(rs))}
	for i, r := range rs {
		field := fmt.Sprintf("rules[%d].when", i)
		ast, iss := env.Compile(r.When)
		if iss != nil && iss.Err() != nil {
			errs := iss.Errors()
			first := errs[0]
			e := ruleError("invalid_rule", i, field, "%s (line %d, column %d)",
				first.Message, first.Location.Line(), first.Location.Column()+1)
			e.Details = RuleErrorDetails{RuleIndex: i, Line: first.Location.Line(),
				Column: first.Location.Column() + 1, CELMessage: first.Message, Problem: first.Message}
			return nil, e
		}
		if !ast.OutputType().IsExactType(cel.BoolType) {
			return nil, ruleError("rule_not_boolean", i, field,
				"the expression must be true or false, but it is %s; compare it, e.g. args.count > 10",
				ast.OutputType())
		}
		if hasProps {
			for _, f := range argFields(ast) {
				if !props[f] {
					return nil, ruleError("unknown_argument", i, field,
						"args.%s is not an argument of this tool; its input schema names: %s",
						f, strings.Join(sortedKeys(props), ", "))
				}
			}
		}
		prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.EvalOptions(cel.OptOptimize))
		if err != nil {
			return nil, ruleError("invalid_rule", i, field, "%v", err)
		}
		s.rules = append(s.rules, compiled{Rule: r, prg: prg})
	}
	return s, nil
}

// Check compiles rs and returns only the error.
func Check(rs []Rule, schema json.RawMessage) error {
	_, err := Compile(rs, schema)
	return err
}

// schemaProperties returns the names of a JSON schema's top-level
// properties, when it declares any.
func schemaProperties(schema json.RawMessage) (map[string]bool, bool) {
	if len(schema) == 0 {
		return nil, false
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil, false
	}
	out := make(map[string]bool, len(s.Properties))
	for k := range s.Properties {
		out[k] = true
	}
	return out, true
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
