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

// Repo is the persistence the policy service needs, one store per thing it
// holds. Methods return apperr errors: NotFound for a missing server,
// Conflict for a duplicate label.
type Repo struct {
	Settings SettingsStore
	Servers  ServerStore
	Health   HealthStore
	Tools    ToolStore
	Policies PolicyStore
	Rules    RuleStore
	Hooks    HookStore
	Cards    CardStore
	Audit    AuditStore
}

// SettingsStore holds the workspace's global settings.
type SettingsStore interface {
	// Get returns the global settings.
	Get(ctx context.Context) (Settings, error)
	// Put replaces the global settings and returns them as stored.
	Put(ctx context.Context, s Settings) (Settings, error)
}

// ServerStore holds the registered MCP servers.
type ServerStore interface {
	// List returns every server, ordered by label.
	List(ctx context.Context) ([]Server, error)
	// Get returns one server; lock holds it for update until the transaction ends.
	Get(ctx context.Context, label string, lock bool) (Server, error)
	// Insert registers a server (Conflict for a duplicate label).
	Insert(ctx context.Context, s Server) (Server, error)
	// Update stores a changed server.
	Update(ctx context.Context, s Server) (Server, error)
	// Delete removes a server with its tools and policies.
	Delete(ctx context.Context, label string) error
	// SetRefreshResult records when the tools were last listed and the error, if any.
	SetRefreshResult(ctx context.Context, label string, at time.Time, refreshErr string) error
	// MarkDiscovered records at as the server's first discovery, unless it has one.
	MarkDiscovered(ctx context.Context, label string, at time.Time) error
}

// HealthStore holds whether each server is reachable.
//
// MarkListed, CountFailure, ResetFailures and MarkUnreachable with url set
// only apply while the server still has that URL; a server that does not
// exist (any more) is not an error for CountFailure and MarkUnreachable.
// The claims take up to limit enabled servers not checked for every,
// oldest check first, mark them checked now and return their labels; a
// server another transaction is claiming is skipped, so each is claimed
// once per interval whoever asks.
type HealthStore interface {
	// MarkHealthy records that a check at at reached the server.
	MarkHealthy(ctx context.Context, label string, at time.Time) error
	// MarkListed records that a listing at at took took: ok, or slow (slow says why).
	MarkListed(ctx context.Context, label, url string, at time.Time, took time.Duration, slow string) error
	// CountFailure adds a failure in a row, unreachable at threshold; returns the count and whether unreachable now.
	CountFailure(ctx context.Context, label, url, reason string, at time.Time, threshold int) (int, bool, error)
	// ResetFailures starts the server's failures in a row again from zero.
	ResetFailures(ctx context.Context, label, url string) error
	// MarkUnreachable records a failed check; one already unreachable keeps when it began failing.
	MarkUnreachable(ctx context.Context, label, url, reason string, at time.Time) error
	// ClaimRechecks claims unreachable (and slow) servers to check again.
	ClaimRechecks(ctx context.Context, every time.Duration, limit int) ([]string, error)
	// ClaimChecks claims the servers that are ok, to measure their listing time again.
	ClaimChecks(ctx context.Context, every time.Duration, limit int) ([]string, error)
}

// ToolStore holds the tools discovery found on each server.
type ToolStore interface {
	// List returns a server's discovered tools and policy-only names, each with its explicit policy.
	List(ctx context.Context, label string) ([]Tool, error)
	// Replace makes tools the server's discovered set, keeping first-seen times.
	Replace(ctx context.Context, label string, tools []DiscoveredTool, at time.Time) error
	// Upsert adds or updates tools, leaving the server's other tools alone.
	Upsert(ctx context.Context, label string, tools []DiscoveredTool, at time.Time) error
}

// PolicyStore holds the explicit tool policies: the workspace's and each user's.
type PolicyStore interface {
	// List returns a server's workspace policies.
	List(ctx context.Context, label string) ([]ToolPolicy, error)
	// Upsert sets one workspace policy.
	Upsert(ctx context.Context, p ToolPolicy) error
	// Delete removes a workspace policy and returns it, or nil if there was none.
	Delete(ctx context.Context, label, tool string) (*ToolPolicy, error)
	// OfUser lists one user's personal policies for a server's tools.
	OfUser(ctx context.Context, userID, label string) ([]UserPolicy, error)
	// UpsertUser sets one personal policy.
	UpsertUser(ctx context.Context, p UserPolicy) error
	// DeleteUser removes a personal policy and returns it, or nil if there was none.
	DeleteUser(ctx context.Context, userID, label, tool string) (*UserPolicy, error)
}

// RuleStore holds the lists of argument rules.
type RuleStore interface {
	// Get returns a list of argument rules, empty when it has none.
	Get(ctx context.Context, l RuleList) ([]rules.Rule, error)
	// Put replaces a list of argument rules (empty: removes it).
	Put(ctx context.Context, l RuleList, rs []rules.Rule, by string) error
	// Lists names every list that holds at least one rule.
	Lists(ctx context.Context) ([]RuleList, error)
}

// HookStore holds the decision hooks.
type HookStore interface {
	// Get returns a server's hook ("": the workspace's), secret decrypted; false when none.
	Get(ctx context.Context, label string) (DecisionHook, bool, error)
	// Put creates or replaces a decision hook.
	Put(ctx context.Context, h DecisionHook) (DecisionHook, error)
	// Delete removes a decision hook.
	Delete(ctx context.Context, label string) error
}

// CardStore holds the approval cards admins set on tools.
type CardStore interface {
	// Get returns a tool's approval card; false when none is set (Choices nil: every choice).
	Get(ctx context.Context, label, tool string) (ApprovalCard, bool, error)
	// List returns a server's approval cards, by tool name.
	List(ctx context.Context, label string) ([]ApprovalCard, error)
	// Put creates or replaces a tool's approval card.
	Put(ctx context.Context, c ApprovalCard, by string) (ApprovalCard, error)
	// Delete removes a tool's approval card.
	Delete(ctx context.Context, label, tool string) error
}

// AuditStore holds the audit log.
type AuditStore interface {
	// Insert records e; e.ActorID is the account (auth.User.ID).
	Insert(ctx context.Context, e AuditEntry) error
	// List returns the entries q asks for, newest first.
	List(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// Stats counts period p's receipts and approval.decide entries per tool, by server and tool.
	Stats(ctx context.Context, p StatsPeriod) ([]ToolStats, error)
}

// Discoverer lists the tools an MCP server offers.
type Discoverer interface {
	ListTools(ctx context.Context, serverURL string, headers map[string]string) ([]DiscoveredTool, error)
}
