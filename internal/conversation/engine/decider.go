package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// decider records a person's decisions with what they imply (a
// remembered policy, a grant, a wider default, a correction, an audit
// entry) and decides the requests a grant, an "always", a wider approval or
// a stop covers; it judges a user's load against the per-user limits.
type decider struct {
	policies conversation.Policies
	limits   conversation.Limits
	log      *slog.Logger
	asker    *asker
}

// preRead is what the transaction that records decisions read when it
// locked them (Turns.LockDecisions): the policy read (nil once a decision
// changed a personal policy) and the approval cards an admin set for the
// requests' tools.
type preRead struct {
	policies *policy.Read
	cards    map[[2]string]policy.ApprovalCard
}

func cardsOf(cs []policy.ApprovalCard) map[[2]string]policy.ApprovalCard {
	m := make(map[[2]string]policy.ApprovalCard, len(cs))
	for _, c := range cs {
		m[[2]string{c.ServerLabel, c.ToolName}] = c
	}
	return m
}

// policyRead is p's policy read; nil: read again.
func (p *preRead) policyRead() *policy.Read {
	if p == nil {
		return nil
	}
	return p.policies
}

// card is the card of a's tool as read (the default card when an admin set
// none); nil: not read, read it.
func (p *preRead) card(a conversation.Approval) *policy.ApprovalCard {
	if p == nil || p.cards == nil {
		return nil
	}
	c, ok := p.cards[[2]string{a.ServerLabel, a.ToolName}]
	if !ok {
		c = policy.ApprovalCard{ServerLabel: a.ServerLabel, ToolName: a.ToolName}
	}
	return &c
}

// decide records one decision with what it implies: a remembered policy
// (the decider's personal one), an allowance for the conversation, an
// audit entry. read, when not nil, is what r's transaction read when it
// locked the requests; nil reads again.
func (dc *decider) decide(ctx context.Context, r conversation.Repo, read *preRead, a conversation.Approval, d conversation.Decision, u auth.User, now time.Time) (conversation.DecisionEvent, error) {
	a.State = conversation.Denied
	if *d.Approve {
		a.State = conversation.Approved
		if err := approvable(ctx, dc.policies, r, read.policyRead(), a, d, u.ID); err != nil {
			return conversation.DecisionEvent{}, err
		}
	}
	if err := dc.asker.choiceAllowed(ctx, r, a, d, read.card(a)); err != nil {
		return conversation.DecisionEvent{}, err
	}
	correction, cerr := dc.correction(ctx, a, d)
	if cerr != nil {
		return conversation.DecisionEvent{}, cerr
	}
	a.StoredCorrection, a.Stopped = correction, d.Stop
	a.DecidedAt, a.DecidedBy, a.DecidedByID, a.Remember = &now, &u.Email, &u.ID, d.Remember
	if d.Reason != nil && strings.TrimSpace(stripNUL(*d.Reason)) != "" {
		reason := strings.TrimSpace(stripNUL(*d.Reason))
		a.DecisionReason = &reason
	}
	scope := conversation.ScopeOnce
	if d.Scope != nil {
		scope = *d.Scope
	}
	a.Scope = &scope
	if err := r.Approvals.Decide(ctx, u.ID, a); err != nil {
		return conversation.DecisionEvent{}, err
	}
	var change *conversation.PolicyChange
	if d.Remember {
		p := policy.Blocked
		if *d.Approve {
			p = policy.Never
		}
		if err := dc.policies.Decisions.Remember(ctx, r, u, a.ServerLabel, a.ToolName, p); err != nil {
			return conversation.DecisionEvent{}, err
		}
		change = &conversation.PolicyChange{ServerLabel: a.ServerLabel, ToolName: a.ToolName, Policy: string(p), Layer: conversation.LayerUser}
	}
	audited := map[string]any{"approval_request_id": a.ID, "conversation_id": a.ConversationID,
		"state": a.State, "reason": a.DecisionReason, "scope": scope, "remember": d.Remember, "by": "person"}
	if d.Wider() && *d.Approve {
		c, w, err := dc.widen(ctx, r, u, a, d)
		if err != nil {
			return conversation.DecisionEvent{}, err
		}
		change = c
		maps.Copy(audited, w)
	}
	if g := dc.grantFor(a, d, now); g != nil {
		if err := r.Grants.Add(ctx, u.ID, *g); err != nil {
			return conversation.DecisionEvent{}, err
		}
		audited["grant_id"], audited["expires_at"] = g.ID, g.ExpiresAt
	}
	if d.CoveredBy != "" {
		audited["covered_by"] = d.CoveredBy
	}
	if d.Stop {
		audited["stopped"] = true
	}
	audited["correction"] = shownCorrection(a.StoredCorrection)
	after, _ := json.Marshal(audited)
	before, _ := json.Marshal(map[string]any{"approval_request_id": a.ID, "state": conversation.Pending})
	err := dc.policies.Decisions.Audit(ctx, r, policy.AuditEntry{Actor: u.Email, ActorID: u.ID, Action: policy.ActionDecision,
		ServerLabel: &a.ServerLabel, ToolName: &a.ToolName, Before: before, After: after})
	return decisionEvent(a, change), err
}

// approvable checks that approving a (d) is allowed by its tool's policy
// now, read from read (nil: read again in r for user): not above an
// admin's lock at Ask, and not blocked since it asked.
func approvable(ctx context.Context, p conversation.Policies, r conversation.Repo, read *policy.Read, a conversation.Approval, d conversation.Decision, user string) error {
	var res policy.Resolution
	var err error
	if read != nil {
		res, err = p.Decisions.ResolveAt(ctx, *read, a.ServerLabel, a.ToolName)
	} else {
		res, err = p.Decisions.Resolve(ctx, r, user, a.ServerLabel, a.ToolName)
	}
	if err != nil {
		return err
	}
	if err := lockedAtAsk(res, a, d); err != nil {
		return err
	}
	if !d.Remember && res.Policy == policy.Blocked {
		// Blocked since it asked (settings changed, server disabled or
		// removed): blocked means never run, so an approval cannot
		// override it; remembering the approval changes the policy.
		return apperr.New(apperr.Conflict, "tool_blocked",
			"%s on server %s is blocked (or its server is disabled or gone) since it asked, so it cannot be approved; deny it, or, if your own policy blocks it, approve with remember: true to allow it for you from now on",
			a.ToolName, a.ServerLabel)
	}
	return nil
}

// lockedAtAsk refuses an approval d that would loosen an admin's lock at
// Ask on a's tool (res, read when the person decides): a grant (scope
// conversation or hour) or a remembered approval. A locked Ask asks every
// time, so it can be approved once, or denied.
func lockedAtAsk(res policy.Resolution, a conversation.Approval, d conversation.Decision) error {
	if res.AskLock == "" || !*d.Approve || (!d.Remember && (d.Scope == nil || *d.Scope == conversation.ScopeOnce)) {
		return nil
	}
	what := map[policy.Source]string{policy.FromTool: "its workspace policy", policy.FromServer: "server " + a.ServerLabel + "'s default policy",
		policy.FromGlobal: "the global default policy"}[res.AskLock]
	return apperr.New(apperr.Forbidden, "policy_locked",
		"%s on server %s is locked at Ask by an admin (%s): every call asks, so it can only be approved once (no scope, or scope \"once\", without remember) or denied; nothing was recorded",
		a.ToolName, a.ServerLabel, what)
}
