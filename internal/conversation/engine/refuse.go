package engine

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// errTimeUp stops a decisions transaction (nothing is written) when a
// request it decides is out of time; StartDecisions then expires it.
var errTimeUp = errors.New("approval request out of time")

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
	deadline := a.RequestedAt.Add(s.keeper.TTLOf(a))
	if !found { // a turn runs in the conversation (its sweep waits for it), or expiring failed
		reason := s.keeper.ExpiredReason(a)
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
