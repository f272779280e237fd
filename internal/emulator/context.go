package emulator

import (
	"fmt"
	"strings"
)

// resolved is a request set in its conversation: the items before it, its
// own input with references resolved, and the approvals it answers.
type resolved struct {
	history  []ctxItem               // previous responses' items, oldest first
	input    []ctxItem               // this request's input, item_reference resolved
	listed   map[string][]ListedTool // server label -> tools listed earlier in the context
	answers  []ctxItem               // this request's mcp_approval_response items, in order
	requests map[string]ctxItem      // every approval request in the context by id
}

// resolve checks a request against its context the way the real API does:
// previous_response_id must exist, item ids must not repeat, every approval
// response must answer a known open request, and no request may stay
// unanswered.
func (s *Server) resolve(r *request) (*resolved, *apiError) {
	res := &resolved{listed: map[string][]ListedTool{}, requests: map[string]ctxItem{}}
	if ae := s.resolveInput(r, res); ae != nil {
		return nil, ae
	}

	// Answers in the history count as given; this request's answers are
	// checked one by one below.
	answered := res.index()
	if ae := s.checkAnswers(res, answered); ae != nil {
		return nil, ae
	}
	if ae := res.checkOpen(answered); ae != nil {
		return nil, ae
	}
	if ae := res.checkApproved(r.Tools); ae != nil {
		return nil, ae
	}
	return res, nil
}

// resolveInput reads the history of previous_response_id and the request's
// input into res, resolving item references and refusing repeated ids.
func (s *Server) resolveInput(r *request, res *resolved) *apiError {
	if r.PreviousResponseID != "" {
		h, ok := s.store.chain(r.PreviousResponseID)
		if !ok {
			return invalid("previous_response_id", "previous_response_not_found", "Previous response with id '%s' not found.", r.PreviousResponseID)
		}
		res.history = h
	}
	seen := map[string]bool{}
	for _, it := range res.history {
		if it.ID != "" {
			seen[it.ID] = true
		}
	}
	for _, it := range r.Input {
		if it.Type == "item_reference" {
			ref, ok := s.store.item(it.ID)
			if !ok {
				return invalid(it.Param, "", "Item with id '%s' not found.", it.ID)
			}
			ref.Param = it.Param
			it = ref
		}
		if it.ID != "" {
			if seen[it.ID] {
				return invalid("input", "", "Duplicate item found with id %s. Remove duplicate items from your input and try again.", it.ID)
			}
			seen[it.ID] = true
		}
		res.input = append(res.input, it)
	}
	return nil
}

// index fills res's tool lists and approval requests from the whole
// context and returns the requests the history answered.
func (res *resolved) index() map[string]bool {
	answered := map[string]bool{}
	for i, it := range append(append([]ctxItem{}, res.history...), res.input...) {
		switch it.Type {
		case "mcp_list_tools":
			res.listed[it.ServerLabel] = it.Tools
		case "mcp_approval_request":
			res.requests[it.ID] = it
		case "mcp_approval_response":
			if i < len(res.history) {
				answered[it.ApprovalRequestID] = true
			}
		}
	}
	return answered
}

// checkAnswers checks each approval response of the input answers a known
// request once, marks it answered, and keeps those not yet acted on as
// res.answers.
func (s *Server) checkAnswers(res *resolved, answered map[string]bool) *apiError {
	for i, it := range res.input {
		if it.Type != "mcp_approval_response" {
			continue
		}
		id := it.ApprovalRequestID
		if _, ok := res.requests[id]; !ok {
			return invalid(it.Param+".approval_request_id", "", "No MCP approval request found with id '%s'. An mcp_approval_response must answer an mcp_approval_request of the previous response.", id)
		}
		if answered[id] {
			return invalid(it.Param+".approval_request_id", "", "The MCP approval request '%s' already has an approval. Each approval request can be answered once.", id)
		}
		answered[id] = true
		if s.consumed(res, i) {
			continue
		}
		res.answers = append(res.answers, it)
	}
	return nil
}

