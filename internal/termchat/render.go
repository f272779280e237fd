package termchat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
