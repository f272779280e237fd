// Package rules holds argument rules: ordered CEL expressions over a tool
// call that approve, deny or ask. Rules are compiled when they are saved
// (a compile or type error is the caller's to fix) and evaluated with a cost
// limit; an evaluation that fails means "ask", never "approve".
package rules

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Decision is what a matching rule decides.
type Decision string

// The decisions a rule can make.
const (
	Approve Decision = "approve"
	Deny    Decision = "deny"
	Ask     Decision = "ask"
)

// Limits on a list of rules, so that saving and evaluating stay cheap.
const (
	MaxRules     = 50
	MaxWhenLen   = 1000 // characters of one expression
	MaxReasonLen = 500
	// CostLimit bounds one evaluation in cel-go's cost units; an expression
	// that would cost more fails, which means ask.
	CostLimit = 10_000
)

// Rule is one argument rule: when When holds for a call, Decision applies.
type Rule struct {
	When     string   `json:"when"`
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason,omitempty"`
}

// Scope names the list a rule belongs to; lists are checked tool first,
// then server, then workspace.
type Scope string

// The scopes of rule lists.
const (
	ScopeTool      Scope = "tool"
	ScopeServer    Scope = "server"
	ScopeWorkspace Scope = "workspace"
)

// validateShape checks what can be checked without compiling: count,
// lengths, the decision.
func validateShape(rs []Rule) error {
	if len(rs) > MaxRules {
		return apperr.Invalidf("too_many_rules", "rules", "at most %d rules per list (got %d)", MaxRules, len(rs))
	}
	for i, r := range rs {
		field := fmt.Sprintf("rules[%d]", i)
		switch {
		case r.When == "":
			return ruleError("invalid_rule", i, field+".when", "when is empty: give a CEL expression, e.g. args.city in [\"Test\"]")
		case utf8.RuneCountInString(r.When) > MaxWhenLen:
			return ruleError("invalid_rule", i, field+".when", "when is longer than %d characters", MaxWhenLen)
		case utf8.RuneCountInString(r.Reason) > MaxReasonLen:
			return ruleError("invalid_rule", i, field+".reason", "reason is longer than %d characters", MaxReasonLen)
		case r.Decision != Approve && r.Decision != Deny && r.Decision != Ask:
			return ruleError("invalid_rule", i, field+".decision", "decision must be approve, deny or ask (got %q)", r.Decision)
		}
	}
	return nil
}

// RuleErrorDetails is error.details of an invalid rule.
type RuleErrorDetails struct {
	RuleIndex int `json:"rule_index"`
	// Line and Column (1-based) locate a CEL error in the expression.
	Line       int    `json:"line,omitempty"`
	Column     int    `json:"column,omitempty"`
	CELMessage string `json:"cel_message,omitempty"`
	// Problem is what is wrong, without naming the rule or the position
	// (the message says "rule 1: <problem>"): for a screen that shows the
	// rule's number and the position itself, so it names the rule once.
	Problem string `json:"problem"`
}

// ruleError is an invalid rule i: its message is "rule <i>: <problem>",
// and details carry the problem alone.
func ruleError(code string, i int, field, format string, args ...any) *apperr.Error {
	problem := fmt.Sprintf(format, args...)
	e := apperr.Invalidf(code, field, "rule %d: %s", i, problem)
	e.Details = RuleErrorDetails{RuleIndex: i, Problem: problem}
	return e
}

// Problem is what is wrong with the rule err names (RuleErrorDetails),
// without its name, and the index of that rule; for any other error, its
// message and -1.
func Problem(err error) (string, int) {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		if d, ok := ae.Details.(RuleErrorDetails); ok && d.Problem != "" {
			return d.Problem, d.RuleIndex
		}
	}
	return err.Error(), -1
}
