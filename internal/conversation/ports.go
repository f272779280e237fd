package conversation

import (
	"context"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
)

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

// Policies is all that turns need of the policy side: the tools a request
// offers, the tools a response listed, what a tool declared, and for a
// decision the tool's effective policy, the personal policy it remembers
// and its audit entry. postgres.ConversationPolicies implements it over
// policy.Service.
//
// The methods that take tx act in that transaction of the conversation
// store (the Repo that Store.Tx passes to its function), so a decision, the
// policy it remembers and its audit entry commit together or not at all.
type Policies interface {
	// RequestTools groups the tools of every enabled server for one
	// request of userID; grants are the conversation's allowances, by
	// server label. Servers that are unreachable are left out and returned
	// as skipped, unless keep names them (the request answers for them).
	RequestTools(ctx context.Context, userID string, grants map[string]map[string]policy.GrantRef, keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error)
	// RequestToolsAt is RequestTools from rd: policy_version and the
	// user's personal policies as the turn's opening statement read them
	// (Repo.OpenTurn), so the request leaves without another read.
	RequestToolsAt(ctx context.Context, rd policy.Read, grants map[string]map[string]policy.GrantRef, keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error)
	// ToolChoices groups the tools of every server, enabled or not, for
	// userID without a conversation's allowances: what a conversation's
	// servers and tools are chosen from.
	ToolChoices(ctx context.Context, userID string) ([]policy.ServerTools, error)
	// ServerFailed records that the turn found a server unreachable (the
	// provider could not list its tools or reach it for a call); url is the
	// server's URL as the request offered it.
	ServerFailed(ctx context.Context, label, url, reason string) error
	// CallFailed records that the provider could not deliver a call to the
	// server; the server becomes unreachable only after several in a row.
	CallFailed(ctx context.Context, label, url, reason string) error
	// CallWorked records that a call reached the server (the failures in a
	// row start again).
	CallWorked(ctx context.Context, label, url string) error
	// RecordDefinitions stores the definitions a server lists now (at the
	// MCP face) and returns the names of the tools whose stored definition
	// changed: from the next request on they ask.
	RecordDefinitions(ctx context.Context, label string, tools []policy.DiscoveredTool) ([]string, error)
	// RecordListed stores the tools a response listed for a server that
	// Toolgate had not discovered yet.
	RecordListed(ctx context.Context, label string, tools []policy.DiscoveredTool) error
	// DiscoveredTool returns a tool as discovery stored it; false when
	// Toolgate has not discovered it.
	DiscoveredTool(ctx context.Context, label, tool string) (policy.DiscoveredTool, bool, error)

	// DecideByHooks asks the decision hooks (the server's, then the
	// workspace's) about an approval request made for u, before its card
	// shows; the answer is already clamped (a hook never loosens a blocked
	// tool or a locked always). A hook that fails asks; an error means the
	// hooks' settings could not be read.
	DecideByHooks(ctx context.Context, u auth.User, c policy.HookCall) (policy.HookDecision, error)
	// ApprovalCard reads a tool's approval card (words and choices) in
	// tx: every choice and no words when an admin set none.
	ApprovalCard(ctx context.Context, tx Repo, label, tool string) (policy.ApprovalCard, error)

	// Effective returns the tool's effective policy for userID, read in tx
	// (the workspace's part may come from this replica's copy at the
	// version tx reads, or later). A server that no longer exists, or is
	// disabled, blocks its tools.
	Effective(ctx context.Context, tx Repo, userID, label, tool string) (policy.Policy, error)
	// EffectiveAt is Effective from rd, the policy read made in tx
	// (Repo.LockDecisions) before it changed any personal policy.
	EffectiveAt(ctx context.Context, rd policy.Read, label, tool string) (policy.Policy, error)
	// Resolve and ResolveAt are Effective and EffectiveAt with the whole
	// resolution: its source and an admin's lock at Ask among it.
	Resolve(ctx context.Context, tx Repo, userID, label, tool string) (policy.Resolution, error)
	ResolveAt(ctx context.Context, rd policy.Read, label, tool string) (policy.Resolution, error)
	// Remember sets u's personal policy for the tool in tx (audited there
	// as a policy change); it never changes the workspace's policy.
	Remember(ctx context.Context, tx Repo, u auth.User, label, tool string, p policy.Policy) error
	// Audit records e in the audit log in tx.
	Audit(ctx context.Context, tx Repo, e policy.AuditEntry) error
	// WidenDefault sets a workspace default to never for an admin's wider
	// decision in tx (label's server default, or with label "" the global
	// default), stored and audited as the settings page's change is;
	// refused for a member, a locked or a blocked default.
	WidenDefault(ctx context.Context, tx Repo, u auth.User, label string) (policy.Widened, error)
	// ResolveIn is Resolve read wholly in tx, the workspace's part
	// included: it sees a change tx made and has not committed.
	ResolveIn(ctx context.Context, tx Repo, userID, label, tool string) (policy.Resolution, error)
	// DecideByRules evaluates the argument rules (the tool's, its
	// server's, the workspace's) over one call made for u, read in tx.
	DecideByRules(ctx context.Context, tx Repo, u auth.User, label, tool string, args map[string]any) (policy.RuleDecision, error)
}

// Info describes the upstream for the browser.
type Info struct {
	Offline bool   `json:"offline"` // talking to the built-in emulator, not a real model
	Model   string `json:"model"`
	Layout  string `json:"tool_layout"`
	BaseURL string `json:"base_url"`
}

// Limits on input.
const (
	MaxInputLen  = 32000
	MaxTitleLen  = 200
	MaxReasonLen = 2000
)

// Limits are the per-user limits on starting turns. Zero means no limit.
type Limits struct {
	// MaxConcurrentTurns is how many of a user's conversations may run a
	// turn at once (USER_MAX_CONCURRENT_TURNS).
	MaxConcurrentTurns int
	// MessagesPerMinute is how many messages a user may send in any 60
	// seconds (USER_MESSAGES_PER_MINUTE).
	MessagesPerMinute int
}
