package responses

import (
	"fmt"

	"github.com/toolgate/toolgate/internal/conversation"
)

// MaxTools is the most tools entries Toolgate sends in one request. The
// Responses API's description (openapi.json, CreateResponse) documents no
// bound on tools, on an mcp entry's allowed_tools or on the request's
// size; the bound the same description documents for tools elsewhere is
// 128 (an assistant's tools, Chat Completions' functions), so Toolgate
// keeps to it rather than send a request the provider may refuse after a
// long upload. Every enabled server that offers tools is one entry (two in
// the split layout).
const MaxTools = 128

// checkSize refuses a request the provider would refuse for its size,
// before it is sent, saying what to do.
func (c *Client) checkSize(entries int) error {
	if n := entries; n > c.maxTools {
		return &conversation.UpstreamError{Code: conversation.CodeRequestTooLarge, Message: fmt.Sprintf(
			"the request would offer the model %d MCP tool entries (one per server that offers tools), more than the %d "+
				"the model's provider accepts in one request, so it was not sent; an admin can disable servers in the "+
				"settings, or choose fewer servers for this conversation (its Tools)", n, c.maxTools)}
	}
	return nil
}
