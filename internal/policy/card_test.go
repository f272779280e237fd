package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/internal/policy"
)

// Placeholders fill from the arguments as the card shows them: strings as
// they are, other values as compact JSON, nested paths and array indexes;
// a placeholder that names nothing stays as written, and text that only
// looks like markup stays text.
func TestRenderApprovalText_FillsKnownAndKeepsUnknown(t *testing.T) {
	args := json.RawMessage(`{"command":"ls -la","token":"[redacted]","n":3,"opts":{"force":true,"path":"/tmp"},"items":["a","b"],"o":{"k":1}}`)
	for _, c := range []struct{ text, want string }{
		{"Run shell command: {command}", "Run shell command: ls -la"},
		{"{token}", "[redacted]"},
		{"{n} times, force={opts.force} at {opts.path}", "3 times, force=true at /tmp"},
		{"first {items.0}, third {items.2}", "first a, third {items.2}"},
		{"{o}", `{"k":1}`},
		{"{nope} {opts.nope} {command.x}", "{nope} {opts.nope} {command.x}"},
		{"<b>{command}</b> {not a placeholder}", "<b>ls -la</b> {not a placeholder}"},
	} {
		if got := policy.RenderApprovalText(c.text, args); got != c.want {
			t.Errorf("RenderApprovalText(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	if got := policy.RenderApprovalText("{x}", json.RawMessage(`not json`)); got != "{x}" {
		t.Errorf("arguments that are not JSON: %q", got)
	}
}
