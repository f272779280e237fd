package termchat

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// approval is an approval request as approval.required sends it
// (docs/sse-events.md).
type approval struct {
	ID          string          `json:"approval_request_id"`
	ServerLabel string          `json:"server_label"`
	ToolName    string          `json:"tool_name"`
	Arguments   json.RawMessage `json:"arguments"`
	Redacted    []string        `json:"redacted"`
	Annotations map[string]any  `json:"annotations"`
	AsksBecause *asksBecause    `json:"asks_because"`
	Rules       *ruleCheck      `json:"rules"`
	ExpiresAt   *time.Time      `json:"expires_at"`
	Corrects    *corrects       `json:"corrects"`
	// AskLock is the level (tool, server, global) of an admin's lock at Ask
	// on the tool; null or absent when it is not locked. A locked tool is
	// approved once or denied: no grant, no remember.
	AskLock *string `json:"ask_lock"`
	// ApprovalText is the admin's words for the tool, filled from the
	// arguments (secrets already "[redacted]"); plain text, shown above
	// the arguments. Null without.
	ApprovalText *string `json:"approval_text"`
	// Choices are what the card offers (an admin may limit them per
	// tool); absent from an older server: every choice.
	Choices []string `json:"choices"`
}

// decisionKey is one key of the decision line, with the card choice it
// makes (the server refuses a choice the tool does not offer).
type decisionKey struct{ key, label, choice string }

// decisionKeys are every key, in the order of DecisionKeys.
var decisionKeys = []decisionKey{
	{"y", "approve once", "approve_once"}, {"c", "this conversation", "approve_conversation"},
	{"h", "1 hour", "approve_hour"}, {"a", "always", "remember"}, {"n", "deny", "deny"},
	{"b", "deny always (block)", "remember"}, {"r", "deny with reason", "deny"},
	{"e", "deny with correction", "deny_with_correction"},
	// Stop: deny this and the rest of the response's requests, with a
	// reason; the model gets no turn.
	{"s", "stop", "deny"},
}

// offers says whether a's card offers key: the tool's choices allow it
// and no lock at Ask forbids it.
func (a approval) offers(key string) bool {
	for _, k := range decisionKeys {
		if k.key != key {
			continue
		}
		if a.locked() && (key == "c" || key == "h" || key == "a" || key == "b") {
			return false
		}
		return a.Choices == nil || slices.Contains(a.Choices, k.choice)
	}
	return false
}

// offered are the keys a's card offers, in order.
func (a approval) offered() []decisionKey {
	var out []decisionKey
	for _, k := range decisionKeys {
		if a.offers(k.key) {
			out = append(out, k)
		}
	}
	return out
}

// limited says whether an admin limited the tool's choices beyond a lock.
func (a approval) limited() bool {
	if a.Choices == nil {
		return false
	}
	for _, k := range decisionKeys {
		if !slices.Contains(a.Choices, k.choice) && !(a.locked() && strings.Contains("chab", k.key)) {
			return true
		}
	}
	return false
}

// corrects is how a request differs from the one the person denied with a
// correction just before it.
type corrects struct {
	Changes []struct {
		Path   string          `json:"path"`
		Before json.RawMessage `json:"before"`
		After  json.RawMessage `json:"after"`
	} `json:"changes"`
	MatchesCorrection bool `json:"matches_correction"`
}

// correctsLines say what changed since the correction, as the web card's
// note does (CorrectsNote.tsx): "city: "Berlin" → "Hamburg"".
func correctsLines(c *corrects) []string {
	head := "Asked again after your correction, with the same arguments."
	if len(c.Changes) > 0 {
		head = "Changed since your correction:"
	}
	if c.MatchesCorrection {
		head += " It matches your correction."
	} else {
		head += " It does not match your correction: check the arguments."
	}
	out := []string{head}
	value := func(raw json.RawMessage, missing string) string {
		switch {
		case len(raw) == 0:
			return missing
		case string(raw) == `"[redacted]"`:
			return "hidden"
		}
		return compactJSON(raw)
	}
	for _, ch := range c.Changes {
		path := ch.Path
		if path == "" {
			path = "arguments"
		}
		out = append(out, fmt.Sprintf("%s: %s → %s", path, value(ch.Before, "(not set)"), value(ch.After, "(removed)")))
	}
	return out
}

// locked says whether an admin locked the tool at Ask.
func (a approval) locked() bool { return a.AskLock != nil && *a.AskLock != "" }

// keys is the line of choices for a: DecisionKeys, LockedKeys under a
// lock at Ask, fewer where an admin limited the tool's choices.
func (a approval) keys() string {
	parts := []string{}
	for _, k := range a.offered() {
		parts = append(parts, "["+k.key+"] "+k.label)
	}
	return strings.Join(parts, "  ")
}

