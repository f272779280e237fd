package record

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// What closed an approval request nobody decided on (the "by" of its
// approval.decide audit entry): its time limit, a new message, the end of
// a response that did not complete, or the provider losing the response.
const (
	ClosedByExpiry       = "expiry"
	ClosedByMessage      = "message"
	ClosedByTurnEnd      = "turn_end"
	ClosedByProviderLost = "provider_lost"
)

// AuditClosed records the approval.decide entry of a request closed
// without anyone deciding on it (superseded, expired, outcome_unknown), in r's transaction:
// its state and reason, what closed it (by: ClosedBy…) and who: the person
// whose new message superseded it, or Toolgate (who == nil).
func (k *Keeper) AuditClosed(ctx context.Context, r conversation.Repo, a conversation.Approval, was, by string, who *auth.User) error {
	after := map[string]any{"approval_request_id": a.ID, "conversation_id": a.ConversationID, "state": a.State,
		"reason": a.DecisionReason, "by": by}
	if by == ClosedByExpiry {
		if ttl := k.TTLOf(a); ttl > 0 {
			after["expires_at"] = a.RequestedAt.Add(ttl)
		}
	}
	a1, _ := json.Marshal(after)
	b, _ := json.Marshal(map[string]any{"approval_request_id": a.ID, "state": was})
	e := policy.AuditEntry{Actor: auth.System.Email, Action: policy.ActionDecision, ServerLabel: &a.ServerLabel,
		ToolName: &a.ToolName, Before: b, After: a1, ConversationID: a.ConversationID}
	if who != nil {
		e.Actor, e.ActorID = who.Email, who.ID
	}
	return k.policies.Decisions.Audit(ctx, r, e)
}
