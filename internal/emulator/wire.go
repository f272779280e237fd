package emulator

import "encoding/json"

// The structs below are the emulator's own rendering of the API's JSON, with
// fields in the order the recordings show them, so that a byte-level diff
// against a recording only shows ids and text.

// Response is the response object of POST /v1/responses.
type Response struct {
	ID                   string            `json:"id"`
	Object               string            `json:"object"`
	CreatedAt            int64             `json:"created_at"`
	Status               string            `json:"status"`
	Background           bool              `json:"background"`
	Billing              *Billing          `json:"billing,omitempty"`
	CompletedAt          *int64            `json:"completed_at"`
	Error                *ResponseError    `json:"error"`
	IncompleteDetails    *IncompleteDetail `json:"incomplete_details"`
	Instructions         *string           `json:"instructions"`
	MaxOutputTokens      *int64            `json:"max_output_tokens"`
	MaxToolCalls         *int64            `json:"max_tool_calls"`
	Model                string            `json:"model"`
	Output               []any             `json:"output"`
	ParallelToolCalls    bool              `json:"parallel_tool_calls"`
	PreviousResponseID   *string           `json:"previous_response_id"`
	PromptCacheKey       *string           `json:"prompt_cache_key"`
	PromptCacheRetention *string           `json:"prompt_cache_retention"`
	Reasoning            ReasoningConfig   `json:"reasoning"`
	SafetyIdentifier     *string           `json:"safety_identifier"`
	ServiceTier          string            `json:"service_tier"`
	Store                bool              `json:"store"`
	Temperature          float64           `json:"temperature"`
	Text                 TextConfig        `json:"text"`
	ToolChoice           string            `json:"tool_choice"`
	Tools                []EchoedTool      `json:"tools"`
	TopLogprobs          int               `json:"top_logprobs"`
	TopP                 float64           `json:"top_p"`
	Truncation           string            `json:"truncation"`
	Usage                *Usage            `json:"usage"`
	User                 *string           `json:"user"`
	Metadata             map[string]string `json:"metadata"`
}

// Billing says who pays. The recorded response bodies carry it; the
// response objects inside stream events do not.
type Billing struct {
	Payer string `json:"payer"`
}

// ResponseError is response.error of a failed response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetail says why a response is incomplete.
type IncompleteDetail struct {
	Reason string `json:"reason"`
}

// ReasoningConfig echoes the request's reasoning settings.
type ReasoningConfig struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// TextConfig echoes the text format.
type TextConfig struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
	Verbosity string `json:"verbosity"`
}

// Usage is token accounting; the emulator counts words.
type Usage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// EchoedTool is an mcp entry as the API echoes it: headers and authorization
// are never echoed (the API does not store them).
type EchoedTool struct {
	Type              string          `json:"type"`
	AllowedTools      json.RawMessage `json:"allowed_tools"`
	Headers           *struct{}       `json:"headers"`
	RequireApproval   json.RawMessage `json:"require_approval"`
	ServerDescription *string         `json:"server_description"`
	ServerLabel       string          `json:"server_label"`
	ServerURL         string          `json:"server_url"`
}

// ListToolsItem is an mcp_list_tools output item.
type ListToolsItem struct {
	ID          string       `json:"id"`
	Type        string       `json:"type"`
	ServerLabel string       `json:"server_label"`
	Tools       []ListedTool `json:"tools"`
	Error       *string      `json:"error,omitempty"`
}

// ListedTool is one tool of an mcp_list_tools item.
type ListedTool struct {
	Annotations *ToolAnnotations `json:"annotations"`
	Description *string          `json:"description"`
	InputSchema json.RawMessage  `json:"input_schema"`
	Name        string           `json:"name"`
}

// ToolAnnotations is what the API passes on of a tool's MCP annotations.
type ToolAnnotations struct {
	ReadOnly bool `json:"read_only"`
}

// ReasoningItem is an (empty-summary) reasoning output item.
type ReasoningItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Summary []any  `json:"summary"`
}

// ApprovalRequestItem is an mcp_approval_request output item; its ID is the
// approval request id.
type ApprovalRequestItem struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Arguments   string `json:"arguments"`
	Name        string `json:"name"`
	ServerLabel string `json:"server_label"`
}

// CallItem is an mcp_call output item.
type CallItem struct {
	ID                string  `json:"id"`
	Type              string  `json:"type"`
	Status            string  `json:"status"`
	ApprovalRequestID *string `json:"approval_request_id"`
	Arguments         string  `json:"arguments"`
	Error             any     `json:"error"`
	Name              string  `json:"name"`
	Output            *string `json:"output"`
	ServerLabel       string  `json:"server_label"`
}

// CallError is the object form of mcp_call.error. Which fields are set
// depends on Type: mcp_protocol_error and http_error carry Code and Message,
// mcp_tool_execution_error carries Content.
type CallError struct {
	Type    string         `json:"type"`
	Code    *int           `json:"code,omitempty"`
	Message string         `json:"message,omitempty"`
	Content []ContentBlock `json:"content,omitempty"`
}

// ContentBlock is an MCP text content block as the API relays it.
type ContentBlock struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations any    `json:"annotations"`
	Meta        any    `json:"meta"`
}

// MessageItem is an assistant message output item.
type MessageItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Content []OutputText `json:"content"`
	Role    string       `json:"role"`
}

// OutputText is an output_text content part.
type OutputText struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

func newOutputText(text string) OutputText {
	return OutputText{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: text}
}
