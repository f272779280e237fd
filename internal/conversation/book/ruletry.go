package book

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/rules"
)

// Limits on how many recent requests TryRules looks at.
const (
	DefaultTryLimit = 10
	MaxTryLimit     = 100
)

// RuleTry is what candidate rules would have decided for a tool's recent
// approval requests.
type RuleTry struct {
	Total    int             `json:"total"`
	Approved int             `json:"approved"`
	Denied   int             `json:"denied"`
	Asked    int             `json:"asked"`
	Results  []RuleTryResult `json:"results"`
}

// RuleTryResult is the rules' decision for one recent request.
type RuleTryResult struct {
	ApprovalRequestID string    `json:"approval_request_id"`
	ConversationID    string    `json:"conversation_id"`
	RequestedAt       time.Time `json:"requested_at"`
	RequestedBy       string    `json:"requested_by"` // the conversation owner's email
	// State is what became of the request (pending, approved, denied, …).
	State string `json:"state"`
	// Arguments as stored: secrets redacted, so a rule reads
	// conversation.RedactedValue where a secret was.
	Arguments json.RawMessage `json:"arguments"`
	Redacted  []string        `json:"redacted"`
	Decision  rules.Decision  `json:"decision"`
	RuleIndex *int            `json:"rule_index"`
	Error     *string         `json:"error"`
}

// TryRules evaluates set, as the tool's own list, over the tool's most
// recent approval requests that the caller may see: their own
// conversations', or every conversation's for an admin (who reads every
// tool call's receipt in the audit log too). Nothing is stored.
func (b *Conversations) TryRules(ctx context.Context, set *rules.Set, label, tool string, limit int) (RuleTry, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return RuleTry{}, err
	}
	if limit == 0 {
		limit = DefaultTryLimit
	}
	if limit < 1 || limit > MaxTryLimit {
		return RuleTry{}, apperr.Invalidf("invalid_limit", "limit", "limit must be between 1 and %d (got %d)", MaxTryLimit, limit)
	}
	recent, err := b.store.Repo().Approvals.OfTool(ctx, conversation.ToolApprovalsQuery{
		ServerLabel: label, ToolName: tool, OwnerID: u.ID, Everyone: u.IsAdmin(), Limit: limit})
	if err != nil {
		return RuleTry{}, err
	}
	out := RuleTry{Total: len(recent), Results: make([]RuleTryResult, 0, len(recent))}
	for _, o := range recent {
		r := b.tryOne(set, o, label, tool)
		switch r.Decision {
		case rules.Approve:
			out.Approved++
		case rules.Deny:
			out.Denied++
		default:
			out.Asked++
		}
		out.Results = append(out.Results, r)
	}
	return out, nil
}

func (b *Conversations) tryOne(set *rules.Set, o conversation.OwnedApproval, label, tool string) RuleTryResult {
	a := b.turns.Present(o.Approval)
	out := RuleTryResult{ApprovalRequestID: a.ID, ConversationID: a.ConversationID, RequestedAt: a.RequestedAt,
		RequestedBy: o.Owner.Email, State: a.State, Arguments: a.Arguments, Redacted: a.Redacted, Decision: rules.Ask}
	var args map[string]any
	if err := json.Unmarshal(a.Arguments, &args); err != nil {
		// Arguments that are not a JSON object: no rule can read them.
		msg := "the arguments are not a JSON object"
		out.Error = &msg
		return out
	}
	res := set.Eval(rules.Call{Args: args, Tool: tool, Server: label,
		User: rules.User{ID: o.Owner.ID, Email: o.Owner.Email, Role: string(o.Owner.Role)}})
	out.Decision = res.Decision
	if res.Matched() {
		i := res.Index
		out.RuleIndex = &i
	}
	if res.Err != nil {
		msg := res.Err.Error()
		out.Error = &msg
	}
	return out
}
