package emulator_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// TestClient_SendsTheArgumentsAsWritten: the server gets the call's
// arguments as the model wrote them, not decoded into float64s and encoded
// again (12345678901234567890 would arrive as 12345678901234567000, 1.50 as
// 1.5), so that a gateway matching a call to an approval by its arguments
// sees the same call.
func TestClient_SendsTheArgumentsAsWritten(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := mcp.NewServer(&mcp.Implementation{Name: "raw-args", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "store", Description: "Store a record.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			got = append(got, string(req.Params.Arguments))
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stored"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	e := startEmulator(t, emulator.Config{})

	const args = `{"id":12345678901234567890,"ratio":1.50,"z":{"b":1e2,"a":null}}`
	o := clItems(t, clNew(t, e, clParams("Use the store tool with "+args, clTool("raw", ts.URL, "never"))))
	if len(o.Calls) != 1 || o.Calls[0].Arguments != args || o.Calls[0].Output != "stored" {
		t.Fatalf("calls = %+v", o.Calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []string{args}) {
		t.Errorf("the server got arguments %q, want %q as the model wrote them", got, args)
	}
}
