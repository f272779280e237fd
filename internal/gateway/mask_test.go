package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/policy"
)

// Credentials the leaky server answers with, built from parts so no
// scanner mistakes this file for a leak.
var (
	leakKey = "sk-" + "live-Hq3ZtW8mKp2XvN7bLr5cYd0s"
	leakGHP = "ghp_" + "Tz91kQm2pL0sVb7nTr4yWc9eHu3aJf6dGi5o"
)

// leakyResult is the CallToolResult the leaky server sends: secrets in a
// text block, in structuredContent and in _meta, next to a number and text
// that must pass as they are.
var leakyResult = `{"content":[{"type":"text","text":"key=` + leakKey + ` region eu-north-1"},` +
	`{"type":"text","text":"Authorization: Bearer ` + leakGHP + `"}],` +
	`"structuredContent":{"api_key":"` + leakKey + `","nested":[{"note":"clone https://` + leakGHP + `@github.com/a/b"}],` +
	`"id":1234567,"region":"eu-north-1"},"_meta":{"trace":"Bearer ` + leakGHP + `"}}`

// serveLeaky is an MCP server (raw JSON-RPC) whose one tool, dump, answers
// with leakyResult.
func serveLeaky(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"leaky","version":"0"}}}`, req.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"dump","description":"Dumps.","inputSchema":{"type":"object"}}]}}`, req.ID)
		case "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, leakyResult)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// wire is everything of a result the provider got, as JSON.
func wire(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The face masks a result's secrets before the provider reads them (every
// string: text blocks, structuredContent, _meta), keeps everything else as
// it came, hands the gate the result as the server
// sent it with how many it masked, and masks a stored result it answers a
// retry with too. A server with mask_results off gets its result through
// untouched, and the gate learns it was not checked (Masked nil).
func TestFace_MasksSecretsInResults(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	url := serveLeaky(t)
	h.addServer("leaky", url, nil)
	h.servers.m["open"] = policy.Server{Label: "open", URL: url, Enabled: true, UnmaskedResults: true}
	h.gate.allow(policy.DiscoveredTool{Name: "dump", Description: "Dumps.", InputSchema: json.RawMessage(`{"type":"object"}`)})

	cs := h.connect("leaky", h.token("leaky"))
	call := func(cs *mcp.ClientSession) string {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "dump", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("dump refused: %s", text(res))
		}
		return wire(t, res)
	}
	for i, got := range []string{call(cs), call(cs)} { // the second is answered with the stored result
		if strings.Contains(got, leakKey) || strings.Contains(got, leakGHP) {
			t.Errorf("call %d: the provider got a secret: %s", i+1, got)
		}
		for _, want := range []string{`"text":"key=[redacted] region eu-north-1"`, `"text":"Authorization: Bearer [redacted]"`,
			`"api_key":"[redacted]"`, `"note":"clone https://[redacted]@github.com/a/b"`, `"id":1234567`,
			`"trace":"Bearer [redacted]"`} {
			if !strings.Contains(got, want) {
				t.Errorf("call %d: the provider got %s\nwithout %s", i+1, got, want)
			}
		}
	}
	fin := h.gate.finished()
	if len(fin) != 1 {
		t.Fatalf("Finish got %d results, want 1 (the retry is answered from the stored one)", len(fin))
	}
	for _, r := range fin {
		if !strings.Contains(string(r.JSON), leakKey) || !strings.Contains(string(r.JSON), leakGHP) {
			t.Errorf("Finish got %s; want the result as the server sent it", r.JSON)
		}
		if r.Masked == nil || *r.Masked != 5 {
			t.Errorf("Finish got masked %v; want 5", fmtPtr(r.Masked))
		}
	}

	got := call(h.connect("open", h.token("open")))
	if !strings.Contains(got, leakKey) || !strings.Contains(got, leakGHP) || strings.Contains(got, "[redacted]") {
		t.Errorf("with mask_results off the provider got %s; want the result untouched", got)
	}
	for id, r := range h.gate.finished() {
		if _, seen := fin[id]; !seen && r.Masked != nil {
			t.Errorf("with mask_results off Finish got masked %d; want nil (not checked)", *r.Masked)
		}
	}
}

func fmtPtr(n *int) string {
	if n == nil {
		return "nil"
	}
	return fmt.Sprint(*n)
}
