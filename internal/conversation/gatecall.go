package conversation

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
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

// GatewayRepo is the persistence of calls through the MCP face; Repo
// includes it.
type GatewayRepo interface {
	// GateScope reads the conversation id (any owner's) and the server
	// label's state; NotFound when the conversation is gone.
	GateScope(ctx context.Context, conversationID, label string) (GateScope, error)
	// BeginCall, in a transaction, serialises the identical calls of k
	// until it ends, locks the conversation against its turn ending
	// (FOR SHARE) and returns its running turn ("" when none, or gone) and
	// the identical call already admitted (refusals aside), if any.
	BeginCall(ctx context.Context, k CallKey) (activeTurn string, prior *GatewayCall, err error)
	// UsableApproval returns (locked) the oldest approved request of k's
	// conversation whose answer k's turn carried, for k's tool and
	// arguments digest, that no call has used; nil when there is none.
	UsableApproval(ctx context.Context, k CallKey) (*Approval, error)
	// InsertGatewayCall stores c; false when an identical call (or one
	// using the same approval) was stored first.
	InsertGatewayCall(ctx context.Context, c GatewayCall) (bool, error)
	// FinishGatewayCall stores how a running call ended; false when it is
	// not running (unknown, or finished already).
	FinishGatewayCall(ctx context.Context, c GatewayCall) (GatewayCall, bool, error)
	// GatewayCall returns one call; NotFound when there is none.
	GatewayCall(ctx context.Context, id string) (GatewayCall, error)
	// ApprovalCalls returns the calls that used the approvals ids, by
	// approval id.
	ApprovalCalls(ctx context.Context, ids []string) (map[string]GatewayCall, error)
	// ConversationCalls returns owner's conversation's calls, oldest first.
	ConversationCalls(ctx context.Context, owner, conversationID string) ([]GatewayCall, error)
	// LinkGatewayCall records that the provider's mcp_call item itemID (of
	// response) reported the call of k (turn "" matches any turn of the
	// conversation), and returns it; false when no call matches that no
	// other item reported.
	LinkGatewayCall(ctx context.Context, k CallKey, itemID, response string) (GatewayCall, bool, error)
}

// Gateway reports whether calls go through the MCP face (Options.Gateway).
func (s *Service) Gateway() bool { return s.gateway }

// shownCall fills the parts of a call shown to people.
func shownCall(c GatewayCall) GatewayCall {
	c.Via = ViaGateway
	c.Arguments, c.Redacted = Redact(c.StoredArguments)
	if c.Redacted == nil {
		c.Redacted = []string{}
	}
	return c
}
