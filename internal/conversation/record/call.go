package record

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// AuditCall writes the receipt of a call through the face (a tool.call
// audit entry, named by the call's id) in r's transaction: refused, or
// finished. owner and email name the conversation's owner ("" when gone).
func (k *Keeper) AuditCall(ctx context.Context, r conversation.Repo, owner, email string, c conversation.GatewayCall) error {
	rc := GatewayReceipt(c)
	if c.ApprovalRequestID != nil && owner != "" {
		aps, err := r.Approvals.List(ctx, owner, c.ConversationID, []string{*c.ApprovalRequestID}, false)
		if err != nil {
			return err
		}
		if len(aps) == 1 {
			rc.DecidedBy, rc.DecidedByID = aps[0].DecidedBy, aps[0].DecidedByID
		}
	}
	after, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	actor, actorID := email, owner
	if actor == "" {
		actor, actorID = auth.System.Email, ""
	}
	return k.policies.Decisions.Audit(ctx, r, policy.AuditEntry{Actor: actor, ActorID: actorID, Action: policy.ActionToolCall,
		ServerLabel: &c.ServerLabel, ToolName: &c.ToolName, Before: json.RawMessage("null"), After: after,
		CallID: c.ID, ConversationID: c.ConversationID})
}

// ShownCall fills the parts of a call shown to people.
func ShownCall(c conversation.GatewayCall) conversation.GatewayCall {
	c.Via = conversation.ViaGateway
	c.Arguments, c.Redacted = conversation.Redact(c.StoredArguments)
	if c.Redacted == nil {
		c.Redacted = []string{}
	}
	return c
}

// TTLOf is how long a waits before it expires: its server's
// approval_ttl_seconds, else APPROVAL_TTL; zero or less: never.
func (k *Keeper) TTLOf(a conversation.Approval) time.Duration {
	if a.ServerTTLSeconds != nil {
		return time.Duration(*a.ServerTTLSeconds) * time.Second
	}
	return k.approvalTTL
}

// ExpiredReason is the reason a's expiry records: its server's time limit
// when the server sets one, APPROVAL_TTL otherwise.
func (k *Keeper) ExpiredReason(a conversation.Approval) string {
	if a.ServerTTLSeconds != nil {
		return conversation.ExpiredServerTTLReason(a.ServerLabel, k.TTLOf(a))
	}
	return conversation.ExpiredTTLReason(k.approvalTTL)
}

// WithExpiry sets when a pending request expires (its server's time limit
// or APPROVAL_TTL), for the card's countdown.
func (k *Keeper) WithExpiry(a conversation.Approval) conversation.Approval {
	a.ExpiresAt = nil
	if ttl := k.TTLOf(a); a.State == conversation.Pending && ttl > 0 {
		at := a.RequestedAt.Add(ttl)
		a.ExpiresAt = &at
	}
	return a
}

// TimeIsUp reports whether pending request a can no longer be decided at
// now (the database's clock): its expires_at (its server's time limit or
// APPROVAL_TTL after it asked) is not after now. A sweep that has not run
// yet changes nothing: the deadline is the deadline.
func (k *Keeper) TimeIsUp(a conversation.Approval, now time.Time) bool {
	ttl := k.TTLOf(a)
	return a.State == conversation.Pending && ttl > 0 && !now.Before(a.RequestedAt.Add(ttl))
}
