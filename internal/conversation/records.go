package conversation

import (
	"encoding/json"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/gateway"
	"time"
)

// ViaGateway marks what passed Toolgate's MCP face (MCP_ROUTE=gateway).
const ViaGateway = "gateway"

// States of a call through the MCP face (gateway_calls.state).
const (
	CallRunning = "running" // admitted and forwarded; no result stored yet
	CallDone    = "done"    // the server answered (its result may say isError)
	CallFailed  = "failed"  // forwarded, no result came back (transport error, timeout, too large)
	CallRefused = "refused" // the gate refused it: never forwarded
	CallNotRun  = "not_run" // admitted, but provably never reached the server
)

// GatewayCall is one tools/call that reached the MCP face, as recorded: its
// receipt at the call. What it shows was redacted before it was stored.
type GatewayCall struct {
	ID             string `json:"id"`
	Via            string `json:"via"` // always "gateway"
	ConversationID string `json:"conversation_id"`
	TurnID         string `json:"turn_id"`
	ServerLabel    string `json:"server_label"`
	ToolName       string `json:"tool_name"`
	// Client names the MCP client of an agent's call (its clientInfo, as
	// it said); nil for a chat's call, which the provider made.
	Client *ClientInfo `json:"client,omitempty"`
	// StoredArguments are the canonical arguments, secrets hidden;
	// Arguments and Redacted are derived from them when shown.
	StoredArguments   string          `json:"-"`
	Arguments         json.RawMessage `json:"arguments"`
	Redacted          []string        `json:"redacted"`
	ArgumentsSHA256   string          `json:"arguments_sha256"` // of the real canonical arguments
	DefinitionDigest  string          `json:"definition_digest"`
	AllowedBy         *AllowedBy      `json:"allowed_by"`
	ApprovalRequestID *string         `json:"approval_request_id"`
	State             string          `json:"state"`
	// Result is the MCP CallToolResult the server sent, secrets hidden;
	// OutputSHA256 digests it as it came (secrets included).
	Result       json.RawMessage  `json:"result"`
	IsError      bool             `json:"is_error"`
	Failure      string           `json:"failure,omitempty"`
	OutputSHA256 *string          `json:"output_sha256"`
	Refusal      *gateway.Refusal `json:"refusal"`
	// Masked is how many secret-looking values the MCP face masked in
	// Result before the provider read it (gateway.Result.Masked); null when
	// it did not check (refused, or the server's mask_results is off).
	Masked *int `json:"masked"`
	// ItemID and ResponseID name the provider's mcp_call item that
	// reported the call, once it arrived.
	ItemID     string     `json:"item_id,omitempty"`
	ResponseID string     `json:"response_id,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`

	// OwnerID and OwnerEmail are the conversation's owner, when the read
	// joined them ("" when the conversation is gone).
	OwnerID    string `json:"-"`
	OwnerEmail string `json:"-"`
}

// CallKey names identical calls: one turn's calls of one tool with the
// same arguments digest are one call.
type CallKey struct {
	ConversationID, TurnID, ServerLabel, ToolName, ArgumentsSHA256 string
	// Agent: the key is an agent's call (TurnID is the call's own id), so
	// the conversation has no running turn to match.
	Agent bool
}

// GateScope is what every check at the face starts from: the conversation
// (whoever owns it: the capability token is the authority) with its owner,
// and the server's state.
type GateScope struct {
	Conversation  Conversation
	OwnerEmail    string
	ServerExists  bool
	ServerEnabled bool
}

// ScopeHour approves a tool for an hour in all of the decider's
// conversations (a timed grant).
const ScopeHour = "hour"

// GrantDuration is how long a timed grant ("for 1 hour") lasts.
const GrantDuration = time.Hour

// Grant states, as a grant is read.
const (
	GrantActive  = "active"
	GrantExpired = "expired"
	GrantRevoked = "revoked"
)

// Grant lets a tool run without asking: in one conversation until it is
// deleted (ConversationID set, ExpiresAt nil), or in all of its owner's
// conversations until ExpiresAt (ConversationID nil). A revoked or expired
// grant allows nothing: the tool asks again.
type Grant struct {
	ID                string     `json:"id"`
	OwnerID           string     `json:"-"`
	ConversationID    *string    `json:"conversation_id"`
	ConversationTitle *string    `json:"conversation_title"`
	ServerLabel       string     `json:"server_label"`
	ToolName          string     `json:"tool_name"`
	ApprovalRequestID string     `json:"approval_request_id"`
	CreatedAt         time.Time  `json:"created_at"`
	ExpiresAt         *time.Time `json:"expires_at"`
	RevokedAt         *time.Time `json:"revoked_at"`
	State             string     `json:"state"`
}

// WithState sets g's State as of now.
func (g Grant) WithState(now time.Time) Grant {
	switch {
	case g.RevokedAt != nil:
		g.State = GrantRevoked
	case g.ExpiresAt != nil && !g.ExpiresAt.After(now):
		g.State = GrantExpired
	default:
		g.State = GrantActive
	}
	return g
}

// GrantFilter says which of an owner's grants Repo.Grants.List returns.
type GrantFilter struct {
	// ConversationID: only the grants that apply in this conversation (its
	// own and the owner's timed ones); "": all of them.
	ConversationID string
	// Now is the time expiry is judged at; Ended also returns the expired
	// and revoked ones.
	Now   time.Time
	Ended bool
}

// ToolApprovalsQuery selects a tool's most recent approval requests.
type ToolApprovalsQuery struct {
	ServerLabel string
	ToolName    string
	// OwnerID keeps only that user's conversations, unless Everyone (an
	// admin's view of the workspace).
	OwnerID  string
	Everyone bool
	Limit    int
}

// OwnedApproval is an approval request with its conversation's owner, the
// user a rule's user.* would have seen.
type OwnedApproval struct {
	Approval
	Owner auth.User // ID, Email and Role only; ID "" for a conversation without one
}

// HistoryMessage is one input message of a request that sends the
// conversation's own transcript instead of previous_response_id.
type HistoryMessage struct {
	Role string
	Text string
}

// The roles of HistoryMessage.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleDeveloper carries Toolgate's records of tool calls and approval
	// requests: what happened, for the model to read, not words of the
	// person or of the model.
	RoleDeveloper = "developer"
)
