package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// offer is a tool the model may call in this request: listed by its server
// and allowed by the entry's allowed_tools.
type offer struct {
	entry         *mcpTool
	tool          ListedTool
	needsApproval bool
}

func (o offer) qualified() string { return o.entry.Label + "." + o.tool.Name }

// mention is a tool named in the user's text, with its arguments.
type mention struct {
	offer offer
	args  string
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// findMentions finds the tools named in text, in order. A name matches as a
// whole word, either bare ("get_forecast") or qualified by its server label
// ("weather.get_forecast"); a bare name offered by several servers means the
// first of them in tools order. The first JSON object after a name, before
// the next name, is that call's arguments, so "Use the echo tool with
// {...}" works as well as "echo {...}"; with none, or when that first
// object is malformed, they are {}. Tool names inside the object are its
// text, not calls.
func findMentions(text string, offers []offer) []mention {
	var out []mention
	pending := -1 // index in out of the call still waiting for its arguments
	for i := 0; i < len(text); {
		if text[i] == '{' && pending >= 0 {
			i = readArgs(text, i, &out[pending])
			pending = -1
			continue
		}
		if i > 0 && (isNameByte(text[i-1]) || text[i-1] == '.') {
			i++
			continue
		}
		best, bestLen := longestName(text, i, offers)
		if best < 0 {
			i++
			continue
		}
		i += bestLen
		out = append(out, mention{offer: offers[best], args: "{}"})
		pending = len(out) - 1
	}
	return out
}

// readArgs takes the JSON object at text[i] as m's arguments when it is
// valid, and returns where the text goes on: past the object, or past its
// brace when it is never closed (no arguments, and the rest is text).
func readArgs(text string, i int, m *mention) int {
	end, ok := objectEnd(text, i)
	if ok {
		var b bytes.Buffer
		if json.Compact(&b, []byte(text[i:end])) == nil {
			m.args = b.String()
		}
		return end
	}
	// never closed: no arguments, and the rest is text
	return i + 1
}

// longestName is the offer whose name (qualified or bare) is the longest
// whole word at text[i], and that name's length; best is -1 with none.
func longestName(text string, i int, offers []offer) (best, bestLen int) {
	best, bestLen = -1, 0
	for k, o := range offers {
		for _, name := range []string{o.qualified(), o.tool.Name} {
			if len(name) <= bestLen || !strings.HasPrefix(text[i:], name) {
				continue
			}
			end := i + len(name)
			if end < len(text) && (isNameByte(text[end]) || text[end] == '.' && end+1 < len(text) && isNameByte(text[end+1])) {
				continue
			}
			best, bestLen = k, len(name)
		}
	}
	return best, bestLen
}

// objectEnd returns the index just past the '}' that closes the brace at
// text[start], skipping braces inside JSON strings (escapes included); ok
// is false when it is never closed. It only balances braces: whether the
// span is valid JSON is for the caller to decide.
func objectEnd(text string, start int) (end int, ok bool) {
	depth, inString := 0, false
	for i := start; i < len(text); i++ {
		c := text[i]
		switch {
		case inString && c == '\\':
			i++ // the escaped character, whatever it is
		case c == '"':
			inString = !inString
		case inString:
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// callResult is what the text answer reports about one tool call.
type callResult struct {
	label, name string
	output      string
	err         *CallError
}

type denial struct {
	label, name, reason string
}

// compose writes the emulated model's answer. It always quotes tool output
// and denial reasons, so that tests can see what reached the model.
func compose(results []callResult, denials []denial, listErrs []string, userText string, hasUser bool, offers []offer) string {
	parts := append([]string(nil), listErrs...)
	for _, d := range denials {
		if d.reason != "" {
			parts = append(parts, fmt.Sprintf("I did not run %s on %s because the request was denied. Reason given: %q.", d.name, d.label, d.reason))
		} else {
			parts = append(parts, fmt.Sprintf("I did not run %s on %s because the request was denied (no reason was given).", d.name, d.label))
		}
	}
	for _, r := range results {
		if r.err != nil {
			parts = append(parts, fmt.Sprintf("The tool %s on %s failed: %s", r.name, r.label, errorText(r.err)))
		} else {
			parts = append(parts, fmt.Sprintf("The tool %s on %s returned:\n\n%s", r.name, r.label, readable(r.output)))
		}
	}
	if len(results) == 0 && len(denials) == 0 && hasUser {
		var b strings.Builder
		fmt.Fprintf(&b, "This is the Toolgate Responses emulator, not a language model. You said: %q. ", strings.TrimSpace(directiveRE.ReplaceAllString(userText, "")))
		if len(offers) == 0 {
			b.WriteString("No MCP tools are available in this request.")
		} else {
			b.WriteString("To call a tool, name it in your message, optionally followed by JSON arguments, for example: ")
			b.WriteString(offers[0].tool.Name + ` {"key": "value"}. Tools available: `)
			names := make([]string, len(offers))
			for i, o := range offers {
				names[i] = o.qualified()
			}
			b.WriteString(strings.Join(names, ", ") + ".")
		}
		parts = append(parts, b.String())
	}
	if len(parts) == 0 {
		return "OK."
	}
	return strings.Join(parts, "\n\n")
}

func errorText(e *CallError) string {
	if e.Type == "mcp_tool_execution_error" {
		var ts []string
		for _, c := range e.Content {
			ts = append(ts, c.Text)
		}
		if len(ts) == 0 {
			return "the tool reported an error"
		}
		return strings.Join(ts, " ")
	}
	return e.Message
}

var wordRE = regexp.MustCompile(`\s*\S+\s*`)

// splitText cuts text into deltas: word by word by default, into exactly n
// pieces with Deltas, or pieces of size runes with DeltaSize.
func splitText(text string, b Behavior) []string {
	if text == "" {
		return nil
	}
	runes := []rune(text)
	if b.Deltas > 0 {
		// Exactly Deltas pieces (at most one per character), the first
		// len%n one character longer: a ceil-sized split can come out short
		// (10 characters in 6 deltas of 2 is only 5).
		n := min(b.Deltas, len(runes))
		out := make([]string, 0, n)
		for i, start := 0, 0; i < n; i++ {
			size := len(runes) / n
			if i < len(runes)%n {
				size++
			}
			out = append(out, string(runes[start:start+size]))
			start += size
		}
		return out
	}
	if size := b.DeltaSize; size > 0 {
		var out []string
		for i := 0; i < len(runes); i += size {
			out = append(out, string(runes[i:min(i+size, len(runes))]))
		}
		return out
	}
	out := wordRE.FindAllString(text, -1)
	if strings.Join(out, "") != text { // only whitespace
		return []string{text}
	}
	return out
}

// isReasoningModel says whether a model name is one of OpenAI's reasoning
// models, which put reasoning items in front of their decisions.
func isReasoningModel(model string) bool {
	m := strings.ToLower(model)
	return strings.HasPrefix(m, "gpt-5") || strings.HasPrefix(m, "o1") || strings.HasPrefix(m, "o3") || strings.HasPrefix(m, "o4")
}

func countWords(s string) int { return len(strings.Fields(s)) }

// half cuts text at about half its runes (for response.incomplete).
func half(text string) string {
	n := utf8.RuneCountInString(text) / 2
	return string([]rune(text)[:n])
}

// readable is tool output as the model quotes it: a content list (output
// that holds an image or other media, see mcpConn.call) becomes its text with
// each other block named ("[image/png image, 68 bytes]"), not its base64.
func readable(out string) string {
	if !strings.HasPrefix(out, "[{") {
		return out
	}
	var blocks []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     []byte `json:"data"`
		MIMEType string `json:"mimeType"`
	}
	if err := json.Unmarshal([]byte(out), &blocks); err != nil {
		return out
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		switch {
		case b.Type == "text":
			parts = append(parts, b.Text)
		case b.MIMEType != "":
			parts = append(parts, fmt.Sprintf("[%s %s, %d bytes]", b.MIMEType, b.Type, len(b.Data)))
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
