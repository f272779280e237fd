package responses_test

// The output items of the recorded non-streamed responses (and the examples
// in OpenAI's guide) are replayed as output_item.done events through
// Client.Stream: they hold the shapes no recorded stream has, such as an
// mcp_call whose error is an object.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/responses"
)

// sections splits a fixture at its "===== title" lines.
func sections(t *testing.T, name string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	var title string
	for line := range strings.Lines(string(readFixture(t, name))) {
		if strings.HasPrefix(line, "=====") {
			title = strings.TrimSpace(strings.TrimPrefix(line, "====="))
			continue
		}
		if title != "" {
			out[title] = append(out[title], line...)
		}
	}
	return out
}

// recordedItems are output items by source, each a raw JSON object.
func recordedItems(t *testing.T) map[string][]json.RawMessage {
	t.Helper()
	out := map[string][]json.RawMessage{}
	outputOf := func(src string, body []byte) {
		var r struct {
			Output []json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(r.Output) == 0 {
			t.Fatalf("%s: no output items", src)
		}
		out[src] = r.Output
	}
	for _, f := range []string{
		"vercel-ai_openai-issue-19007-hosted-mcp.json",
		"vercel-ai_openai-mcp-tool-approval.1.json", "vercel-ai_openai-mcp-tool-approval.2.json",
		"vercel-ai_openai-mcp-tool-approval.3.json", "vercel-ai_openai-mcp-tool-approval.4.json",
		"vercel-ai_openai-mcp-tool.1.json",
	} {
		outputOf(f, readFixture(t, f))
	}
	for _, f := range []string{"dotnet-extensions_mcp-approval-required_nonstreaming_two-turns.txt", "dotnet-extensions_mcp-call-error_nonstreaming.txt"} {
		for title, body := range sections(t, f) {
			if strings.Contains(title, "RESPONSE") {
				outputOf(f+" "+title, body)
			}
		}
	}
	for title, body := range sections(t, "openai-docs_tools-connectors-mcp_item-examples.txt") {
		if strings.HasSuffix(title, " item") {
			out["openai-docs "+title] = []json.RawMessage{json.RawMessage(body)}
		}
	}
	// openai-node-issue-1568_mcp_call-with-error-object.txt is a JavaScript
	// object literal, not JSON; this is the same item written as JSON.
	out["openai-node-issue-1568"] = []json.RawMessage{json.RawMessage(`{
		"id": "mcp_68653a694bec8198a308e96e37ba509b09483f21bc1f2ea7", "type": "mcp_call",
		"approval_request_id": null, "arguments": "{\"query\":\"latest tech gadgets\"}",
		"error": {"type": "mcp_protocol_error", "code": 32600, "message": "Session terminated"},
		"name": "search", "output": null, "server_label": "my-mcp-server"}`)}
	return out
}

// itemsStream is a stream holding items as output_item.done events.
func itemsStream(t *testing.T, items []json.RawMessage) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString(frame(t, `{"type":"response.created","sequence_number":0,"response":{"id":"resp_items","object":"response","status":"in_progress","output":[]}}`))
	for i, it := range items {
		var compact bytes.Buffer
		if err := json.Compact(&compact, it); err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		b.WriteString(frame(t, fmt.Sprintf(`{"type":"response.output_item.done","sequence_number":%d,"output_index":%d,"item":%s}`, i+1, i, compact.String())))
	}
	b.WriteString(frame(t, fmt.Sprintf(`{"type":"response.completed","sequence_number":%d,"response":{"id":"resp_items","object":"response","status":"completed","output":[]}}`, len(items)+1)))
	return []byte(b.String())
}

