package emulator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFindMentions_TakesTheFirstObjectAfterTheName: the arguments are the
// first JSON object after a tool's name and before the next name, wherever
// it stands in the sentence; braces and quotes inside its strings do not
// end it, and a malformed first object means no arguments.
func TestFindMentions_TakesTheFirstObjectAfterTheName(t *testing.T) {
	offers := []offer{
		{entry: &mcpTool{Label: "test"}, tool: ListedTool{Name: "echo"}},
		{entry: &mcpTool{Label: "test"}, tool: ListedTool{Name: "add"}},
	}
	tests := []struct {
		name, text string
		want       []string // "tool args" per call
	}{
		{"right after the name", `echo {"text": "hi"}`, []string{`echo {"text":"hi"}`}},
		{"after a colon", "echo:\n{\"text\": \"hi\"}", []string{`echo {"text":"hi"}`}},
		{"later in the sentence", `Use the echo tool with {"text": "hi"} please`, []string{`echo {"text":"hi"}`}},
		{"qualified name", `call test.echo, arguments {"text": "hi"}`, []string{`echo {"text":"hi"}`}},
		{"no object", "echo something", []string{"echo {}"}},
		{"object before the name is not its", `{"text": "hi"} then echo`, []string{"echo {}"}},
		{"braces and escaped quotes in strings", `echo with {"text": "a } b { \"c}\" \\"}`, []string{`echo {"text":"a } b { \"c}\" \\"}`}},
		{"nested objects", `echo with {"text": "x", "meta": {"a": {"b": 1}}}`, []string{`echo {"text":"x","meta":{"a":{"b":1}}}`}},
		{"only the first object", `echo with {"text": "one"} or {"text": "two"}`, []string{`echo {"text":"one"}`}},
		{"malformed first object", `echo with {text: hi} or {"text": "two"}`, []string{"echo {}"}},
		{"trailing comma", `echo with {"text": "hi",}`, []string{"echo {}"}},
		{"never closed", `echo with {"text": "hi"`, []string{"echo {}"}},
		{"never closed, later name still a call", `echo with {"text": "x and then add {"a": 1}`, []string{"echo {}", `add {"a":1}`}},
		{"a name inside the object is text", `echo with {"text": "add 2 and 3"}`, []string{`echo {"text":"add 2 and 3"}`}},
		{"each name its own object", `echo with {"text": "hi"}, then add with {"a": 1, "b": 2}`, []string{`echo {"text":"hi"}`, `add {"a":1,"b":2}`}},
		{"an object belongs to the nearest name before it", `echo and add with {"a": 1, "b": 2}`, []string{"echo {}", `add {"a":1,"b":2}`}},
		{"an array is not an object", `echo with ["x"]`, []string{"echo {}"}},
		{"unicode in strings", `echo mit {"text": "Grüße {🙂}"}`, []string{`echo {"text":"Grüße {🙂}"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range findMentions(tt.text, offers) {
				got = append(got, m.offer.tool.Name+" "+m.args)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findMentions(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

// TestObjectEnd_BalancesBracesOutsideStrings: the span ends at the brace
// that closes the first, not at one inside a string.
func TestObjectEnd_BalancesBracesOutsideStrings(t *testing.T) {
	tests := []struct {
		text string
		end  int
		ok   bool
	}{
		{`{}`, 2, true},
		{`{"a": "}"} rest`, 10, true},
		{`{"a": "\"}"}`, 12, true},
		{`{"a": {"b": {}}} x`, 16, true},
		{`{"a": "\\"} x`, 11, true},
		{`{"a": "}`, 0, false},
		{`{{}`, 0, false},
	}
	for _, tt := range tests {
		end, ok := objectEnd(tt.text, 0)
		if end != tt.end || ok != tt.ok {
			t.Errorf("objectEnd(%q) = %d, %v; want %d, %v", tt.text, end, ok, tt.end, tt.ok)
		}
	}
}
