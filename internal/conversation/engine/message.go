package engine

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/conversation/turnlimits"
)

// StartMessage records the person's message and prepares its turn. With no
// conversation id, a new conversation is created. Approval requests still
// pending are superseded: denied upstream, in the same request as the
// message, with a reason saying so.
func (s *Service) StartMessage(ctx context.Context, conversationID, input string) (*Turn, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	input = strings.TrimSpace(stripNUL(input))
	switch {
	case input == "":
		return nil, apperr.Invalidf("invalid_input", "input", "input is required: the message to send to the model")
	case utf8.RuneCountInString(input) > conversation.MaxInputLen:
		return nil, apperr.Invalidf("invalid_input", "input", "input must be at most %d characters", conversation.MaxInputLen)
	}
	t := &Turn{s: s, user: u, id: newID("turn_"), kind: "message", userText: input}
	err = s.store.Tx(ctx, func(r conversation.Repo) error {
		// One round trip: the conversation locked (or created), the last
		// response's requests, the message. What it wrote is rolled back
		// if the checks below (or the limits, checked by the opening)
		// refuse.
		m := conversation.MessageStart{Owner: u.ID, ConversationID: conversationID, Item: conversation.Item{Type: conversation.ItemUserMessage, ID: newID("umsg_"), Text: input}}
		if conversationID == "" {
			// In this transaction: a message refused by a limit leaves no
			// empty conversation behind.
			m.NewID, m.Title = newID("conv_"), titleFrom(input)
		}
		st, err := r.Turns.StartMessage(ctx, m)
		if err != nil {
			return err
		}
		conv := st.Conversation
		if conversationID != "" && conv.Streaming {
			return turnInProgress(conv.ID)
		}
		t.conv = conv
		if conv.LastResponseID != nil {
			t.previous = *conv.LastResponseID
			t.dbNow = st.Now
			if err := t.closeApprovals(ctx, r, st.Previous); err != nil {
				return err
			}
		}
		if conv.Title == "" {
			if conv, err = r.Conversations.Rename(ctx, u.ID, conv.ID, titleFrom(input)); err != nil {
				return err
			}
			t.conv = conv
		}
		item := st.Item
		t.userItem = &item
		t.claim()
		return t.open(ctx, r)
	})
	if err != nil {
		return nil, turnlimits.Error(s.decider.limits, err, true)
	}
	for _, a := range t.expired {
		s.observer.ApprovalExpired(a.ID, deref(a.DecidedAt))
	}
	return t, nil
}

// closeOpen answers every approval request of the previous response whose
// answer has not reached upstream: upstream refuses a follow-up that leaves
// one open. Pending ones are superseded; decided ones whose follow-up never
// got through are sent with their decision; ones already answered in an
// interrupted response are denied so they cannot run twice.
func (t *Turn) closeOpen(ctx context.Context, r conversation.Repo) error {
	aps, err := r.Approvals.OfResponse(ctx, t.user.ID, t.conv.ID, t.previous)
	if err != nil {
		return err
	}
	return t.closeApprovals(ctx, r, aps)
}

// closeApprovals is closeOpen over aps, the approval requests of the
// previous response as ResponseApprovals read them (locked) in r.
func (t *Turn) closeApprovals(ctx context.Context, r conversation.Repo, aps []conversation.Approval) error {
	now := t.s.now()
	for _, a := range aps {
		ans := conversation.Answer{ApprovalRequestID: a.ID, ServerLabel: a.ServerLabel, UpstreamLabel: a.UpstreamLabel, ToolName: a.ToolName}
		switch {
		case a.State == conversation.NotRun:
			// It provably did not run (gateway mode): the model is told so,
			// and may ask again.
			ans.Reason = deref(a.DecisionReason)
		case a.AnsweredIn != nil || a.SentInTurn != nil || a.State == conversation.OutcomeUnknown:
			ans.Reason = interruptedReason
		case a.State == conversation.Pending && !t.dbNow.IsZero() && t.s.keeper.TimeIsUp(a, t.dbNow):
			// Its time was up before the message came: expired, as the
			// sweep (which had not run yet) would have recorded it.
			reason := t.s.keeper.ExpiredReason(a)
			a.State, a.DecidedAt, a.DecisionReason = conversation.Expired, &now, &reason
			a.DecidedBy, a.DecidedByID = nil, nil
			if err := r.Approvals.Decide(ctx, t.user.ID, a); err != nil {
				return err
			}
			if err := t.s.keeper.AuditClosed(ctx, r, a, conversation.Pending, record.ClosedByExpiry, nil); err != nil {
				return err
			}
			ans.Reason = reason
			t.decisions = append(t.decisions, decisionEvent(a, nil))
			t.expired = append(t.expired, a)
		case a.State == conversation.Pending:
			reason := SupersededReason
			a.State, a.DecidedAt, a.DecisionReason = conversation.Superseded, &now, &reason
			a.DecidedBy, a.DecidedByID = &t.user.Email, &t.user.ID
			if err := r.Approvals.Decide(ctx, t.user.ID, a); err != nil {
				return err
			}
			if err := t.s.keeper.AuditClosed(ctx, r, a, conversation.Pending, record.ClosedByMessage, &t.user); err != nil {
				return err
			}
			ans.Reason = reason
			t.decisions = append(t.decisions, decisionEvent(a, nil))
		default:
			ans.Approve = a.State == conversation.Approved
			ans.Reason = upstreamReason(a) // the person's reason, after a correction's
		}
		t.answers = append(t.answers, ans)
		t.answerIDs = append(t.answerIDs, a.ID)
	}
	return nil
}
