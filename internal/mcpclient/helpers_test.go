package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveTools serves an MCP server offering tools, pageSize to a page (0 for
// the SDK's default), and returns its endpoint URL.
func serveTools(t *testing.T, pageSize int, tools ...*mcp.Tool) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "0"}, &mcp.ServerOptions{PageSize: pageSize})
	for _, tool := range tools {
		server.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fakeMCP serves a hand-written MCP endpoint whose tools/list answer is
// toolsList(cursor), to send what no SDK server would.
func fakeMCP(toolsList func(cursor string) any) func(t *testing.T) string {
	return serveHTTP(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.ID == nil { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch req.Method {
		case "initialize":
			resp["result"] = map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "fake", "version": "0"},
			}
		case "tools/list":
			resp["result"] = toolsList(req.Params.Cursor)
		default:
			resp["error"] = map[string]any{"code": -32601, "message": "method not found"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
}
