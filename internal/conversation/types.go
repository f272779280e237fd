// Package conversation owns chat turns: conversations and their transcripts,
// approval requests and the person's decisions on them, and the turn engine
// that sends a message or a set of decisions upstream and relays the answer.
// It speaks to the model through the Upstream interface (internal/responses
// implements it with openai-go) and to the browser through a Sink.
package conversation

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// Conversation is one chat.
type Conversation struct {
	ID             string    `json:"id"`
	OwnerID        string    `json:"-"` // the user who created it; only they see it
	Title          string    `json:"title"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	LastResponseID *string   `json:"last_response_id"`
	Streaming      bool      `json:"streaming"` // a turn is running now
	PendingCount   int       `json:"pending_approvals"`
	// LastEventID is the id of the conversation's last stream event: GET
	// /api/conversations/{id}/events with Last-Event-ID set to it streams
	// what happens next.
	LastEventID int64 `json:"last_event_id"`
	// Tools is the person's choice of the servers and tools the
	// conversation's requests offer (book/tools.go).
	Tools policy.Selection `json:"tools"`
	// PendingExpiresAt (in the list only) is when the last of its pending
	// approval requests runs out of time: from then on it needs no
	// decision, whether or not the expiry sweep has run. Absent when none
	// is pending or one of them never expires.
	PendingExpiresAt *time.Time `json:"pending_expires_at,omitempty"`
	// PendingTimes is what the list read to work it out.
	PendingTimes PendingTimes `json:"-"`

	// Kind is "chat", or "agent" for an MCP client's session at
	// Toolgate's MCP face (its held calls' requests live in it).
	Kind string `json:"kind"`
	// Client is the MCP clientInfo an agent's session began with
	// ({"name", "version", "title"}), as the client said it; nil for a chat.
	Client *ClientInfo `json:"client,omitempty"`

	ActiveTurn   string `json:"-"` // the running turn's id, "" when none
	LeaseOwner   string `json:"-"` // the replica running it
	LeaseExpired bool   `json:"-"` // its lease ran out: the replica died or lost the database
}

// PendingTimes are a conversation's pending approval requests' times as
// the list reads them: whether one never expires (its server's
// approval_ttl_seconds is 0), the latest requested_at of those that wait
// APPROVAL_TTL, and the latest expiry of those whose server sets a limit.
type PendingTimes struct {
	Never       bool
	DefaultLast *time.Time
	ServerLast  *time.Time
}

// Item types in a transcript. The upstream ones keep OpenAI's names.
const (
	ItemUserMessage     = "user_message"
	ItemMessage         = "message"
	ItemListTools       = "mcp_list_tools"
	ItemCall            = "mcp_call"
	ItemApprovalRequest = "mcp_approval_request"
	ItemError           = "error"
	// ItemNotice is something Toolgate tells the person about the turn that
	// is not an error: a server left out of the request, a conversation
	// continued from its own transcript. The turn goes on.
	ItemNotice = "notice"
)

// Item is one entry of a transcript. Which fields are set depends on Type.
type Item struct {
	Seq        int       `json:"seq"`
	Type       string    `json:"type"`
	ID         string    `json:"id,omitempty"` // upstream item id; Toolgate's own for user messages and errors
	ResponseID string    `json:"response_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`

	Text    string `json:"text,omitempty"`    // user_message, message
	Partial bool   `json:"partial,omitempty"` // message: cut short (the turn ended in an error); Text is what arrived

	// mcp_list_tools, mcp_call, mcp_approval_request
	ServerLabel   string `json:"server_label,omitempty"`
	UpstreamLabel string `json:"upstream_label,omitempty"` // differs from server_label in the split layout
	// mcp_list_tools
	Tools     []policy.DiscoveredTool `json:"tools,omitempty"`
	ListError json.RawMessage         `json:"list_error,omitempty"`
	// mcp_call, mcp_approval_request
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // redacted before it is stored (a JSON string when not JSON)
	Redacted  []string        `json:"redacted,omitempty"`  // argument paths whose values were hidden
	// mcp_call
	Output            *string         `json:"output,omitempty"`
	CallError         json.RawMessage `json:"error,omitempty"` // OpenAI's error object, as sent
	ApprovalRequestID string          `json:"approval_request_id,omitempty"`
	AllowedBy         *AllowedBy      `json:"allowed_by,omitempty"`
	// ArgumentsSHA256 is the hex SHA-256 of the real arguments, the text the
	// provider sent, for the call's receipt; never stored or shown.
	ArgumentsSHA256 string `json:"-"`
	// Via is "gateway" for a call that passed Toolgate's MCP face: the
	// fields below say what the face saw (GatewayCallID names its record).
	Via              string `json:"via,omitempty"`
	GatewayCallID    string `json:"gateway_call_id,omitempty"`
	DefinitionDigest string `json:"definition_digest,omitempty"`
	// Result is the call's result as the face stored it (the MCP
	// CallToolResult, secrets hidden); only with via "gateway".
	Result json.RawMessage `json:"result,omitempty"`
	// Refusal is why the face refused the call (it did not run).
	Refusal *gateway.Refusal `json:"refusal,omitempty"`
	// Call is the face's record of the call as it is when the transcript
	// is read (GET /api/conversations/{id}); never stored with the item.
	Call *GatewayCall `json:"call,omitempty"`
	// CanonicalSHA256 is the digest of the canonical arguments
	// (gateway.ArgumentsDigest): how the call is matched to the face's
	// record; never stored or shown.
	CanonicalSHA256 string `json:"-"`
	// Interrupted: the call began (tool.started) but the turn ended before
	// the provider reported its result, so it may or may not have run. Such
	// an item has neither Output nor CallError, and no Arguments.
	Interrupted bool `json:"interrupted,omitempty"`
	// mcp_approval_request: its current state is joined in when read.
	Approval *Approval `json:"approval,omitempty"`
	// error
	Error *TurnError `json:"turn_error,omitempty"`
	// notice
	Notice *Notice `json:"notice,omitempty"`
}

