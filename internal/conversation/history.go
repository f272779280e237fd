package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of a request rebuilt from the transcript (see fromTranscript): the
// newest entries that fit in both. A person's message is never shortened
// (it is at most MaxInputLen); a model's answer and a tool call are.
const (
	HistoryMaxEntries = 200
	HistoryMaxChars   = 60000 // characters of all entries together
	// historyMaxAnswer and historyMaxTool bound one answer of the model and
	// one tool call or approval request (arguments and output together).
	historyMaxAnswer = 8000
	historyMaxTool   = 2000
)

// historyIntro opens every rebuilt request.
const historyIntro = "Toolgate note: the model's provider no longer has this conversation's earlier responses " +
	"(previous_response_not_found), so the conversation is sent again from Toolgate's own transcript. " +
	"Developer messages like this one record the tool calls and approval requests that happened; " +
	"the calls already ran (or failed) and must not be repeated unless the user asks again. " +
	"Argument values shown as \"[redacted]\" were secrets and are hidden."

// History renders a transcript as input messages, oldest first, within the
// bounds: the newest entries that fit. approvals are the conversation's
// approval requests by id (for their outcome). left is how many entries
// were left out. Items the model does not need (tool lists, errors,
// notices, answers cut short) are skipped.
func History(items []Item, approvals map[string]Approval) (msgs []HistoryMessage, left int) {
	var all []HistoryMessage
	for _, it := range items {
		if m, ok := historyEntry(it, approvals); ok {
			all = append(all, m)
		}
	}
	size := 0
	first := len(all)
	for i := len(all) - 1; i >= 0; i-- {
		n := utf8.RuneCountInString(all[i].Text)
		if i < len(all)-1 && (size+n > HistoryMaxChars || len(all)-i > HistoryMaxEntries) {
			break
		}
		size += n
		first = i
	}
	intro := historyIntro
	if first > 0 {
		intro += fmt.Sprintf(" The %d oldest entries of the transcript are left out to keep the request small.", first)
	}
	msgs = append([]HistoryMessage{{Role: RoleDeveloper, Text: intro}}, all[first:]...)
	return msgs, first
}

func historyEntry(it Item, approvals map[string]Approval) (HistoryMessage, bool) {
	switch it.Type {
	case ItemUserMessage:
		return HistoryMessage{Role: RoleUser, Text: it.Text}, it.Text != ""
	case ItemMessage:
		if it.Partial || it.Text == "" {
			return HistoryMessage{}, false // never completed: not part of the model's context either
		}
		return HistoryMessage{Role: RoleAssistant, Text: shorten(it.Text, historyMaxAnswer)}, true
	case ItemCall:
		return HistoryMessage{Role: RoleDeveloper, Text: shorten(callRecord(it), historyMaxTool)}, true
	case ItemApprovalRequest:
		a, ok := approvals[it.ID]
		if !ok {
			return HistoryMessage{}, false
		}
		return HistoryMessage{Role: RoleDeveloper, Text: shorten(requestRecord(a), historyMaxTool)}, true
	}
	return HistoryMessage{}, false
}

// callRecord says what a tool call did.
func callRecord(it Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tool call: tool %q on server %q", it.Name, it.ServerLabel)
	if it.Interrupted {
		b.WriteString(" began, but its result never arrived: it may or may not have run.")
		return b.String()
	}
	fmt.Fprintf(&b, " with arguments %s", safeArguments(it.Arguments))
	switch {
	case it.ApprovalRequestID != "":
		b.WriteString(" (approved by the user)")
	case it.AllowedBy != nil && it.AllowedBy.Kind == "conversation":
		b.WriteString(" (allowed by the user for this conversation)")
	case it.AllowedBy != nil && it.AllowedBy.Kind == "grant":
		b.WriteString(" (allowed by the user for a while)")
	}
	switch {
	case len(it.CallError) > 0:
		fmt.Fprintf(&b, " failed: %s", compactJSON(it.CallError))
	case it.Output != nil:
		fmt.Fprintf(&b, " returned: %s", *it.Output)
	default:
		b.WriteString(" ran and returned nothing.")
	}
	return b.String()
}

// requestRecord says what became of an approval request.
func requestRecord(a Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approval request: the assistant asked to run tool %q on server %q with arguments %s. ",
		a.ToolName, a.ServerLabel, safeArguments(json.RawMessage(a.StoredArguments)))
	reason := deref(a.DecisionReason)
	switch a.State {
	case Approved:
		b.WriteString("The user approved it.")
		if deref(a.AnsweredIn) == "unknown" {
			b.WriteString(" The approval may have reached the provider in a response that broke off; whether it ran is unknown.")
		}
	case Denied:
		b.WriteString("The user denied it, so it did not run.")
		if c := ShownCorrection(a.StoredCorrection); c != nil {
			fmt.Fprintf(&b, " The user asked to use these arguments instead: %s.", compactJSON(c))
		}
		if reason != "" {
			fmt.Fprintf(&b, " The user's reason: %s", reason)
		}
	case Superseded, Expired, NotRun:
		fmt.Fprintf(&b, "It did not run: %s", reason)
	case OutcomeUnknown:
		b.WriteString("The user approved it, but whether it ran is unknown.")
	default:
		b.WriteString("It has not been answered.")
	}
	return b.String()
}

// safeArguments is stored arguments as compact JSON, redacted once more:
// they were redacted before they were stored, and nothing secret may reach
// the provider through this path even if a row predates that.
func safeArguments(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	s := string(raw)
	var str string
	if json.Unmarshal(raw, &str) == nil {
		s = str // arguments that were not JSON are stored as a JSON string
	}
	red, _ := Redact(s)
	return compactJSON(red)
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// shorten cuts s to at most max characters, saying how much was left out.
func shorten(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	note := fmt.Sprintf(" … [%d more characters left out]", len(r)-max)
	return string(r[:max-utf8.RuneCountInString(note)]) + note
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
