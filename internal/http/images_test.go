package http_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An image a tool returns reaches the transcript: the call's output is the
// MCP content list with the image's base64 data and type, which the web app
// shows (frontend/src/chat/toolOutput.ts), and the receipt's output digest
// covers it. A real MCP server over streamable HTTP, the emulator, Postgres.
func TestImages_ToolImageReachesTheTranscript(t *testing.T) {
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	srv := mcp.NewServer(&mcp.Implementation{Name: "charts", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast_chart", Description: "Draw the forecast as a chart.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Berlin, next 3 days"}, &mcp.ImageContent{Data: png, MIMEType: "image/png"}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(ts.Close)

	e := newAPI(t)
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "charts", "url": ts.URL}, nil)
	e.setPolicy("charts", "forecast_chart", "never")
	s := e.send("", `forecast_chart {}`).ok(t)
	calls := callsOf(t, e.transcript(s.conv(t)).Items)
	if len(calls) != 1 || calls[0].Output == nil {
		t.Fatalf("calls %+v, want forecast_chart's with output", calls)
	}
	var blocks []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     []byte `json:"data"`
		MIMEType string `json:"mimeType"`
	}
	if err := json.Unmarshal([]byte(*calls[0].Output), &blocks); err != nil {
		t.Fatalf("output %q: %v", *calls[0].Output, err)
	}
	if len(blocks) != 2 || blocks[0].Text != "Berlin, next 3 days" || blocks[1].Type != "image" || blocks[1].MIMEType != "image/png" || !bytes.Equal(blocks[1].Data, png) {
		t.Errorf("output = %s", *calls[0].Output)
	}
	if _, rs := e.receipts(); len(rs) != 1 || rs[0].OutputSHA256 == nil || *rs[0].OutputSHA256 != sha(*calls[0].Output) {
		t.Errorf("receipts %+v", rs)
	}
}
