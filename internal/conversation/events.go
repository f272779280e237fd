package conversation

import (
	"encoding/json"
	"time"
)

// Sink receives a turn's events for the browser, in order. It must not block
// the turn for long, and after the browser has gone it discards: the turn
// goes on and stores everything regardless.
type Sink interface {
	Send(event string, data any)
}

// The SSE event names; docs/sse-events.md is the contract.
const (
	EventNameConversation = "conversation"
	EventNameTextDelta    = "text.delta"
	EventNameItem         = "item.done"
	EventNameToolStarted  = "tool.started"
	EventNameApproval     = "approval.required"
	EventNameDecision     = "decision.recorded"
	EventNameNotice       = "notice"    // Toolgate tells the person something about the turn; it goes on
	EventNameCompleted    = "completed" // terminal
	EventNameFailed       = "failed"    // terminal
	EventNameError        = "error"     // terminal
)

// ConversationEvent opens every stream.
type ConversationEvent struct {
	ConversationID string `json:"conversation_id"`
	TurnID         string `json:"turn_id"`
	Kind           string `json:"kind"` // "message" or "decisions"
	Offline        bool   `json:"offline"`
	Model          string `json:"model"`
}

// TextDeltaEvent is a piece of the model's answer.
type TextDeltaEvent struct {
	ItemID     string `json:"item_id"`
	ResponseID string `json:"response_id"`
	Delta      string `json:"delta"`
}

// ItemEvent carries one finished transcript item.
type ItemEvent struct {
	Item Item `json:"item"`
}

// ToolStartedEvent says the provider began a tool call: sent for every
// call, asked or not, before the call's item.done. Arguments are left out:
// they arrive later and may hold secrets.
type ToolStartedEvent struct {
	ItemID        string `json:"item_id"` // the mcp_call item's id; its item.done carries the same
	ResponseID    string `json:"response_id"`
	ServerLabel   string `json:"server_label"`
	UpstreamLabel string `json:"upstream_label"`
	ToolName      string `json:"tool_name"`
	// ApprovalRequestID is the request the call answers; nil when it runs
	// without asking.
	ApprovalRequestID *string   `json:"approval_request_id"`
	StartedAt         time.Time `json:"started_at"`
}

// DecisionEvent says a decision was recorded.
type DecisionEvent struct {
	ApprovalRequestID string  `json:"approval_request_id"`
	ServerLabel       string  `json:"server_label"`
	ToolName          string  `json:"tool_name"`
	State             string  `json:"state"`
	Reason            *string `json:"reason"`
	Scope             *string `json:"scope"`
	Remember          bool    `json:"remember"`
	// Correction is the arguments a denial asked the model to use instead,
	// redacted as the card shows them; null without one.
	Correction    json.RawMessage `json:"correction"`
	PolicyChanged *PolicyChange   `json:"policy_changed"`
	// Stopped: a person's stop denied it (see Decision.Stop).
	Stopped   bool      `json:"stopped"`
	DecidedAt time.Time `json:"decided_at"`
	// DecidedBy and DecidedByID name who decided (null when Toolgate
	// closed the request itself), so every tab following the conversation
	// can say so.
	DecidedBy   *string `json:"decided_by"`
	DecidedByID *string `json:"decided_by_id"`
	// PendingApprovalIDs are the requests of the same response still
	// waiting for a decision; nothing goes upstream until it is empty.
	PendingApprovalIDs []string `json:"pending_approval_ids"`
	// Rules: what the argument rules made of the request; By names who
	// answered it without a card (a rule, or the policy when no rule held).
	Rules *RuleCheck `json:"rules"`
}

// PolicyChange is the stored policy a remembered decision set.
type PolicyChange struct {
	ServerLabel string `json:"server_label"`
	ToolName    string `json:"tool_name"`
	Policy      string `json:"policy"`
	// Layer is where it was stored: always "user", the decider's personal
	// policy (a remembered decision never changes the workspace's).
	Layer string `json:"layer"`
}

// LayerUser is the personal policy layer.
const LayerUser = "user"

// CompletedEvent ends a turn that completed.
type CompletedEvent struct {
	ResponseID         *string  `json:"response_id"`
	PendingApprovals   int      `json:"pending_approvals"`
	PendingApprovalIDs []string `json:"pending_approval_ids"`
	// Sent says whether anything went upstream in this turn: false when
	// decisions were recorded but others are still pending.
	Sent bool `json:"sent"`
}

// FailedEvent ends a turn whose response failed or stopped incomplete upstream.
type FailedEvent struct {
	ResponseID string `json:"response_id"`
	Code       string `json:"code"`
	Message    string `json:"message"`
}

// ErrorEvent ends a turn that could not complete.
type ErrorEvent = TurnError

// NoticeEvent carries a notice item as it is stored.
type NoticeEvent struct {
	Item Item `json:"item"`
}

// DeletedEvent ends the event streams of a deleted conversation.
type DeletedEvent struct {
	ConversationID string `json:"conversation_id"`
}
