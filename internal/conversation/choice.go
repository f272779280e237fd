package conversation

import "github.com/toolgate/toolgate/internal/policy"

// Wider decision scopes (admins only): the request is approved and a
// workspace default changes in the same transaction, stored and audited as
// the settings page's change is.
const (
	// ScopeServer approves the request and makes its server's default
	// policy never: every tool of the server without a workspace policy of
	// its own runs without asking, for everyone.
	ScopeServer = "server"
	// ScopeEverything approves the request and makes the global default
	// policy never: every tool without a policy of its own, on a server
	// without a default of its own, runs without asking, for everyone.
	ScopeEverything = "everything"
)

// Wider reports whether d approves beyond its tool (scope server or
// everything).
func (d Decision) Wider() bool {
	return d.Scope != nil && (*d.Scope == ScopeServer || *d.Scope == ScopeEverything)
}

// Choice is the card choice d makes.
func (d Decision) Choice() policy.Choice {
	switch {
	case d.Remember, d.Wider():
		// A wider approval lasts, like remember, and goes further: a card
		// without remember offers neither.
		return policy.ChoiceRemember
	case !*d.Approve && len(d.Correction) > 0 && string(d.Correction) != "null":
		return policy.ChoiceDenyWithCorrection
	case !*d.Approve:
		return policy.ChoiceDeny
	case d.Scope != nil && *d.Scope == ScopeConversation:
		return policy.ChoiceApproveConversation
	case d.Scope != nil && *d.Scope == ScopeHour:
		return policy.ChoiceApproveHour
	}
	return policy.ChoiceApproveOnce
}
