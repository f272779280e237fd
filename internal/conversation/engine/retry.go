package engine

import (
	"context"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/turnlimits"
)

// StartRetry prepares the turn that failed last to be sent again, on
// purpose (the person pressed Retry): the recorded decisions that never
// reached upstream, or the last message whose turn ended in an error. What
// may have reached upstream is not repeated: such decisions go as denials.
func (s *Service) StartRetry(ctx context.Context, conversationID string) (*Turn, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t := &Turn{s: s, user: u, id: newID("turn_")}
	err = s.store.Tx(ctx, func(r conversation.Repo) error {
		conv, err := r.Conversations.Get(ctx, u.ID, conversationID, true)
		if err != nil {
			return err
		}
		if conv.Streaming {
			return turnInProgress(conv.ID)
		}
		t.conv = conv
		items, err := r.Conversations.Items(ctx, u.ID, conv.ID)
		if err != nil {
			return err
		}
		if err := failedLast(conv.ID, items); err != nil {
			return err
		}
		t.resendFrom(items)
		if t.previous != "" {
			if err := t.closeOpen(ctx, r); err != nil {
				return err
			}
		}
		if t.userText == "" {
			t.kind = "decisions"
			if !t.hasRealAnswer() {
				return nothingToRetry(conv.ID)
			}
		}
		t.claim()
		return t.open(ctx, r)
	})
	if err != nil {
		return nil, turnlimits.Error(s.decider.limits, err, false)
	}
	return t, nil
}

// failedLast refuses a retry unless the conversation's transcript (items)
// ends in an error that is not the person's stop.
func failedLast(id string, items []conversation.Item) error {
	if len(items) == 0 || items[len(items)-1].Type != conversation.ItemError {
		return nothingToRetry(id)
	}
	if e := items[len(items)-1].Error; e != nil && e.Code == conversation.CodeStoppedByUser {
		// The person stopped it: sending its denials now would give
		// the model the turn the stop withheld. They go with the next message.
		return nothingToRetry(id)
	}
	return nil
}

// resendFrom sets what the retried turn sends again: it goes on from the
// conversation's last response, with the last message of items if no
// response completed after it.
func (t *Turn) resendFrom(items []conversation.Item) {
	if t.conv.LastResponseID != nil {
		t.previous = *t.conv.LastResponseID
	}
	// The last message, if no response completed after it.
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		if it.ResponseID != "" && it.ResponseID == t.previous {
			break
		}
		if it.Type == conversation.ItemUserMessage {
			t.kind, t.userText = "message", it.Text
			break
		}
	}
}

// hasRealAnswer reports whether a decision turn carries a decision the
// person made that has not reached upstream yet.
func (t *Turn) hasRealAnswer() bool {
	for _, a := range t.answers {
		if a.Reason != interruptedReason && a.Reason != SupersededReason {
			return true
		}
	}
	return false
}

func nothingToRetry(id string) error {
	return apperr.New(apperr.Conflict, "nothing_to_retry",
		"the last turn of conversation %q did not fail, or nothing of it can be sent again; send a new message instead", id)
}
