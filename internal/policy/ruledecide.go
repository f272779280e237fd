package policy

import (
	"github.com/toolgate/toolgate/internal/rules"
)

// RuleDecision is what the argument rules decided for one call. The turn
// engine answers an approval request itself when Decision is approve or
// deny, and shows the card (with the rules checked) when it is ask.
type RuleDecision struct {
	Decision rules.Decision `json:"decision"`
	// Scope, Index and When name the rule that decided; Scope is "" when
	// no rule held.
	Scope  rules.Scope `json:"scope,omitempty"`
	Index  int         `json:"index"`
	When   string      `json:"when,omitempty"`
	Reason string      `json:"reason,omitempty"`
	// Error says why the deciding rule could not be evaluated (it asks).
	Error string `json:"error,omitempty"`
	// Checked is how many rules were looked at (all three lists).
	Checked int `json:"checked"`
	// Clamped says a rule approved but the tool's policy does not let a
	// rule loosen it (an admin's lock or block), so the decision became ask
	// (locked always) or deny (blocked).
	Clamped bool `json:"clamped,omitempty"`
}
