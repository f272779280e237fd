package approvallink

import (
	"context"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
)

// Engine is what ChatDecider needs of the turn engine (engine.Service).
type Engine interface {
	StartDecisions(ctx context.Context, conversationID string, ds []conversation.Decision) (*engine.Turn, error)
}

// ChatDecider is the Decider of a chat's requests until the inbox's shared
// decision function replaces it: the turn engine records the decision
// (decided_by the person ctx carries, audited) and the follow-up it claims,
// if any, runs in the background on this replica, as the one after an
// expiry does.
type ChatDecider struct {
	Engine Engine
	Store  Store
}

// Decide records d as the person ctx carries.
func (c ChatDecider) Decide(ctx context.Context, d conversation.Decision) (conversation.Approval, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return conversation.Approval{}, err
	}
	a, err := c.Store.Approval(ctx, u.ID, d.ApprovalRequestID)
	if err != nil {
		return a, err
	}
	t, err := c.Engine.StartDecisions(ctx, a.ConversationID, []conversation.Decision{d})
	if err != nil {
		return a, err
	}
	go t.Run(context.WithoutCancel(ctx), nil)
	return c.Store.Approval(context.WithoutCancel(ctx), u.ID, d.ApprovalRequestID)
}
