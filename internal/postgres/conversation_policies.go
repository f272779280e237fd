package postgres

import (
	"context"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/decide"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
)

// The policy service as the turn engine sees it (conversation.Policies),
// one type per port. The decision methods run on the transaction of the
// conversation store they are given: both stores keep their tables in the
// same database, so a decision, the policy it remembers and its audit
// entry commit together or not at all.
type (
	policyTools     struct{ svc *policysvc.Service }
	policyHealth    struct{ svc *policysvc.Service }
	policyDecisions struct{ svc *policysvc.Service }
)

var (
	_ conversation.ToolCatalog     = policyTools{}
	_ conversation.ServerHealth    = policyHealth{}
	_ conversation.PolicyDecisions = policyDecisions{}
)

// NewConversationPolicies returns svc as conversation.Policies.
func NewConversationPolicies(svc *policysvc.Service) conversation.Policies {
	return conversation.Policies{
		Tools:     policyTools{svc: svc},
		Health:    policyHealth{svc: svc},
		Decisions: policyDecisions{svc: svc},
	}
}

// Request groups the tools of every enabled server for one request,
// leaving out (and returning) the unreachable ones keep does not name.
func (p policyTools) Request(ctx context.Context, userID string, grants map[string]map[string]policy.GrantRef,
	keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error) {
	return p.svc.Requests.RequestTools(ctx, userID, grants, keep)
}

// Choices groups every server's tools for userID, for choosing a
// conversation's tools.
func (p policyTools) Choices(ctx context.Context, userID string) ([]policy.ServerTools, error) {
	return p.svc.Requests.ToolChoices(ctx, userID)
}

// ServerFailed records that a turn found a server unreachable.
func (p policyHealth) ServerFailed(ctx context.Context, label, url, reason string) error {
	return p.svc.Health.ServerFailed(ctx, label, url, reason)
}

// CallFailed records that the provider could not deliver a call to a server.
func (p policyHealth) CallFailed(ctx context.Context, label, url, reason string) error {
	return p.svc.Health.CallFailed(ctx, label, url, reason)
}

// CallWorked records that a call reached a server.
func (p policyHealth) CallWorked(ctx context.Context, label, url string) error {
	return p.svc.Health.CallWorked(ctx, label, url)
}

// RecordListed stores the tools a response listed that were not discovered yet.
func (p policyTools) RecordListed(ctx context.Context, label string, tools []policy.DiscoveredTool) error {
	return p.svc.Servers.RecordListed(ctx, label, tools)
}

// RecordDefinitions stores what a server lists at the MCP face and
// returns the tools whose definition changed.
func (p policyTools) RecordDefinitions(ctx context.Context, label string, tools []policy.DiscoveredTool) ([]string, error) {
	return p.svc.Servers.RecordDefinitions(ctx, label, tools)
}

// Discovered returns a tool as discovery stored it.
func (p policyTools) Discovered(ctx context.Context, label, tool string) (policy.DiscoveredTool, bool, error) {
	return p.svc.Servers.DiscoveredTool(ctx, label, tool)
}

// ByHooks asks the decision hooks about one approval request.
func (p policyDecisions) ByHooks(ctx context.Context, u auth.User, c policy.HookCall) (policy.HookDecision, error) {
	return p.svc.Hooks.DecideByHooks(ctx, u, c)
}

// Card reads a tool's approval card in tx.
func (p policyDecisions) Card(ctx context.Context, tx conversation.Repo, label, tool string) (policy.ApprovalCard, error) {
	r, err := policyRepo(tx)
	if err != nil {
		return policy.ApprovalCard{}, err
	}
	return policy.ApprovalCardIn(ctx, r, label, tool)
}

// RequestAt is RequestTools from rd, read when the turn opened
// (Repo.Turns.Open) instead of now.
func (p policyTools) RequestAt(ctx context.Context, rd policy.Read, grants map[string]map[string]policy.GrantRef,
	keep map[string]bool) ([]policy.ServerTools, []policy.SkippedServer, error) {
	return p.svc.Requests.RequestToolsAt(ctx, rd, grants, keep)
}