// checkOpen refuses a context that leaves an approval request unanswered.
func (res *resolved) checkOpen(answered map[string]bool) *apiError {
	var open []string
	for _, it := range append(append([]ctxItem{}, res.history...), res.input...) {
		if it.Type == "mcp_approval_request" && !answered[it.ID] {
			open = append(open, it.ID)
		}
	}
	if len(open) > 0 {
		return invalid("input", "", "The following MCP approval requests do not have an approval: %s. Send an mcp_approval_response for each of them.", strings.Join(open, ", "))
	}
	return nil
}

// checkApproved refuses an approval whose MCP server is not in tools.
func (res *resolved) checkApproved(tools []mcpTool) *apiError {
	for _, a := range res.answers {
		if !a.Approve {
			continue
		}
		req := res.requests[a.ApprovalRequestID]
		if findTool(tools, req.ServerLabel) == nil {
			return invalid("tools", "", "The approved MCP approval request '%s' is for the MCP server '%s', which is not in 'tools'. Send the same MCP tools with the approval response.", req.ID, req.ServerLabel)
		}
	}
	return nil
}

// consumed says whether the approval response res.input[i] was acted on
// already, so that a client re-sending the whole conversation (as
// @ai-sdk/openai does: its turn 4 re-sends the turn-1 denial) does not run
// an approved tool again or report a denial again
// (vercel-ai_openai-mcp-tool-approval.4 has only the new call). It was when
//   - an mcp_call of that approval request is in the context (the tool ran);
//   - the model answered after it: a model-made item (an assistant
//     message, reasoning, a tool list, call or approval request) follows it
//     in the input. An approval request that the same response made as the
//     answered one is not an answer after it: @ai-sdk/openai sends each
//     request with its answer (mcpr1, answer, mcpr2, answer), and every
//     answer of such a set is applied, as when they come grouped (mcpr1,
//     mcpr2, answer, answer);
//   - its approval request came in the input, not from previous_response_id,
//     and a stored response already took an answer to it as input.
//
// An answer in the history of previous_response_id plus the same answer in
// the input stays the 400 "already has an approval".
func (s *Server) consumed(res *resolved, i int) bool {
	id := res.input[i].ApprovalRequestID
	for _, it := range append(append([]ctxItem{}, res.history...), res.input...) {
		if it.Type == "mcp_call" && it.ApprovalRequestID == id {
			return true
		}
	}
	for _, it := range res.input[i+1:] {
		switch {
		case it.Type == "message" && it.Role == "assistant",
			it.Type == "reasoning", it.Type == "mcp_list_tools", it.Type == "mcp_call":
			return true
		case it.Type == "mcp_approval_request" && !s.sameResponse(id, it.ID):
			return true
		}
	}
	inHistory := false
	for _, it := range res.history {
		if it.Type == "mcp_approval_request" && it.ID == id {
			inHistory = true
		}
	}
	if !inHistory {
		if _, ok := s.store.answered(id); ok {
			return true
		}
	}
	return false
}

// sameResponse says whether the approval requests a and b were made by the
// same response. When the store does not know where either came from (a
// response made with store off, or evicted), they count as the same: an
// answer is then applied rather than dropped. An approved tool still does
// not run twice, as its mcp_call in the context marks the answer consumed.
func (s *Server) sameResponse(a, b string) bool {
	ra, okA := s.store.made(a)
	rb, okB := s.store.made(b)
	if !okA || !okB {
		return true
	}
	return ra == rb
}

func findTool(tools []mcpTool, label string) *mcpTool {
	for i := range tools {
		if tools[i].Label == label {
			return &tools[i]
		}
	}
	return nil
}

// userText is the text of the last user message of this request's input,
// unless an mcp_approval_response follows it: a client that re-sends the
// conversation instead of using previous_response_id (as @ai-sdk/openai
// does) sends the user message, the approval request and the answer, and
// the model then goes on from the answer rather than reading the message
// again (vercel-ai_openai-mcp-tool-approval.2 and .4).
func (res *resolved) userText() (string, bool) {
	for i := len(res.input) - 1; i >= 0; i-- {
		switch it := res.input[i]; {
		case it.Type == "mcp_approval_response":
			return "", false
		case it.Type == "message" && it.Role == "user":
			return it.Text, true
		}
	}
	return "", false
}

func (it ctxItem) String() string { return fmt.Sprintf("%s %s", it.Type, it.ID) }
