package engine

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
)

// DefaultApprovalTTL is APPROVAL_TTL's default: how long an approval
// request waits for a decision before it expires.
const DefaultApprovalTTL = 30 * time.Minute

// expiryBatch is how many conversations one pass of ExpireApprovals looks at.
const expiryBatch = 100

// ExpireApprovals expires the pending approval requests older than their
// server's approval_ttl_seconds or, for servers without one, APPROVAL_TTL,
// in conversations with no running turn (a turn's end
// settles its own). Each conversation's are expired in one transaction
// with their decision.recorded events, so every open stream sees them; the
// conditional update lets replicas run this at once and still expire each
// request exactly once. The provider still waits for an answer: the next
// request continuing from that response carries a denial with the reason
// (closeOpen). It reports how many it expired.
func (s *Service) ExpireApprovals(ctx context.Context) int {
	convs, err := s.store.Repo().Leases.ExpiringConversations(ctx, s.approvalTTL, expiryBatch)
	if err != nil {
		s.log.WarnContext(ctx, "looking for expired approval requests failed", "error", err)
		return 0
	}
	n := 0
	for _, conv := range convs {
		expired, err := s.expireIn(ctx, conv)
		if err != nil {
			s.log.WarnContext(ctx, "expiring approval requests failed", "conversation_id", conv, "error", err)
			continue
		}
		n += len(expired)
	}
	return n
}

// expireIn expires the pending requests of one conversation that are out
// of time, if no turn runs in it, in one transaction with their
// decision.recorded events and approval.decide audit entries (Toolgate
// closed them); then it sends the follow-up the response may owe. It
// returns the requests it expired, as stored.
func (s *Service) expireIn(ctx context.Context, conv string) ([]conversation.Approval, error) {
	var expired []conversation.Approval
	var ownerID string
	err := s.store.Tx(ctx, func(r conversation.Repo) error {
		expired = nil
		owner, aps, err := r.Leases.ExpireApprovals(ctx, conv, s.approvalTTL, s.keeper.ExpiredReason)
		if err != nil || len(aps) == 0 {
			return err
		}
		ownerID = owner
		expired = aps
		evs := make([]conversation.NewEvent, 0, len(aps))
		waiting := map[string][]string{} // response -> its requests still pending
		for _, a := range aps {
			if _, ok := waiting[a.ResponseID]; !ok {
				rest, err := r.Approvals.OfResponse(ctx, owner, conv, a.ResponseID)
				if err != nil {
					return err
				}
				waiting[a.ResponseID] = []string{}
				for _, p := range rest {
					if p.State == conversation.Pending {
						waiting[a.ResponseID] = append(waiting[a.ResponseID], p.ID)
					}
				}
			}
			if err := s.keeper.AuditClosed(ctx, r, a, conversation.Pending, record.ClosedByExpiry, nil); err != nil {
				return err
			}
			ev := decisionEvent(a, nil)
			ev.PendingApprovalIDs = waiting[a.ResponseID]
			evs = append(evs, mustEvent(conversation.EventNameDecision, ev))
		}
		_, err = r.Events.Append(ctx, conv, "", evs)
		return err
	})
	if err != nil || len(expired) == 0 {
		return nil, err
	}
	for _, a := range expired {
		s.observer.ApprovalExpired(a.ID, deref(a.DecidedAt))
	}
	s.hub.Poke(conv, false)
	s.log.InfoContext(ctx, "approval requests expired", "conversation_id", conv, "expired", len(expired),
		"approval_ttl", s.approvalTTL)
	s.followUpAfterExpiry(ctx, conv, ownerID)
	return expired, nil
}

// serverTTL is the approval_ttl_seconds of the request's server label, as
// the request read it (nil: APPROVAL_TTL applies).
func (r *relay) serverTTL(label string) *int {
	for _, g := range r.groups {
		if g.Server.Label == label {
			return g.Server.ApprovalTTLSeconds
		}
	}
	return nil
}
