package emulator_test

import (
	"slices"
	"testing"

	"github.com/toolgate/toolgate/internal/emulator"
)

// TestClient_ArgumentsAreTheFirstObjectAfterTheToolName: "Use the echo tool
// with {...}" calls echo with that object, as "echo {...}" does, and the
// second tool named gets the object written after it.
func TestClient_ArgumentsAreTheFirstObjectAfterTheToolName(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	text := `Use the echo tool with {"text": "hi {there} \"you\""}, and then add with {"a": 2, "b": 40} please.`
	resp := clNew(t, e, clParams(text, clTool("test", m.URL, "never")))
	o := clItems(t, resp)
	if !slices.Equal(o.Kinds, []string{"mcp_list_tools", "mcp_call", "mcp_call", "message"}) {
		t.Fatalf("output = %v", o.Kinds)
	}
	want := []struct{ name, args, output string }{
		{"echo", `{"text":"hi {there} \"you\""}`, `echo: hi {there} "you"`},
		{"add", `{"a":2,"b":40}`, "42"},
	}
	for i, w := range want {
		c := o.Calls[i]
		if c.Name != w.name || c.Arguments != w.args || c.Output != w.output {
			t.Errorf("call %d = %s %s -> %q, want %s %s -> %q", i, c.Name, c.Arguments, c.Output, w.name, w.args, w.output)
		}
	}
}
