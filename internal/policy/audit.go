package policy

import (
	"encoding/json"
	"time"
)

// Audit actions.
const (
	ActionServerCreate  = "server.create"
	ActionServerUpdate  = "server.update"
	ActionServerDelete  = "server.delete"
	ActionToolsRefresh  = "server.tools_changed"
	ActionPolicySet     = "policy.set"
	ActionPolicyDelete  = "policy.delete"
	ActionSettingsWrite = "settings.update"
	ActionDecision      = "approval.decide" // a person's decision on an approval request
	// ActionToolCall is a receipt: a tool call the provider reported, asked
	// or not. Its After is the receipt (conversation.Receipt).
	ActionToolCall = "tool.call"
)

// AuditEntry records one change: who made it, when, and the state before and
// after (secrets masked). Before is null for a creation, After for a deletion.
type AuditEntry struct {
	ID          int64           `json:"id"`
	At          time.Time       `json:"at"`
	Actor       string          `json:"actor"`    // the user's email (auth.System: "toolgate")
	ActorID     string          `json:"actor_id"` // the user's id
	Action      string          `json:"action"`
	ServerLabel *string         `json:"server_label"`
	ToolName    *string         `json:"tool_name"`
	Before      json.RawMessage `json:"before"`
	After       json.RawMessage `json:"after"`
	// CallID and ConversationID are set on receipts only: the call id keeps
	// one receipt per call; both are in After too.
	CallID         string `json:"-"`
	ConversationID string `json:"-"`
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// NextCursor, when set, fetches the next (older) page.
	NextCursor *string `json:"next_cursor"`
}

// AuditQuery selects a page of the audit log.
type AuditQuery struct {
	Limit       int
	BeforeID    int64  // 0: from the newest
	ServerLabel string // "": every server
	// Actions keeps entries with one of these actions; none: every action.
	Actions []string
	// ActorID, when set, keeps only entries that user made and the
	// approval.decide entries and receipts about that user's conversations,
	// whoever made them (a member's view).
	ActorID string
}

// MarshalJSON adds the deprecated server_id alias of server_label (see Tool).
func (e AuditEntry) MarshalJSON() ([]byte, error) {
	type plain AuditEntry
	return json.Marshal(struct {
		plain
		ServerID *string `json:"server_id"`
	}{plain(e), e.ServerLabel})
}
