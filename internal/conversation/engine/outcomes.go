package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
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

// errTimeUp stops a decisions transaction (nothing is written) when a
// request it decides is out of time; StartDecisions then expires it.
var errTimeUp = errors.New("approval request out of time")

// timeIsUp reports whether pending request a can no longer be decided at
// now (the database's clock): its expires_at (its server's time limit or
// APPROVAL_TTL after it asked) is not after now. A sweep that has not run
// yet changes nothing: the deadline is the deadline.
func (s *Service) timeIsUp(a conversation.Approval, now time.Time) bool {
	ttl := s.ttlOf(a)
	return a.State == conversation.Pending && ttl > 0 && !now.Before(a.RequestedAt.Add(ttl))
}

// refuseExpired is StartDecisions' answer when a request it was asked to
// decide is out of time: the request is expired now (as the sweep would,
// with its event, audit entry and any follow-up owed), and the decision is
// refused with 409 approval_expired, the request as it now stands in its
// details. Nothing of the decisions was recorded.
func (s *Service) refuseExpired(ctx context.Context, convID string, late []conversation.Approval) error {
	a := late[0]
	expired, err := s.expireIn(ctx, convID)
	if err != nil {
		s.log.WarnContext(ctx, "expiring an approval request a decision came too late for failed; the sweep expires it", "conversation_id", convID,
			"approval_request_id", a.ID, "error", err)
	}
	found := false
	for _, x := range expired {
		if x.ID == a.ID {
			a, found = x, true
		}
	}
	deadline := a.RequestedAt.Add(s.ttlOf(a))
	if !found { // a turn runs in the conversation (its sweep waits for it), or expiring failed
		reason := s.expiredReason(a)
		a.State, a.DecisionReason = conversation.Expired, &reason
	}
	e := apperr.New(apperr.Conflict, "approval_expired",
		"approval request %q expired at %s: nobody decided on it within its time limit, so it can no longer be decided and the tool does not run; ask the model again if it is still needed",
		a.ID, deadline.UTC().Format(time.RFC3339))
	p := present(a)
	p.ExpiresAt = &deadline
	e.Details = map[string]any{"approval": p}
	return e
}

// auditClosed records the approval.decide entry of a request closed
// without anyone deciding on it (superseded, expired, outcome_unknown), in r's transaction:
// its state and reason, what closed it (by: ClosedBy…) and who: the person
// whose new message superseded it, or Toolgate (who == nil).
func (s *Service) auditClosed(ctx context.Context, r conversation.Repo, a conversation.Approval, was, by string, who *auth.User) error {
	after := map[string]any{"approval_request_id": a.ID, "conversation_id": a.ConversationID, "state": a.State,
		"reason": a.DecisionReason, "by": by}
	if by == ClosedByExpiry {
		if ttl := s.ttlOf(a); ttl > 0 {
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
	return s.policies.Audit(ctx, r, e)
}