// keyList is "y, n, r or e": the keys a's card offers, for a reminder.
func (a approval) keyList() string {
	ks := a.offered()
	var b strings.Builder
	for i, k := range ks {
		switch {
		case i == 0:
		case i == len(ks)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(k.key)
	}
	return b.String()
}

// ruleCheck is what the argument rules made of a request the person decides.
type ruleCheck struct {
	Checked int    `json:"checked"`
	Error   string `json:"error"`
	Clamped bool   `json:"clamped"`
	Rule    *struct {
		Scope string `json:"scope"`
		Index int    `json:"index"`
		When  string `json:"when"`
	} `json:"rule"`
}

// rulesText says what the rules made of it, in the web app's words
// (ApprovalCard.tsx, rulesCheckedText).
func rulesText(c *ruleCheck) string {
	plural := func(n int) string {
		if n == 1 {
			return fmt.Sprintf("%d rule checked", n)
		}
		return fmt.Sprintf("%d rules checked", n)
	}
	switch {
	case c.Error != "":
		return fmt.Sprintf("%s; one could not be evaluated (%s), so you decide.", plural(c.Checked), c.Error)
	case c.Clamped && c.Rule != nil:
		return fmt.Sprintf("Rule %d would approve (%s), but an admin's setting makes this tool ask.", c.Rule.Index+1, c.Rule.When)
	case c.Rule != nil:
		scope := map[string]string{"tool": "this tool's rules", "server": "the server's rules", "workspace": "workspace rules"}[c.Rule.Scope]
		if scope == "" {
			scope = c.Rule.Scope + " rules"
		}
		return fmt.Sprintf("Rule %d of %s says ask: %s", c.Rule.Index+1, scope, c.Rule.When)
	}
	return plural(c.Checked) + "; none decided, so you decide."
}

// formatLeft is the time left as m:ss, or h:mm:ss from an hour on
// (ExpiryCountdown.tsx).
func formatLeft(d time.Duration) string {
	total := int((d + time.Second - 1) / time.Second)
	if total < 0 {
		total = 0
	}
	h, m, sec := total/3600, total%3600/60, total%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
}

// expiryText is the card's countdown at now: "Expires in 29:41 (at
// 10:24:01 UTC)", or that it expired.
func expiryText(at, now time.Time) string {
	left := at.Sub(now)
	if left <= 0 {
		return "Expired: nobody decided in time"
	}
	return fmt.Sprintf("Expires in %s (at %s)", formatLeft(left), at.Local().Format("15:04:05 MST"))
}

type asksBecause struct {
	Policy  string   `json:"policy"`
	Source  string   `json:"source"`
	Reason  string   `json:"reason"`
	Fields  []string `json:"fields"`
	Changed *struct {
		Fields []string `json:"fields"`
	} `json:"changed"`
}

// whyText says why a tool asks, in the web app's words
// (frontend/src/chat/ApprovalCard.tsx, asksBecauseText).
func whyText(ab *asksBecause) string {
	if ab == nil {
		return "Asks because Toolgate has not seen this tool before (unknown tools always ask)"
	}
	switch ab.Reason {
	case "ask_everything":
		return "Asks because an admin turned on \u201cask for everything\u201d"
	case "rules":
		return "Asks because argument rules apply and none decided"
	case "not_read_only":
		return "Asks because it is not read-only"
	case "new_tool":
		return "New: asks until someone sets its policy"
	case "changed":
		fields := ab.Fields
		if ab.Changed != nil && ab.Changed.Fields != nil {
			fields = ab.Changed.Fields
		}
		if len(fields) > 0 {
			words := make([]string, len(fields))
			for i, f := range fields {
				words[i] = fieldWord(f)
			}
			return "Changed since you allowed it: " + strings.Join(words, ", ")
		}
		return "Changed since you allowed it"
	case "read_only_changed":
		return "Says it is read-only, but changed after it was first seen: asks until someone sets its policy"
	}
	switch ab.Source {
	case "tool":
		return "Asks because this tool's policy is Ask"
	case "server":
		return "Asks because the server default is Ask"
	case "global":
		return "Asks because the global default is Ask"
	case "user":
		return "Asks because your own policy for this tool is Ask"
	case "locked":
		return "Asks because an admin locked this tool at Ask"
	case "new":
		return "New: asks until someone sets its policy"
	case "changed":
		return "Changed since you allowed it"
	}
	return "Asks because Toolgate has not seen this tool before (unknown tools always ask)"
}

func fieldWord(f string) string {
	switch f {
	case "input_schema":
		return "input schema"
	case "annotations":
		return "hints"
	}
	return strings.ReplaceAll(f, "_", " ")
}

// hints are the annotation badges of the web card.
func hints(a map[string]any) []string {
	var out []string
	for _, h := range []struct{ key, label string }{
		{"readOnlyHint", "read-only"}, {"destructiveHint", "destructive"}, {"openWorldHint", "open-world"},
	} {
		if a[h.key] == true {
			out = append(out, h.label)
		}
	}
	return out
}
