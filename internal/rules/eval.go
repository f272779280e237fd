package rules

import (
	"fmt"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
)

// User is the person a call is made for, as rules see it (user.id,
// user.email, user.role).
type User struct {
	ID    string
	Email string
	Role  string
}

// Call is what rules are evaluated over.
type Call struct {
	Args   map[string]any // the call's arguments, decoded from JSON
	Tool   string
	Server string
	User   User
}

// Result is the outcome of evaluating a list of rules: the first rule that
// matched, or Ask with Index -1 when none did. A rule whose evaluation
// failed (an error, the cost limit, a value that is not a bool) ends the
// evaluation with Ask and Err set: a later rule must not approve what an
// earlier one might have denied. Err says what failed without naming the
// rule (Index does), so a text that names the rule names it once.
type Result struct {
	Decision Decision
	Index    int // -1: no rule matched
	Rule     Rule
	Err      error
}

// Matched reports whether a rule decided (matched or failed).
func (r Result) Matched() bool { return r.Index >= 0 }

// Eval evaluates s's rules in order over c; the first that holds decides.
func (s *Set) Eval(c Call) Result {
	if s.Len() == 0 {
		return Result{Decision: Ask, Index: -1}
	}
	args := c.Args
	if args == nil {
		args = map[string]any{}
	}
	act, err := interpreter.NewActivation(map[string]any{
		"args":   args,
		"tool":   c.Tool,
		"server": c.Server,
		"user":   map[string]string{"id": c.User.ID, "email": c.User.Email, "role": c.User.Role},
	})
	if err != nil {
		return Result{Decision: Ask, Index: 0, Rule: s.rules[0].Rule, Err: err}
	}
	for i, r := range s.rules {
		out, _, err := r.prg.Eval(act)
		if err != nil {
			return Result{Decision: Ask, Index: i, Rule: r.Rule, Err: err}
		}
		b, ok := out.(types.Bool)
		if !ok {
			return Result{Decision: Ask, Index: i, Rule: r.Rule, Err: fmt.Errorf("it evaluated to %v, not true or false", out.Type())}
		}
		if b {
			return Result{Decision: r.Decision, Index: i, Rule: r.Rule}
		}
	}
	return Result{Decision: Ask, Index: -1}
}