func TestRecordedItemsConvert(t *testing.T) {
	prefixes := map[string]string{"message": "msg_", "mcp_list_tools": "mcpl_", "mcp_call": "mcp_", "mcp_approval_request": "mcpr_"}
	all := recordedItems(t)
	// The recordings must show the error objects: an mcp_call's error is
	// never a string.
	errorTypes := map[string]bool{}
	for _, items := range all {
		for _, raw := range items {
			var v struct {
				Error *struct {
					Type string `json:"type"`
				} `json:"error"`
			}
			_ = json.Unmarshal(raw, &v)
			if v.Error != nil {
				errorTypes[v.Error.Type] = true
			}
		}
	}
	if !errorTypes["mcp_tool_execution_error"] || !errorTypes["mcp_protocol_error"] {
		t.Fatalf("recorded error objects: %v", errorTypes)
	}
	for src, items := range all {
		t.Run(src, func(t *testing.T) {
			t.Parallel()
			api := serveSSE(t, itemsStream(t, items))
			c := responses.New(responses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "gpt-5"})
			s := stream(t, c, conversation.UpstreamRequest{UserText: "hi"})
			s.mustComplete(t)

			got := s.Items()
			var want []map[string]any
			for _, raw := range items {
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				if _, kept := prefixes[m["type"].(string)]; kept {
					want = append(want, m)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d items converted (%s), want %d", len(got), s.describe(), len(want))
			}
			for i, w := range want {
				checkItem(t, got[i], w, prefixes)
			}
		})
	}
}

// checkItem compares a converted item with the recorded JSON it came from.
func checkItem(t *testing.T, g *conversation.UpstreamItem, w map[string]any, prefixes map[string]string) {
	t.Helper()
	str := func(k string) string { s, _ := w[k].(string); return s }
	if g.Type != str("type") || g.ID != str("id") || !strings.HasPrefix(g.ID, prefixes[g.Type]) {
		t.Errorf("item %s %s, want %s %s (prefix %s)", g.Type, g.ID, str("type"), str("id"), prefixes[g.Type])
	}
	if g.ServerLabel != str("server_label") || g.UpstreamLabel != str("server_label") {
		t.Errorf("%s: labels %q/%q, want %q", g.ID, g.ServerLabel, g.UpstreamLabel, str("server_label"))
	}
	switch g.Type {
	case "message":
		if g.Text == "" {
			t.Errorf("%s: no text", g.ID)
		}
	case "mcp_list_tools":
		tools, _ := w["tools"].([]any)
		if len(g.Tools) != len(tools) {
			t.Fatalf("%s: %d tools, want %d", g.ID, len(g.Tools), len(tools))
		}
		for i, tool := range tools {
			tm := tool.(map[string]any)
			if g.Tools[i].Name != tm["name"] || jsonDiff(t, g.Tools[i].InputSchema, mustJSON(t, tm["input_schema"])) != "" {
				t.Errorf("%s: tool %d = %s %s, want %v", g.ID, i, g.Tools[i].Name, g.Tools[i].InputSchema, tm)
			}
			if ann, _ := tm["annotations"].(map[string]any); ann == nil && g.Tools[i].Annotations.ReadOnlyHint != nil {
				t.Errorf("%s: tool %s without annotations has ReadOnlyHint", g.ID, g.Tools[i].Name)
			} else if ann != nil && (g.Tools[i].Annotations.ReadOnlyHint == nil || *g.Tools[i].Annotations.ReadOnlyHint != ann["read_only"]) {
				t.Errorf("%s: tool %s annotations %+v, want read_only %v", g.ID, g.Tools[i].Name, g.Tools[i].Annotations, ann["read_only"])
			}
		}
	case "mcp_call", "mcp_approval_request":
		if g.Name != str("name") || g.Arguments != str("arguments") || g.ApprovalID != str("approval_request_id") {
			t.Errorf("%s: name %q args %q approval %q, want %v", g.ID, g.Name, g.Arguments, g.ApprovalID, w)
		}
		if out, ok := w["output"].(string); ok != (g.Output != nil) || (ok && *g.Output != out) {
			t.Errorf("%s: Output %v, want %v", g.ID, g.Output, w["output"])
		}
		if w["error"] == nil {
			if g.CallError != nil {
				t.Errorf("%s: CallError %s, want none", g.ID, g.CallError)
			}
		} else if g.CallError == nil || jsonDiff(t, g.CallError, mustJSON(t, w["error"])) != "" {
			t.Errorf("%s: CallError %s, want %s", g.ID, g.CallError, mustJSON(t, w["error"]))
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