// Effective returns one tool's effective policy for userID: the policy
// version and the personal policies read in tx (one statement), the
// workspace's part from this replica's copy at that version or later.
func (p policyDecisions) Effective(ctx context.Context, tx conversation.Repo, userID, label, tool string) (policy.Policy, error) {
	res, err := p.Resolve(ctx, tx, userID, label, tool)
	return res.Policy, err
}

// Resolve is Effective with the whole resolution.
func (p policyDecisions) Resolve(ctx context.Context, tx conversation.Repo, userID, label, tool string) (policy.Resolution, error) {
	c, ok := storesOf(tx)
	if !ok {
		_, err := policyRepo(tx)
		return policy.Resolution{}, err
	}
	rd, err := readPolicies(ctx, c.q, userID)
	if err != nil {
		return policy.Resolution{}, err
	}
	return p.svc.Requests.ResolveAt(ctx, rd, label, tool)
}

// ResolveAt is EffectiveAt with the whole resolution.
func (p policyDecisions) ResolveAt(ctx context.Context, rd policy.Read, label, tool string) (policy.Resolution, error) {
	return p.svc.Requests.ResolveAt(ctx, rd, label, tool)
}

// EffectiveAt returns one tool's effective policy from rd (read in the
// caller's transaction) and this replica's copy.
func (p policyDecisions) EffectiveAt(ctx context.Context, rd policy.Read, label, tool string) (policy.Policy, error) {
	pol, _, err := p.svc.Requests.EffectiveAt(ctx, rd, label, tool)
	return pol, err
}

// Remember sets u's personal policy for a tool in tx.
func (p policyDecisions) Remember(ctx context.Context, tx conversation.Repo, u auth.User, label, tool string, pol policy.Policy) error {
	r, err := policyRepo(tx)
	if err != nil {
		return err
	}
	return p.svc.Policies.Remember(ctx, r, u, label, tool, pol)
}

// Audit records e in the audit log in tx.
func (p policyDecisions) Audit(ctx context.Context, tx conversation.Repo, e policy.AuditEntry) error {
	r, err := policyRepo(tx)
	if err != nil {
		return err
	}
	return r.Audit.Insert(ctx, e)
}

// WidenDefault sets a workspace default to never for an admin's wider
// decision, in tx.
func (p policyDecisions) WidenDefault(ctx context.Context, tx conversation.Repo, u auth.User, label string) (policy.Widened, error) {
	r, err := policyRepo(tx)
	if err != nil {
		return policy.Widened{}, err
	}
	return p.svc.Policies.WidenDefault(ctx, r, u, label)
}

// ResolveIn resolves one tool for userID reading everything in tx.
func (p policyDecisions) ResolveIn(ctx context.Context, tx conversation.Repo, userID, label, tool string) (policy.Resolution, error) {
	r, err := policyRepo(tx)
	if err != nil {
		return policy.Resolution{}, err
	}
	return policy.ResolveTool(ctx, r, userID, label, tool)
}

// policyRepo is the policy repository on tx's connection or transaction.
// Only a ConversationStore's repository has one: given another, the work
// would not be part of the conversation's transaction, so it is refused.
func policyRepo(tx conversation.Repo) (policy.Repo, error) {
	c, ok := storesOf(tx)
	if !ok {
		return policy.Repo{}, apperr.New(apperr.Internal, "foreign_repository",
			"the policy work of a decision was given a conversation repository (%T) that is not Postgres's, so it cannot share its transaction", tx)
	}
	return newRepo(c.q), nil
}

// ByRules evaluates the argument rules that apply to one call for u.
func (p policyDecisions) ByRules(ctx context.Context, tx conversation.Repo, u auth.User, label, tool string,
	args map[string]any) (policy.RuleDecision, error) {
	r, err := policyRepo(tx)
	if err != nil {
		return policy.RuleDecision{}, err
	}
	return decide.DecideByRules(ctx, r, u, label, tool, args)
}
