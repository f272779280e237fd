package engine

import (
	"context"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
)

// What is known of whether the answers a turn carried reached the provider,
// when the turn ends without completing.
const (
	deliveryTaken    = iota // the provider took the request (it streamed); what ran is unknown unless its items said
	deliveryRefused         // the provider refused it before taking it (429, 503, 4xx) or it never left
	deliveryUnknown         // no answer came back: it may have been taken
	deliveryFinished        // the provider ended the response (failed, incomplete): its items said what ran
)

// settleSent records, in the transaction that ends a turn that did not
// complete, what became of the answers it carried: refused ones may be
// sent again (Retry); the others are never sent as approvals again. Where
// the provider's response said (or, read back, says) what ran, approvals
// keep their state; otherwise an approval whose call was not seen to run
// becomes outcome_unknown. It returns the decisions that changed.
func (r *relay) settleSent(ctx context.Context, repo conversation.Repo, e conversation.TurnError, st record.Settled) ([]conversation.DecisionEvent, error) {
	t := r.t
	if len(t.answerIDs) == 0 {
		return nil, nil
	}
	if r.delivery == deliveryRefused && r.response == "" {
		return nil, repo.Approvals.UnmarkSent(ctx, t.id)
	}
	answered := r.response
	if answered == "" {
		answered = record.AnsweredUnknown
	}
	if err := repo.Approvals.MarkAnswered(ctx, t.answerIDs, answered); err != nil {
		return nil, err
	}
	if !t.s.gateway && (r.delivery == deliveryFinished || st.Finished()) {
		return nil, nil
	}
	aps, err := repo.Approvals.Sent(ctx, t.conv.ID, t.id)
	if err != nil {
		return nil, err
	}
	return t.s.keeper.MarkUnknown(ctx, repo, t.user.ID, aps, r.ran, e.Code)
}
