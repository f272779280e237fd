package emulator_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/emulator"
)

// tinyPNG is a 1×1 PNG.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// A tool whose result holds an image: mcp_call.output is the JSON of the
// whole content list as MCP sent it (text and image blocks, the image's
// base64 data and MIME type), so a client can show the image; a text-only
// result stays plain text.
func TestCall_ImageContentIsRelayedAsTheContentList(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "chart-mcp", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "chart", Description: "Draw a chart.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "Your chart:"},
				&mcp.ImageContent{Data: tinyPNG, MIMEType: "image/png"},
			}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	e := startEmulator(t, emulator.Config{})

	resp := clNew(t, e, clParams(`chart {}`, clTool("charts", ts.URL, "never")))
	var call *responses.ResponseOutputItemMcpCall
	for _, it := range resp.Output {
		if it.Type == "mcp_call" {
			c := it.AsMcpCall()
			call = &c
		}
	}
	if call == nil {
		t.Fatalf("no mcp_call in %s", resp.RawJSON())
	}
	var blocks []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     []byte `json:"data"`
		MIMEType string `json:"mimeType"`
	}
	if err := json.Unmarshal([]byte(call.Output), &blocks); err != nil {
		t.Fatalf("output %q is not a JSON content list: %v", call.Output, err)
	}
	if len(blocks) != 2 || blocks[0].Type != "text" || blocks[0].Text != "Your chart:" ||
		blocks[1].Type != "image" || blocks[1].MIMEType != "image/png" || !bytes.Equal(blocks[1].Data, tinyPNG) {
		t.Errorf("output = %s", call.Output)
	}
	// The model quotes the text and names the image, not its base64.
	if o := clItems(t, resp); len(o.Messages) != 1 || !strings.Contains(clMessageText(t, o.Messages[0]), "Your chart:\n[image/png image, 70 bytes]") {
		t.Errorf("the answer: %s", resp.OutputText())
	}
}