// Notice is what a notice item and a notice event say.
type Notice struct {
	// Code is machine-readable: server_skipped, server_dropped,
	// provider_state_lost, ...
	Code    string `json:"code"`
	Message string `json:"message"`
	// ServerLabel names the MCP server the notice is about, if any.
	ServerLabel string `json:"server_label,omitempty"`
}

// AllowedBy says why a call ran: a policy (never, with its source), the
// person's approval, a grant for this conversation, or a timed grant.
type AllowedBy struct {
	Kind   string        `json:"kind"` // "policy", "approval", "conversation", "grant", "rule", "hook"
	Policy policy.Policy `json:"policy,omitempty"`
	Source policy.Source `json:"source,omitempty"` // tool, server, global
	// GrantID names the grant (kinds conversation and grant); ExpiresAt is
	// when a timed grant ends.
	GrantID   string     `json:"grant_id,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Rule: the argument rule that approved the call (kind "rule").
	Rule *RuleRef `json:"rule,omitempty"`
	// Hook: the decision hook that approved the call (kind "hook").
	Hook *HookRef `json:"hook,omitempty"`
}

// HookRef names the decision hook that answered an approval request: the
// server's or the workspace's, with the reason it gave.
type HookRef struct {
	Scope       string `json:"scope"` // server, workspace
	ServerLabel string `json:"server_label,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// RuleRef names one argument rule: its list (scope, and the server and
// tool the list belongs to), its place in the list (0-based) and what it
// says.
type RuleRef struct {
	Scope       string `json:"scope"` // tool, server, workspace
	ServerLabel string `json:"server_label,omitempty"`
	ToolName    string `json:"tool_name,omitempty"`
	Index       int    `json:"index"`
	When        string `json:"when"`
	Decision    string `json:"decision"`
	Reason      string `json:"reason,omitempty"`
}

// RuleCheck is what the argument rules made of one approval request.
type RuleCheck struct {
	// Checked is how many rules were looked at (the tool's, its server's
	// and the workspace's).
	Checked int `json:"checked"`
	// Decision is approve, deny or ask.
	Decision string `json:"decision"`
	// Rule is the rule that held; null when none did.
	Rule *RuleRef `json:"rule"`
	// By says who answered without a card: "rule" (Rule decided), "policy"
	// (no rule held and the tool's policy lets it run without asking),
	// "hook" (a decision hook decided, before any rule: Hook names it); ""
	// when the person decides (the card shows the rules checked).
	By string `json:"by,omitempty"`
	// Hook is the decision hook that answered (By "hook").
	Hook *HookRef `json:"hook,omitempty"`
	// Policy and Source are the tool's policy without the rules (By "policy").
	Policy policy.Policy `json:"policy,omitempty"`
	Source policy.Source `json:"source,omitempty"`
	// GrantID and GrantExpiresAt name the grant that makes the policy
	// never (By "policy" with source conversation or grant).
	GrantID        string     `json:"grant_id,omitempty"`
	GrantExpiresAt *time.Time `json:"grant_expires_at,omitempty"`
	// Error says why the rule that would decide could not be evaluated: it
	// asks, never approves.
	Error string `json:"error,omitempty"`
	// Clamped: a rule approved, but the tool is blocked or an admin's lock
	// (or the "ask for everything" switch) makes it ask; rules never loosen those.
	Clamped bool `json:"clamped,omitempty"`
}

// Approval states.
const (
	Pending    = "pending"
	Approved   = "approved"
	Denied     = "denied"
	Superseded = "superseded"
	// OutcomeUnknown: the approval was sent (or was about to be) in a
	// follow-up whose outcome Toolgate could not learn (it crashed, the
	// stream broke before the provider said what ran): the tool may have
	// run. It is never sent as an approval again.
	OutcomeUnknown = "outcome_unknown"
	// Expired: the request can no longer be answered (the provider lost the
	// response that asked, or it waited too long).
	Expired = "expired"
	// NotRun: approved, but the call provably never ran (MCP_ROUTE=gateway:
	// no call using it passed Toolgate's MCP face, or the face refused it,
	// or it failed before reaching the server). The model can ask again.
	NotRun = "not_run"
	// Withdrawn: a held call's client went away before anyone decided
	// (MCP face for agents): nothing runs, now or later.
	Withdrawn = "withdrawn"
)

// Conversation kinds.
const (
	KindChat  = "chat"
	KindAgent = "agent"
)

// ClientInfo is what an MCP client said of itself when its session began.
type ClientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// Decision scopes.
const (
	ScopeOnce         = "once"
	ScopeConversation = "conversation"
)

// Approval is one approval request with its decision.
type Approval struct {
	ID             string `json:"approval_request_id"`
	ConversationID string `json:"conversation_id"`
	ResponseID     string `json:"response_id"`
	ServerLabel    string `json:"server_label"`
	UpstreamLabel  string `json:"upstream_label"`
	ToolName       string `json:"tool_name"`
	// StoredArguments are the arguments as Toolgate stores them: JSON text
	// with secrets already redacted (mustRedacted), never the originals,
	// which only upstream keeps. Arguments and Redacted are derived from it.
	StoredArguments string          `json:"-"`
	Arguments       json.RawMessage `json:"arguments"`
	Redacted        []string        `json:"redacted"`
	Annotations     json.RawMessage `json:"annotations"`
	Reason          AskReason       `json:"asks_because"`
	RequestedAt     time.Time       `json:"requested_at"`
	State           string          `json:"state"`
	DecidedAt       *time.Time      `json:"decided_at"`
	DecidedBy       *string         `json:"decided_by"`    // the decider's email (Toolgate's own: null)
	DecidedByID     *string         `json:"decided_by_id"` // the decider's user id
	DecisionReason  *string         `json:"reason"`
	Scope           *string         `json:"scope"`
	Remember        bool            `json:"remember"`
	AnsweredIn      *string         `json:"answered_in"`
	// ExpiresAt is when a pending request expires (APPROVAL_TTL after it
	// asked); null once decided. Not stored: derived when shown.
	ExpiresAt *time.Time `json:"expires_at"`
	// ServerTTLSeconds is the server's approval_ttl_seconds as read with
	// the request: nil means APPROVAL_TTL applies, 0 that it never expires.
	ServerTTLSeconds *int `json:"-"`
	// SentInTurn is the turn whose follow-up carries (or carried) the
	// answer, recorded before the request left.
	SentInTurn *string `json:"-"`
	// Rules is what the argument rules made of the request: null when no
	// rules apply to the tool.
	Rules *RuleCheck `json:"rules"`
	// StoredCorrection is the correction a denial carried, as the person
	// gave it ("[redacted]" left where they kept a hidden value); Correction
	// is it as shown, redacted like the arguments; null without one.
	StoredCorrection json.RawMessage `json:"-"`
	Correction       json.RawMessage `json:"correction"`
	// Corrects links a request to the denial with a correction that came
	// just before it for the same tool: what changed since. Null otherwise.
	Corrects *Corrects `json:"corrects"`
	// AskLock is the level (tool, server, global) of the admin's lock at
	// Ask that made the tool ask when it asked: it can be approved once or
	// denied, never for a while or always. Null when it was not locked.
	AskLock *policy.Source `json:"ask_lock"`
	// ApprovalText is the admin's words for the tool's card, filled from
	// the arguments as the card shows them (secrets "[redacted]") when it
	// asked: plain text, never markup. Null when the tool has none.
	ApprovalText *string `json:"approval_text"`
	// Choices are what the card offers: the tool's choices as an admin
	// limited them when it asked (every one by default), less what a lock
	// at Ask forbids. A decision outside the tool's choices is refused.
	Choices []policy.Choice `json:"choices"`
	// Stopped: denied by a person's stop (this request's decision, or one
	// on another request of the same response): the turn ended there.
	Stopped bool `json:"stopped"`
	// ArgumentsSHA256 is the digest of the real arguments the model asked
	// with, canonical (gateway.ArgumentsDigest): a call through the MCP
	// face runs on this approval only with arguments of the same digest.
	// "" for a request stored before it was recorded, or whose arguments
	// are not a JSON object.
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	// DefinitionDigest is the tool's definition digest when it asked (as
	// Toolgate had stored it): the approval lets only that definition run.
	DefinitionDigest string `json:"definition_digest,omitempty"`
	// Call is what Toolgate's MCP face saw of the call this approval let
	// run (MCP_ROUTE=gateway); null when none ran through it.
	Call *GatewayCall `json:"call,omitempty"`
}

// Corrects says how a new approval request differs from the one the person
// denied with a correction: the model asked again.
type Corrects struct {
	ApprovalRequestID string `json:"approval_request_id"` // the denied request
	// Changes are the arguments that differ between the denied request and
	// this one, both redacted as the card shows them.
	Changes []ArgChange `json:"changes"`
	// MatchesCorrection: this request asks exactly what the correction said.
	MatchesCorrection bool `json:"matches_correction"`
}

// ArgChange is one argument that differs. Before is missing for an argument
// the new request added, After for one it left out.
type ArgChange struct {
	Path   string          `json:"path"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// AskReason says why a tool asks: its policy and where that came from, or
// that Toolgate does not know the tool.
type AskReason struct {
	Policy policy.Policy `json:"policy"`
	Source policy.Source `json:"source"` // tool, server, global, user, locked, new, changed or unknown
	// Reason, when known: not_read_only (the default asks for tools not
	// declared read-only), new_tool, changed (Fields says what changed
	// since it was allowed) or policy.
	Reason string   `json:"reason,omitempty"`
	Fields []string `json:"fields,omitempty"`
}

// Decision is the person's answer to one approval request.
type Decision struct {
	ApprovalRequestID string  `json:"approval_request_id"`
	Approve           *bool   `json:"approve"`
	Reason            *string `json:"reason"`
	Remember          bool    `json:"remember"`
	Scope             *string `json:"scope"`
	// Correction, only with approve: false, is the arguments the person
	// wants used instead (a JSON object): the denial's reason tells the
	// model to ask again with them.
	Correction json.RawMessage `json:"correction"`
	// Stop, only with approve: false, also denies every other pending
	// request of the same response with this reason, and the turn ends
	// (stopped_by_user) without a follow-up: the model gets no turn; the
	// denials go with the person's next message.
	Stop bool `json:"stop"`
	// CoveredBy: the request whose decision (a grant, approve or deny
	// always) settled this one.
	CoveredBy string `json:"-"`
}

// TurnError is how a turn ended when it did not complete.
type TurnError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Transcript is a conversation with every item in order and its pending
// approvals.
type Transcript struct {
	Conversation Conversation `json:"conversation"`
	Items        []Item       `json:"items"`
	Pending      []Approval   `json:"pending_approvals"`
}

// HeldDecider records a person's decision on an approval request of an
// agent's held call (a conversation of kind agent, at Toolgate's MCP face):
// the signed-in user ctx carries decides, once; the held call then runs or
// gets the denial. A request that is not pending is refused with its
// current state, changing nothing; another person's is not found.
// (agentgate implements it; the inbox and signed links call it.)
type HeldDecider interface {
	DecideHeld(ctx context.Context, d Decision) (Approval, error)
}
