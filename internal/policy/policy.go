// Package policy owns Toolgate's approval-policy domain: MCP servers, their
// discovered tools, per-tool approval policies, global settings and the audit
// log, and the rule that resolves a tool's effective policy.
package policy

import (
	"regexp"
	"unicode"
	"unicode/utf8"

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

// AskUnlessReadOnly is a default (global or server), never a tool's own
// policy: tools whose annotations say readOnlyHint: true run without asking,
// every other tool asks. It is the default of a fresh install.
const AskUnlessReadOnly Policy = "ask_unless_read_only"

// Valid reports whether p is a tool policy value: never, always or blocked.
func (p Policy) Valid() bool { return p == Never || p == Always || p == Blocked }

// ValidDefault reports whether p may be a global or server default: a tool
// policy value or ask_unless_read_only.
func (p Policy) ValidDefault() bool { return p.Valid() || p == AskUnlessReadOnly }

// ParsePolicy validates s as a tool policy value; field names the input field for errors.
func ParsePolicy(field, s string) (Policy, error) {
	p := Policy(s)
	if p == AskUnlessReadOnly {
		return "", apperr.Invalidf("invalid_policy", field,
			"ask_unless_read_only is only a default (global or server); a tool's policy must be one of always, never, blocked")
	}
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

var labelRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// MaxToolNameLen is the longest tool name a policy can be set for, in characters.
const MaxToolNameLen = 128

// ValidateLabel checks a server label: the OpenAI server_label and Toolgate's server id.
func ValidateLabel(label string) error {
	if !labelRE.MatchString(label) {
		return apperr.Invalidf("invalid_label", "label",
			"label must be 1-64 characters of letters, digits, '_' and '-' (got %q)", label)
	}
	return nil
}

// ValidateToolName checks a tool name used to set a policy or rules: any
// name a server can list (ToolNameProblem: 1-128 characters of valid UTF-8
// without control, bidirectional, zero-width or other invisible characters,
// HiddenRune), so no tool escapes policy because of its name and no stored
// policy names a tool differently from how it shows.
func ValidateToolName(field, name string) error {
	n := utf8.RuneCountInString(name)
	if n == 0 || n > MaxToolNameLen || !utf8.ValidString(name) {
		return apperr.Invalidf("invalid_tool_name", field,
			"tool name must be 1-%d characters of valid UTF-8 without control or invisible characters (got %s)", MaxToolNameLen, QuoteName(name))
	}
	for _, r := range name {
		if HiddenRune(r) {
			return apperr.Invalidf("invalid_tool_name", field,
				"tool name holds the invisible or control character U+%04X, so it would not show what it names; "+
					"tool names must be 1-%d characters of valid UTF-8 without control or invisible characters (got %s)",
				r, MaxToolNameLen, QuoteName(name))
		}
	}
	return nil
}

// validateToolNameToRemove is ValidateToolName for removing a policy: it
// lets through the invisible characters ValidateToolName refuses but
// earlier versions stored (only control characters were refused then), so
// such a policy can still be removed.
func validateToolNameToRemove(name string) error {
	n := utf8.RuneCountInString(name)
	bad := n == 0 || n > MaxToolNameLen || !utf8.ValidString(name)
	for _, r := range name {
		bad = bad || unicode.IsControl(r)
	}
	if bad {
		return ValidateToolName("tool_name", name)
	}
	return nil
}
