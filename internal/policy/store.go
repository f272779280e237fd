package policy

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/rules"
)

// Store runs work against Toolgate's persistent state.
type Store interface {
	// Tx runs fn in one transaction: committed if fn returns nil, else rolled back.
	Tx(ctx context.Context, fn func(Repo) error) error
	// Repo reads and writes outside a transaction, one statement at a time.
	Repo() Repo
	// PolicyVersion returns policy_version and the personal policies of
	// userID ("" : none) in one statement: all a turn reads of policies when
	// this replica's ToolSnapshot is at that version. A personal policy
	// that is a never granted for another definition than the tool's now
	// carries the tool's definition (ToolDefinition).
	PolicyVersion(ctx context.Context, userID string) (int64, []UserPolicy, error)
	// ToolSnapshot reads the workspace's ToolSnapshot in one consistent
	// read (one round trip, a fixed number of statements, whatever the
	// number of servers).
	ToolSnapshot(ctx context.Context) (ToolSnapshot, error)
}

// Repo is the persistence the policy service needs. Methods return apperr
// errors: NotFound for a missing server, Conflict for a duplicate label.
type Repo interface {
	Settings(ctx context.Context) (Settings, error)
	PutSettings(ctx context.Context, s Settings) (Settings, error)

	ListServers(ctx context.Context) ([]Server, error)
	// Server returns one server; lock holds it for update until the transaction ends.
	Server(ctx context.Context, label string, lock bool) (Server, error)
	InsertServer(ctx context.Context, s Server) (Server, error)
	UpdateServer(ctx context.Context, s Server) (Server, error)
	DeleteServer(ctx context.Context, label string) error
	SetRefreshResult(ctx context.Context, label string, at time.Time, refreshErr string) error
	// MarkDiscovered records at as the server's first discovery, unless it has one.
	MarkDiscovered(ctx context.Context, label string, at time.Time) error
	// MarkHealthy records that a check at at reached the server.
	MarkHealthy(ctx context.Context, label string, at time.Time) error
	// MarkListed records that a discovery at at listed the server's tools
	// in took: ok, or slow (slow says why) when it took too long. With url
	// set it only applies while the server still has that URL.
	MarkListed(ctx context.Context, label, url string, at time.Time, took time.Duration, slow string) error
	// CountFailure adds one to the server's failures in a row and makes it
	// unreachable with reason once they reach threshold; it returns the
	// count and whether the server is unreachable now. With url set it only
	// applies while the server still has that URL; a server that does not
	// exist (any more) is not an error.
	CountFailure(ctx context.Context, label, url, reason string, at time.Time, threshold int) (int, bool, error)
	// ResetFailures starts the server's failures in a row again from zero
	// (while it still has url).
	ResetFailures(ctx context.Context, label, url string) error
	// MarkUnreachable records that a check at at failed with reason; a
	// server already unreachable keeps when it began failing. With url set
	// it only applies while the server still has that URL. A server that
	// does not exist (any more) is not an error.
	MarkUnreachable(ctx context.Context, label, url, reason string, at time.Time) error
	// ClaimRechecks takes up to limit enabled unreachable servers not
	// checked for every, oldest check first, marks them checked now and
	// returns their labels; a server another transaction is claiming is
	// skipped, so each is claimed once per interval whoever asks.
	// Slow servers are claimed the same way.
	ClaimRechecks(ctx context.Context, every time.Duration, limit int) ([]string, error)
	// ClaimChecks is ClaimRechecks for the enabled servers that are ok:
	// their listing time is measured again every so often.
	ClaimChecks(ctx context.Context, every time.Duration, limit int) ([]string, error)

	// Tools lists a server's discovered tools and tool names that only have a
	// policy, each with its explicit policy (effective policy left unset).
	Tools(ctx context.Context, label string) ([]Tool, error)
	// ReplaceTools makes tools the server's discovered set, keeping the
	// first-seen time of tools it already knew.
	ReplaceTools(ctx context.Context, label string, tools []DiscoveredTool, at time.Time) error
	// UpsertTools adds tools to the server's discovered set or updates them,
	// leaving its other tools alone.
	UpsertTools(ctx context.Context, label string, tools []DiscoveredTool, at time.Time) error

	Policies(ctx context.Context, label string) ([]ToolPolicy, error)
	UpsertPolicy(ctx context.Context, p ToolPolicy) error
	// DeletePolicy removes an explicit policy and returns it, or nil if there was none.
	DeletePolicy(ctx context.Context, label, tool string) (*ToolPolicy, error)

	// UserPolicies lists one user's personal policies for a server's tools.
	UserPolicies(ctx context.Context, userID, label string) ([]UserPolicy, error)
	UpsertUserPolicy(ctx context.Context, p UserPolicy) error
	// DeleteUserPolicy removes a personal policy and returns it, or nil if there was none.
	DeleteUserPolicy(ctx context.Context, userID, label, tool string) (*UserPolicy, error)

	// Rules returns a list of argument rules, empty when it has none.
	Rules(ctx context.Context, l RuleList) ([]rules.Rule, error)
	// PutRules replaces a list of argument rules (empty: removes it).
	PutRules(ctx context.Context, l RuleList, rs []rules.Rule, by string) error
	// RuledLists names every list that holds at least one rule.
	RuledLists(ctx context.Context) ([]RuleList, error)

	// DecisionHook returns a server's decision hook ("": the workspace's),
	// secret decrypted; false when none is set.
	DecisionHook(ctx context.Context, label string) (DecisionHook, bool, error)
	// PutDecisionHook creates or replaces a decision hook.
	PutDecisionHook(ctx context.Context, h DecisionHook) (DecisionHook, error)
	DeleteDecisionHook(ctx context.Context, label string) error

	// ApprovalCard returns a tool's approval card as an admin set it;
	// false when none is set (Choices nil: every choice).
	ApprovalCard(ctx context.Context, label, tool string) (ApprovalCard, bool, error)
	// ApprovalCards lists a server's approval cards, by tool name.
	ApprovalCards(ctx context.Context, label string) ([]ApprovalCard, error)
	// PutApprovalCard creates or replaces a tool's approval card.
	PutApprovalCard(ctx context.Context, c ApprovalCard, by string) (ApprovalCard, error)
	DeleteApprovalCard(ctx context.Context, label, tool string) error

	// InsertAudit records e; e.ActorID is the account (auth.User.ID).
	InsertAudit(ctx context.Context, e AuditEntry) error
	Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// ApprovalStats counts the audit log's receipts and approval.decide
	// entries of period p per tool (ToolStats without the workspace
	// policy and suggestion), ordered by server and tool.
	ApprovalStats(ctx context.Context, p StatsPeriod) ([]ToolStats, error)
}

// Discoverer lists the tools an MCP server offers.
type Discoverer interface {
	ListTools(ctx context.Context, serverURL string, headers map[string]string) ([]DiscoveredTool, error)
}
