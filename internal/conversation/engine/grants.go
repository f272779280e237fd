package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// grantRefs are the live grants gs as a request is built with them, by
// server label and tool; of two grants for one tool the longer-lasting wins.
func grantRefs(gs []conversation.Grant) map[string]map[string]policy.GrantRef {
	out := map[string]map[string]policy.GrantRef{}
	for _, g := range gs {
		if out[g.ServerLabel] == nil {
			out[g.ServerLabel] = map[string]policy.GrantRef{}
		}
		ref := policy.GrantRef{ID: g.ID, Conversation: g.ConversationID != nil, ExpiresAt: g.ExpiresAt, CreatedAt: g.CreatedAt}
		if old, ok := out[g.ServerLabel][g.ToolName]; ok && outlasts(old, ref) {
			continue
		}
		out[g.ServerLabel][g.ToolName] = ref
	}
	return out
}

func outlasts(a, b policy.GrantRef) bool {
	switch {
	case a.ExpiresAt == nil:
		return true
	case b.ExpiresAt == nil:
		return false
	}
	return !a.ExpiresAt.Before(*b.ExpiresAt)
}

// requestGrants reads the live grants a request of owner's in the
// conversation is built with.
func (s *Service) requestGrants(ctx context.Context, r conversation.Repo, owner, conversationID string) (map[string]map[string]policy.GrantRef, error) {
	gs, err := r.Grants.List(ctx, owner, conversation.GrantFilter{ConversationID: conversationID, Now: s.now()})
	if err != nil {
		return nil, err
	}
	return grantRefs(gs), nil
}

// grantFor is the grant an approving decision d on a gives, if any.
func (dc *decider) grantFor(a conversation.Approval, d conversation.Decision, now time.Time) *conversation.Grant {
	if d.Scope == nil || !*d.Approve {
		return nil
	}
	g := conversation.Grant{ID: newID("grant_"), ServerLabel: a.ServerLabel, ToolName: a.ToolName, ApprovalRequestID: a.ID, CreatedAt: now}
	switch *d.Scope {
	case conversation.ScopeConversation:
		conv := a.ConversationID
		g.ConversationID = &conv
	case conversation.ScopeHour:
		until := now.Add(conversation.GrantDuration)
		g.ExpiresAt = &until
	default:
		return nil
	}
	return &g
}

// covering is a decision that decides its tool from now on: a grant, or a
// remembered policy (approve always, deny always).
type covering struct {
	a conversation.Approval
	d conversation.Decision
}

// covers reports whether d decides its tool beyond its own request.
func covers(d conversation.Decision) bool {
	return d.Remember || (d.Scope != nil && *d.Approve && (*d.Scope == conversation.ScopeConversation || *d.Scope == conversation.ScopeHour || d.Wider()))
}

// coversRequest reports whether c decides a too: the same tool, or, for a
// wider decision, a tool its new default now lets run without asking.
func (dc *decider) coversRequest(ctx context.Context, r conversation.Repo, u auth.User, c covering, a conversation.Approval) (bool, error) {
	if c.d.Wider() {
		return dc.coversWider(ctx, r, u, c, a)
	}
	return c.a.ServerLabel == a.ServerLabel && c.a.ToolName == a.ToolName, nil
}

// reason is what a request settled by c is told: the decision and its
// tool in words, as the person would say it (the card and the terminal show
// it; an mcpr_… id means nothing to a person).
func (c covering) reason(now time.Time) string {
	tool := fmt.Sprintf("%s on %s", c.a.ToolName, c.a.ServerLabel)
	switch {
	case c.d.Remember && *c.d.Approve:
		return fmt.Sprintf("Covered by your decision to always allow %s.", tool)
	case c.d.Remember:
		return fmt.Sprintf("Covered by your decision to always block %s.", tool)
	case c.d.Wider():
		return widerReason(c)
	case *c.d.Scope == conversation.ScopeHour:
		return fmt.Sprintf("Covered by your grant for 1 hour (until %s): %s runs without asking in all your conversations.",
			now.Add(conversation.GrantDuration).UTC().Format("15:04 UTC"), tool)
	}
	return fmt.Sprintf("Covered by your grant for this conversation: %s runs without asking in it.", tool)
}

// settle decides every other pending request of responses whose tool one
// of cs now decides (a grant, or approve/deny always), the same way, by u,
// with a reason naming the covering decision. decided are the requests
// already decided in this call; settled ones are added to it.
func (dc *decider) settle(ctx context.Context, r conversation.Repo, u auth.User, conv string, responses map[string]bool,
	cs []covering, decided map[string]bool, now time.Time) ([]conversation.DecisionEvent, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	var evs []conversation.DecisionEvent
	for resp := range responses {
		aps, err := r.Approvals.OfResponse(ctx, u.ID, conv, resp)
		if err != nil {
			return nil, err
		}
		for _, a := range aps {
			if a.State != conversation.Pending || decided[a.ID] {
				continue
			}
			for _, c := range cs {
				if ok, err := dc.coversRequest(ctx, r, u, c, a); err != nil || !ok {
					if err != nil {
						return nil, err
					}
					continue
				}
				reason, once := c.reason(now), conversation.ScopeOnce
				ev, err := dc.decide(ctx, r, nil, a, conversation.Decision{ApprovalRequestID: a.ID, Approve: c.d.Approve, Reason: &reason,
					Scope: &once, CoveredBy: c.a.ID}, u, now)
				if err != nil {
					return nil, err
				}
				decided[a.ID] = true
				evs = append(evs, ev)
				break
			}
		}
	}
	return evs, nil
}

// grantAllowedBy says which grant let a call run, for a tool groups allow
// by a grant.
func grantAllowedBy(groups []policy.ServerTools, server, tool string) *conversation.AllowedBy {
	for _, g := range groups {
		if g.Server.Label != server {
			continue
		}
		if ref := g.GrantOf(tool); ref != nil {
			kind := "grant"
			if ref.Conversation {
				kind = "conversation"
			}
			return &conversation.AllowedBy{Kind: kind, GrantID: ref.ID, ExpiresAt: ref.ExpiresAt}
		}
	}
	return &conversation.AllowedBy{Kind: "conversation"}
}

// validScope reports whether scope is a decision scope.
func validScope(scope string) bool {
	return scope == conversation.ScopeOnce || scope == conversation.ScopeConversation || scope == conversation.ScopeHour || scope == conversation.ScopeServer || scope == conversation.ScopeEverything
}
