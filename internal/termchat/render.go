package termchat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// indent starts every line of what the model, a tool or an MCP server
// produced, so that such text can never stand at the start of a line where
// the client's own prompts do ("you> ", the decision keys).
const indent = "  "

// DecisionKeys is the line that asks for a decision on an approval request:
// the choices of the web app's card (ApprovalCard.tsx, DecisionMenu.tsx).
const DecisionKeys = "[y] approve once  [c] this conversation  [h] 1 hour  [a] always  [n] deny  [b] deny always (block)  [r] deny with reason  [e] deny with correction  [s] stop"

// LockedKeys is the line for a request whose tool an admin locked at Ask
// (ask_lock): every call asks, so it can only be approved once or denied.
const LockedKeys = "[y] approve once  [n] deny  [r] deny with reason  [e] deny with correction  [s] stop"

// term writes to the terminal and remembers whether the cursor is at the
// start of a line.
type term struct {
	w         io.Writer
	midLine   bool // the last byte written was not a newline
	textStart bool // inside server text: the next character starts a line
}

func (t *term) write(s string) {
	if s == "" {
		return
	}
	_, _ = io.WriteString(t.w, s)
	t.midLine = s[len(s)-1] != '\n'
}

// newline ends the current line, if one was started.
func (t *term) newline() {
	if t.midLine {
		t.write("\n")
	}
}

// linef writes one line of the client's own, starting on a fresh line.
func (t *term) linef(format string, args ...any) {
	t.newline()
	t.write(fmt.Sprintf(format, args...) + "\n")
}

// prompt starts a fresh line with the prompt and leaves the cursor after it.
func (t *term) prompt(p string) {
	t.newline()
	t.write(p)
}

// text writes server text (an answer, as it streams): cleaned, and every
// line indented. begin starts a new block of text on a fresh line.
func (t *term) text(s string, begin bool) {
	if begin {
		t.newline()
		t.textStart = true
	}
	var b strings.Builder
	for _, r := range Clean(s, true) {
		if r == '\n' {
			b.WriteByte('\n')
			t.textStart = true
			continue
		}
		if t.textStart {
			b.WriteString(indent)
			t.textStart = false
		}
		b.WriteRune(r)
	}
	t.write(b.String())
}

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

// prettyJSON indents a JSON value for the terminal, keeping the server's
// key order and string escapes; it falls back to the raw text.
func prettyJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return unescapeHTML(b.String())
}

// compactJSON is a JSON value on one line, for the correction prompt.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return unescapeHTML(b.String())
}

// unescapeHTML turns the escapes Go's JSON encoder writes for <, > and &
// (\u003c, \u003e, \u0026) back into the characters, for people to read.
// Every other escape stays as it was.
func unescapeHTML(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch strings.ToLower(s[i+2 : i+6]) {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // an escape: its second character is not the start of another
		i++
	}
	return b.String()
}

// card writes an approval request as the web app's card shows it: tool and
// server, title, hints, why it asks, the arguments, what was hidden.
func (t *term) card(a approval, n, of int) {
	head := "Approval needed"
	if of > 1 {
		head = fmt.Sprintf("Approval needed (%d of %d)", n, of)
	}
	t.linef("── %s: %s on %s", head, line(a.ToolName), line(a.ServerLabel))
	if title, ok := a.Annotations["title"].(string); ok && title != "" {
		t.linef("%s%s", indent, line(title))
	}
	if h := hints(a.Annotations); len(h) > 0 {
		t.linef("%sHints from the MCP server (not verified): %s", indent, strings.Join(h, ", "))
	}
	t.linef("%s%s.", indent, line(whyText(a.AsksBecause)))
	if a.Rules != nil {
		t.linef("%s%s", indent, line(rulesText(a.Rules)))
	}
	if a.ExpiresAt != nil {
		t.linef("%s%s.", indent, expiryText(*a.ExpiresAt, time.Now()))
	}
	if a.Corrects != nil {
		for i, l := range correctsLines(a.Corrects) {
			if i > 0 {
				l = indent + l
			}
			t.linef("%s%s", indent, line(l))
		}
	}
	if a.locked() {
		t.linef("%sAn admin locked this tool at Ask (%s): approve once or deny; it cannot be allowed for a while or remembered.", indent, line(*a.AskLock))
	}
	if a.ApprovalText != nil && *a.ApprovalText != "" {
		t.linef("%s%s", indent, line(*a.ApprovalText))
	}
	if a.limited() {
		t.linef("%sAn admin limited the choices for this tool.", indent)
	}
	t.linef("%sArguments:", indent)
	for _, l := range strings.Split(prettyJSON(a.Arguments), "\n") {
		t.linef("%s%s%s", indent, indent, line(l))
	}
	if len(a.Redacted) > 0 {
		paths := make([]string, len(a.Redacted))
		for i, p := range a.Redacted {
			paths[i] = line(p)
		}
		t.linef("%sHidden by Toolgate (it looks secret): %s. The tool receives the real values.", indent, strings.Join(paths, ", "))
	}
}
