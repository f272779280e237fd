package book

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// ActionGrantRevoke is the audit action of a revoked grant.
const ActionGrantRevoke = "grant.revoke"

// ConversationGrants lists the live grants that apply in one of the
// caller's conversations: its own and the caller's timed ones.
func (b *Conversations) ConversationGrants(ctx context.Context, conversationID string) ([]conversation.Grant, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return nil, err
	}
	r := b.store.Repo()
	if _, err := r.Conversations.Get(ctx, u.ID, conversationID, false); err != nil {
		return nil, err
	}
	return b.grants(ctx, r, u.ID, conversation.GrantFilter{ConversationID: conversationID})
}

// ListGrants lists the caller's grants, newest first: the live ones, and
// with ended the expired and revoked ones too.
func (b *Conversations) ListGrants(ctx context.Context, ended bool) ([]conversation.Grant, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return b.grants(ctx, b.store.Repo(), u.ID, conversation.GrantFilter{Ended: ended})
}

func (b *Conversations) grants(ctx context.Context, r conversation.Repo, owner string, f conversation.GrantFilter) ([]conversation.Grant, error) {
	f.Now = b.now()
	gs, err := r.Grants.List(ctx, owner, f)
	for i := range gs {
		gs[i] = gs[i].WithState(f.Now)
	}
	return gs, err
}

// RevokeGrant ends one of the caller's grants (audited): the next request
// built asks for its tool again. Another user's grant is not found;
// revoking an ended grant changes nothing.
func (b *Conversations) RevokeGrant(ctx context.Context, id string) error {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return err
	}
	return b.store.Tx(ctx, func(r conversation.Repo) error {
		now := b.now()
		g, revoked, err := r.Grants.Revoke(ctx, u.ID, id, now)
		if err != nil || !revoked {
			return err
		}
		before, _ := json.Marshal(grantAudit(g.WithState(now)))
		g.RevokedAt = &now
		after, _ := json.Marshal(grantAudit(g.WithState(now)))
		return b.policies.Decisions.Audit(ctx, r, policy.AuditEntry{Actor: u.Email, ActorID: u.ID, Action: ActionGrantRevoke,
			ServerLabel: &g.ServerLabel, ToolName: &g.ToolName, Before: before, After: after})
	})
}

func grantAudit(g conversation.Grant) map[string]any {
	return map[string]any{"grant_id": g.ID, "conversation_id": g.ConversationID, "approval_request_id": g.ApprovalRequestID,
		"expires_at": g.ExpiresAt, "state": g.State}
}
