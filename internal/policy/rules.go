package policy

import (
	"github.com/toolgate/toolgate/internal/rules"
)

// ActionRulesSet is the audit action of a changed list of argument rules.
const ActionRulesSet = "rules.set"

// RuleList names one list of argument rules: the workspace's (no server),
// a server's (no tool) or a tool's.
type RuleList struct {
	ServerLabel string
	ToolName    string
}

// Scope is which kind of list l is.
func (l RuleList) Scope() rules.Scope {
	switch {
	case l.ServerLabel == "":
		return rules.ScopeWorkspace
	case l.ToolName == "":
		return rules.ScopeServer
	}
	return rules.ScopeTool
}

// RuleTrial is what POST /api/rules/test evaluates: rules over a sample call
// made by the caller.
type RuleTrial struct {
	Rules  []rules.Rule
	Tool   string
	Server string
	Args   map[string]any
}
