package engine

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
)

// errTurnEnded says fromTranscript already ended the turn.
var errTurnEnded = errors.New("the turn already ended")

// fromTranscript goes on with a turn whose previous response the provider
// lost: it sends the conversation's own transcript as input instead, with
// no previous_response_id and no approval answers. The approval requests of
// the lost response whose answers never reached the provider expire
// (pending, superseded by this message, or approved and never delivered:
// none of them ran and none can run now); a denial stays a denial. The
// transcript sent says what became of each, so the model can ask again.
// A notice tells the person. Once the new response completes it is the
// conversation's last, and the next turn chains from it as usual.
//
// It returns the new stream, the error of the new request, or errTurnEnded
// when the turn is over already: it ended it itself (the database failed),
// or the conversation was deleted or taken over by another replica.
func (r *relay) fromTranscript(ctx context.Context) (conversation.EventStream, error) {
	t, s := r.t, r.t.s
	var (
		expired []conversation.Approval
		msgs    []conversation.HistoryMessage
		left    int
	)
	gone := false
	err := s.store.Tx(r.store, func(repo conversation.Repo) error {
		still, err := r.stillOurs(repo)
		if err != nil || !still {
			gone = true
			return err
		}
		if expired, err = expireLost(r.store, repo, t, s.now()); err != nil {
			return err
		}
		// The answers were refused with the request, and the new one does
		// not carry them: they were not sent.
		if err := repo.Approvals.UnmarkSent(r.store, t.id); err != nil {
			return err
		}
		items, err := repo.Conversations.Items(r.store, t.user.ID, t.conv.ID)
		if err != nil {
			return err
		}
		aps, err := repo.Approvals.List(r.store, t.user.ID, t.conv.ID, nil, false)
		if err != nil {
			return err
		}
		byID := make(map[string]conversation.Approval, len(aps))
		for _, a := range aps {
			byID[a.ID] = a
		}
		msgs, left = conversation.History(items, byID)
		return nil
	})
	if gone && err == nil {
		return nil, errTurnEnded // deleted, or taken over by another replica, which ended it
	}
	if err != nil {
		s.log.ErrorContext(ctx, "continuing from the transcript failed", "conversation_id", t.conv.ID, "error", err)
		r.fail(conversation.TurnError{Code: "storage_failed", Message: "the model's provider no longer has this conversation's previous response, " +
			"and the transcript to continue from could not be read or updated; try again", Retryable: true})
		return nil, errTurnEnded
	}
	// Nothing of the answers reaches the provider: they are not marked as
	// answered by the new response.
	t.answers, t.answerIDs = nil, nil
	for _, a := range expired {
		r.sink.Send(conversation.EventNameDecision, decisionEvent(a, nil))
	}
	r.notice(conversation.Notice{Code: conversation.NoticeProviderStateLost, Message: conversation.LostMessage(len(msgs)-1, left, expired)})
	s.log.WarnContext(ctx, "the provider lost the previous response; continuing from the transcript", "conversation_id", t.conv.ID,
		"previous_response_id", t.previous, "entries", len(msgs)-1, "left_out", left, "expired", len(expired))
	// The transcript's request lists every server again: a 424 drops one.
	return r.stream(ctx, conversation.UpstreamRequest{ConversationID: t.conv.ID, TurnID: t.id, History: msgs, Tools: r.groups, Retry: true})
}

// expireLost expires the approval requests of t's lost previous response
// whose answer never reached the provider, in repo's transaction, and
// returns them as stored. Toolgate closes them: they name no decider.
func expireLost(ctx context.Context, repo conversation.Repo, t *Turn, now time.Time) ([]conversation.Approval, error) {
	aps, err := repo.Approvals.OfResponse(ctx, t.user.ID, t.conv.ID, t.previous)
	if err != nil {
		return nil, err
	}
	mayHaveRun := map[string]bool{}
	for _, ans := range t.answers {
		mayHaveRun[ans.ApprovalRequestID] = ans.Reason == interruptedReason
	}
	var out []conversation.Approval
	for _, a := range aps {
		if a.AnsweredIn != nil || mayHaveRun[a.ID] {
			continue // reached (or may have reached) the provider in another response: not this loss's to settle
		}
		reason := conversation.ExpiredReason
		switch a.State {
		case conversation.Pending, conversation.Superseded:
		case conversation.Approved:
			reason = conversation.ExpiredApprovedReason
		default:
			continue
		}
		was := a.State
		a.State, a.DecidedAt, a.DecisionReason = conversation.Expired, &now, &reason
		a.DecidedBy, a.DecidedByID = nil, nil
		if err := repo.Approvals.Decide(ctx, t.user.ID, a); err != nil {
			return nil, err
		}
		if err := t.s.keeper.AuditClosed(ctx, repo, a, was, record.ClosedByProviderLost, nil); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
