// Package policy owns Toolgate's approval-policy domain: MCP servers, their
// discovered tools, per-tool approval policies, global settings and the audit
// log, and the rule that resolves a tool's effective policy.
package policy

import (
	"regexp"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Policy says whether a tool may run without asking.
type Policy string

// The policy values. Always and Never are OpenAI's require_approval words;
// Blocked is Toolgate's: the tool is never offered to the model.
const (
	Never   Policy = "never"   // runs without asking
	Always  Policy = "always"  // asks every time
	Blocked Policy = "blocked" // never offered to the model
)

// Valid reports whether p is one of the policy values.
func (p Policy) Valid() bool { return p == Never || p == Always || p == Blocked }

// ParsePolicy validates s as a policy value; field names the input field for errors.
func ParsePolicy(field, s string) (Policy, error) {
	p := Policy(s)
	if !p.Valid() {
		return "", apperr.Invalidf("invalid_policy", field, "policy must be one of always, never, blocked (got %q)", s)
	}
	return p, nil
}

// Source says where an effective policy came from.
type Source string

// The policy sources, from most to least specific.
const (
	FromTool   Source = "tool"
	FromServer Source = "server"
	FromGlobal Source = "global"
)

// Resolve returns a tool's effective policy: its explicit policy, else its
// server's default, else the global default, with where it came from.
func Resolve(tool, server *Policy, global Policy) (Policy, Source) {
	switch {
	case tool != nil:
		return *tool, FromTool
	case server != nil:
		return *server, FromServer
	default:
		return global, FromGlobal
	}
}

var (
	labelRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
)

// ValidateLabel checks a server label: the OpenAI server_label and Toolgate's server id.
func ValidateLabel(label string) error {
	if !labelRE.MatchString(label) {
		return apperr.Invalidf("invalid_label", "label",
			"label must be 1-64 characters of letters, digits, '_' and '-' (got %q)", label)
	}
	return nil
}

// ValidateToolName checks a tool name used to set a policy.
func ValidateToolName(field, name string) error {
	if !toolNameRE.MatchString(name) {
		return apperr.Invalidf("invalid_tool_name", field,
			"tool name must be 1-128 characters of letters, digits, '_', '.' and '-' (got %q)", name)
	}
	return nil
}
