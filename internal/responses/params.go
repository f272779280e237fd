package responses

import (
	"strconv"

	"github.com/toolgate/toolgate/internal/conversation"
)

// appendParams appends the request without its tools, as one JSON object
// with the members and values openai-go writes for c.params(req) (strings
// escaped as encoding/json escapes them), without the SDK's reflection: the
// parameters are built at every turn's start, and the SDK's encoder was an
// eighth of a turn's CPU. A request the fast path does not cover (one that
// replays a transcript, or has no input) is left to the SDK: false.
// TestParams_SameAsTheSDK holds the two together.
func (c *Client) appendParams(b []byte, req conversation.UpstreamRequest) ([]byte, bool) {
	if len(req.History) > 0 || (len(req.Answers) == 0 && req.UserText == "") || c.model == "" {
		return b, false
	}
	b = append(b, '{')
	if req.PreviousResponseID != "" {
		b = append(b, `"previous_response_id":`...)
		b = append(appendString(b, req.PreviousResponseID), ',')
	}
	b = append(b, `"store":true,`...)
	if req.TurnID != "" || req.ConversationID != "" {
		b = append(b, `"metadata":{"`+MetadataConversation+`":`...)
		b = appendString(b, req.ConversationID)
		b = append(b, `,"`+MetadataTurn+`":`...)
		b = append(appendString(b, req.TurnID), "},"...)
	}
	b = append(b, `"input":[`...)
	for i, a := range req.Answers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"approval_request_id":`...)
		b = appendString(b, a.ApprovalRequestID)
		b = strconv.AppendBool(append(b, `,"approve":`...), a.Approve)
		if a.Reason != "" {
			b = appendString(append(b, `,"reason":`...), a.Reason)
		}
		b = append(b, `,"type":"mcp_approval_response"}`...)
	}
	if req.UserText != "" {
		if len(req.Answers) > 0 {
			b = append(b, ',')
		}
		b = appendString(append(b, `{"content":`...), req.UserText)
		b = append(b, `,"role":"user","type":"message"}`...)
	}
	b = appendString(append(b, `],"model":`...), c.model)
	return append(b, '}'), true
}
