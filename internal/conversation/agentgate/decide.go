package agentgate

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// DecideHeld records the signed-in person's decision on a held call's
// request, once: under the request's row lock it must still be pending
// and in time. "For this session" (scope conversation) is a grant on the
// session's conversation, so the session's later calls of the tool run
// unasked; remember sets the person's own policy, as in a chat.
func (s *Service) DecideHeld(ctx context.Context, d conversation.Decision) (conversation.Approval, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return conversation.Approval{}, err
	}
	if err := validate(d); err != nil {
		return conversation.Approval{}, err
	}
	var a conversation.Approval
	err = s.store.Tx(ctx, func(r conversation.Repo) error {
		cur, hs, err := r.Approvals.Owned(ctx, u.ID, d.ApprovalRequestID, true)
		if err != nil {
			return err
		}
		if hs.Kind != conversation.KindAgent {
			return apperr.New(apperr.Conflict, "not_a_held_call",
				"approval request %q belongs to a chat: decide it in the chat or with POST /api/approvals/{approval_request_id}/decision", cur.ID)
		}
		switch cur.State {
		case conversation.Pending:
		case conversation.Withdrawn:
			return apperr.New(apperr.Conflict, "approval_withdrawn", "approval request %q was withdrawn (the agent that asked went away); nothing was recorded", cur.ID)
		case conversation.Expired:
			return apperr.New(apperr.Conflict, "approval_expired", "approval request %q already expired; nothing was recorded", cur.ID)
		default:
			return apperr.New(apperr.Conflict, "approval_already_decided", "approval request %q is already %s; nothing was recorded", cur.ID, cur.State)
		}
		if hs.HolderGone {
			return apperr.New(apperr.Conflict, "held_call_gone",
				"no one waits for approval request %q any longer (the connection that held its call open ended), so it cannot run; nothing was recorded", cur.ID)
		}
		if s.keeper.TimeIsUp(cur, s.now()) {
			return apperr.New(apperr.Conflict, "approval_expired",
				"approval request %q ran out of time before this decision; nothing was recorded (the agent can call again)", cur.ID)
		}
		a, err = s.decide(ctx, r, u, cur, d)
		return err
	})
	if err != nil {
		return conversation.Approval{}, err
	}
	s.poke(a.ConversationID)
	return conversation.Present(a), nil
}

// decide records d on a (pending, locked) in r's transaction.
func (s *Service) decide(ctx context.Context, r conversation.Repo, u auth.User, a conversation.Approval, d conversation.Decision) (conversation.Approval, error) {
	res, err := s.policies.Decisions.Resolve(ctx, r, u.ID, a.ServerLabel, a.ToolName)
	if err != nil {
		return a, err
	}
	scope := conversation.ScopeOnce
	if d.Scope != nil {
		scope = *d.Scope
	}
	a.State = conversation.Denied
	if *d.Approve {
		a.State = conversation.Approved
		if err := approvable(res, a, d, scope); err != nil {
			return a, err
		}
	}
	now := s.now()
	a.DecidedAt, a.DecidedBy, a.DecidedByID, a.Remember, a.Scope = &now, &u.Email, &u.ID, d.Remember, &scope
	if d.Reason != nil && strings.TrimSpace(*d.Reason) != "" {
		reason := strings.TrimSpace(strings.ReplaceAll(*d.Reason, "\x00", ""))
		a.DecisionReason = &reason
	}
	if !*d.Approve && len(d.Correction) > 0 {
		a.StoredCorrection = d.Correction
	}
	if err := r.Approvals.Decide(ctx, u.ID, a); err != nil {
		return a, err
	}
	extra := map[string]any{"scope": scope, "remember": d.Remember, "by": "person"}
	if d.Remember {
		p := policy.Blocked
		if *d.Approve {
			p = policy.Never
		}
		if err := s.policies.Decisions.Remember(ctx, r, u, a.ServerLabel, a.ToolName, p); err != nil {
			return a, err
		}
	}
	if g := grantFor(a, d, scope, now); g != nil {
		if err := r.Grants.Add(ctx, u.ID, *g); err != nil {
			return a, err
		}
		extra["grant_id"], extra["expires_at"] = g.ID, g.ExpiresAt
	}
	if err := s.audit(ctx, r, u.Email, u.ID, a, extra); err != nil {
		return a, err
	}
	_, err = r.Events.Append(ctx, a.ConversationID, "", []conversation.NewEvent{event(conversation.EventNameDecision, s.keeper.Decision(a))})
	return a, err
}

// grantFor is the grant an approval for this session (or an hour) gives.
func grantFor(a conversation.Approval, d conversation.Decision, scope string, now time.Time) *conversation.Grant {
	if !*d.Approve {
		return nil
	}
	g := conversation.Grant{ID: conversation.NewID("grant_"), ServerLabel: a.ServerLabel, ToolName: a.ToolName, ApprovalRequestID: a.ID, CreatedAt: now}
	switch scope {
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

// approvable refuses an approval that an admin's lock at Ask or a block
// since the call asked does not allow.
func approvable(res policy.Resolution, a conversation.Approval, d conversation.Decision, scope string) error {
	if res.AskLock != "" && (d.Remember || scope != conversation.ScopeOnce) {
		return apperr.New(apperr.Forbidden, "policy_locked",
			"%s on server %s is locked at Ask by an admin: every call asks, so it can only be approved once or denied; nothing was recorded",
			a.ToolName, a.ServerLabel)
	}
	if !d.Remember && res.Policy == policy.Blocked {
		return apperr.New(apperr.Conflict, "tool_blocked",
			"%s on server %s is blocked since it asked, so it cannot be approved; deny it (nothing was recorded)", a.ToolName, a.ServerLabel)
	}
	return nil
}

// validate checks a decision's body as a chat's decision is checked.
func validate(d conversation.Decision) error {
	f := apperr.Fields{}
	if d.ApprovalRequestID == "" {
		f.Add("approval_request_id", "approval_request_id is required: the id of the approval request (mcpr_...)")
	}
	if d.Approve == nil {
		f.Add("approve", "approve is required: true to run the call, false to deny it")
	}
	if d.Reason != nil && utf8.RuneCountInString(*d.Reason) > conversation.MaxReasonLen {
		f.Add("reason", "reason must be at most %d characters", conversation.MaxReasonLen)
	}
	if d.Scope != nil {
		switch *d.Scope {
		case conversation.ScopeOnce, conversation.ScopeConversation, conversation.ScopeHour:
		default:
			f.Add("scope", "a held call's scope must be \"once\", \"conversation\" (this session) or \"hour\" (got %q)", *d.Scope)
		}
	}
	if len(d.Correction) > 0 && d.Approve != nil && *d.Approve {
		f.Add("correction", "correction goes with approve: false (the arguments to use instead)")
	}
	if d.Stop {
		f.Add("stop", "stop ends a chat's turn; a held call has none: deny it instead")
	}
	return f.Err("invalid_decision", "the decision is not valid: see fields")
}
