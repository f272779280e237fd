package engine

import (
	"context"
	"errors"
	"slices"

	"github.com/toolgate/toolgate/internal/conversation"
)

// followUpAfterExpiry sends the follow-up a response still owes when expiry
// closed the last request it waited for while others of it were decided
// (by the person, or by rules): without it, calls the person (or a rule)
// approved would wait for the person's next message for no reason. The
// turn is the owner's decisions turn, claimed under the conversation's lock
// exactly as a decision claims it (one follow-up, answers marked sent
// before it leaves), and runs in the background on this replica. A crash
// between the expiry and this claim loses nothing: the answers then go
// with the next message, as before.
func (s *Service) followUpAfterExpiry(ctx context.Context, convID, ownerID string) {
	var t *Turn
	err := s.store.Tx(ctx, func(r conversation.Repo) error {
		t = nil
		owner, err := r.Conversations.User(ctx, ownerID)
		if err != nil {
			return err
		}
		conv, err := r.Conversations.Get(ctx, owner.ID, convID, true)
		if err != nil || conv.Streaming || conv.LastResponseID == nil {
			return err
		}
		aps, err := r.Approvals.OfResponse(ctx, owner.ID, conv.ID, *conv.LastResponseID)
		if err != nil {
			return err
		}
		owed := slices.ContainsFunc(aps, func(a conversation.Approval) bool {
			return a.State == conversation.Approved && a.SentInTurn == nil && a.AnsweredIn == nil
		})
		if !owed || slices.ContainsFunc(aps, func(a conversation.Approval) bool { return a.State == conversation.Pending }) {
			return nil
		}
		next := &Turn{s: s, user: owner, conv: conv, id: newID("turn_"), kind: "decisions", previous: *conv.LastResponseID}
		if err := next.closeApprovals(ctx, r, aps); err != nil { // read above, locked
			return err
		}
		next.claim()
		if err := next.open(ctx, r); err != nil {
			return err
		}
		t = next
		return nil
	})
	var limit *conversation.LimitReached
	if errors.As(err, &limit) {
		return // a limit holds (the opening refused): the answers go with the next message
	}
	if err != nil {
		s.log.WarnContext(ctx, "sending the follow-up after an expiry failed; it goes with the next message", "conversation_id", convID, "error", err)
		return
	}
	if t == nil {
		return
	}
	s.log.InfoContext(ctx, "sending the follow-up a response owed after its last pending request expired", "conversation_id", convID, "turn_id", t.id)
	s.hub.Poke(convID, false)
	go t.Run(context.WithoutCancel(ctx), nil)
}
