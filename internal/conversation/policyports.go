package conversation

import (
	"context"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
)

// Policies is all that turns need of the policy side, as ports: the tools
// a request offers and what servers list (Tools), how servers answer
// (Health), and for a decision the tool's effective policy, the personal
// policy it remembers and its audit entry (Decisions).
// postgres.NewConversationPolicies makes it over policy.Service.
//
// The methods that take tx act in that transaction of the conversation
// store (the Repo that Store.Tx passes to its function), so a decision, the
// policy it remembers and its audit entry commit together or not at all.
type Policies struct {
	Tools     ToolCatalog
	Health    ServerHealth
	Decisions PolicyDecisions
}

// ToolCatalog is the tools a request offers, and what servers list.
type ToolCatalog interface {
	// Request groups the tools of every enabled server for one request of
	// userID; grants are the conversation's allowances, by server label.
	// Servers that are unreachable are left out and returned as skipped,
	// unless keep names them (the request answers for them).
	Request(ctx context.Context, userID string, grants map[string]map[string]policy.GrantRef, keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error)
	// RequestAt is Request from rd: policy_version and the user's personal
	// policies as the turn's opening statement read them (Turns.Open), so
	// the request leaves without another read.
	RequestAt(ctx context.Context, rd policy.Read, grants map[string]map[string]policy.GrantRef, keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error)
	// Choices groups the tools of every server, enabled or not, for userID
	// without a conversation's allowances: what a conversation's servers
	// and tools are chosen from.
	Choices(ctx context.Context, userID string) ([]policy.ServerTools, error)
	// RecordDefinitions stores the definitions a server lists now (at the
	// MCP face) and returns the names of the tools whose stored definition
	// changed: from the next request on they ask.
	RecordDefinitions(ctx context.Context, label string, tools []policy.DiscoveredTool) ([]string, error)
	// RecordListed stores the tools a response listed for a server that
	// Toolgate had not discovered yet.
	RecordListed(ctx context.Context, label string, tools []policy.DiscoveredTool) error
	// Discovered returns a tool as discovery stored it; false when Toolgate
	// has not discovered it.
	Discovered(ctx context.Context, label, tool string) (policy.DiscoveredTool, bool, error)
}

// ServerHealth is what turns learn of the servers' health.
type ServerHealth interface {
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
}

// PolicyDecisions is the policy side of an approval request and its
// decision.
type PolicyDecisions interface {
	// ByHooks asks the decision hooks (the server's, then the workspace's)
	// about an approval request made for u, before its card shows; the
	// answer is already clamped (a hook never loosens a blocked tool or a
	// locked always). A hook that fails asks; an error means the hooks'
	// settings could not be read.
	ByHooks(ctx context.Context, u auth.User, c policy.HookCall) (policy.HookDecision, error)
	// ByRules evaluates the argument rules (the tool's, its server's, the
	// workspace's) over one call made for u, read in tx.
	ByRules(ctx context.Context, tx Repo, u auth.User, label, tool string, args map[string]any) (policy.RuleDecision, error)
	// Card reads a tool's approval card (words and choices) in tx: every
	// choice and no words when an admin set none.
	Card(ctx context.Context, tx Repo, label, tool string) (policy.ApprovalCard, error)
	// Effective returns the tool's effective policy for userID, read in tx
	// (the workspace's part may come from this replica's copy at the
	// version tx reads, or later). A server that no longer exists, or is
	// disabled, blocks its tools.
	Effective(ctx context.Context, tx Repo, userID, label, tool string) (policy.Policy, error)
	// EffectiveAt is Effective from rd, the policy read made in tx
	// (Turns.LockDecisions) before it changed any personal policy.
	EffectiveAt(ctx context.Context, rd policy.Read, label, tool string) (policy.Policy, error)
	// Resolve is Effective with the whole resolution: its source and an
	// admin's lock at Ask among it.
	Resolve(ctx context.Context, tx Repo, userID, label, tool string) (policy.Resolution, error)
	// ResolveAt is EffectiveAt with the whole resolution.
	ResolveAt(ctx context.Context, rd policy.Read, label, tool string) (policy.Resolution, error)
	// ResolveIn is Resolve read wholly in tx, the workspace's part
	// included: it sees a change tx made and has not committed.
	ResolveIn(ctx context.Context, tx Repo, userID, label, tool string) (policy.Resolution, error)
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
}
