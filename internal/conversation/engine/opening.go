package engine

import (
	"context"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/turnlimits"
)

// mustEvent encodes an event whose payload is one of the event contract's
// types, which always encode.
func mustEvent(name string, data any) conversation.NewEvent { return eventlog.Encode(name, data) }

// opening is what every turn's stream opens with: which conversation and
// turn, the person's message, the decisions recorded.
func (t *Turn) opening() []namedEvent {
	evs := []namedEvent{{conversation.EventNameConversation, conversation.ConversationEvent{ConversationID: t.conv.ID, TurnID: t.id, Kind: t.kind,
		Offline: t.s.info.Offline, Model: t.s.info.Model}}}
	if t.userItem != nil {
		evs = append(evs, namedEvent{conversation.EventNameItem, conversation.ItemEvent{Item: *t.userItem}})
	}
	for _, d := range t.decisions {
		evs = append(evs, namedEvent{conversation.EventNameDecision, d})
	}
	if t.stopped != nil {
		evs = append(evs, namedEvent{conversation.EventNameError, conversation.ErrorEvent(*t.stopped)})
	} else if !t.claimed {
		evs = append(evs, namedEvent{conversation.EventNameCompleted, conversation.CompletedEvent{ResponseID: t.conv.LastResponseID,
			PendingApprovals: len(t.pendingIDs), PendingApprovalIDs: nonNil(t.pendingIDs)}})
	}
	return evs
}

type namedEvent struct {
	name string
	data any
}

func encodeAll(evs []namedEvent) []conversation.NewEvent {
	out := make([]conversation.NewEvent, len(evs))
	for i, e := range evs {
		out[i] = mustEvent(e.name, e.data)
	}
	return out
}

// logOpening stores the turn's opening events in the transaction that
// prepares it, so what the person did (a message, decisions) and its
// events commit together; it notes where the turn's events start. A claimed
// turn records its claim (the lease, the answers marked sent) and reads its
// grants in the same statement.
func (t *Turn) logOpening(ctx context.Context, r conversation.Repo) error {
	if k, ok := ctx.Value(idempotencyKeyCtx{}).(IdempotencyKey); ok {
		// The key's request started this turn: recorded with the turn, so
		// a repeat after its replica died knows that it ran, and which turn
		// to answer from.
		if err := r.Turns.ClaimIdempotencyKey(ctx, t.user.ID, k.Key, k.Holder, t.conv.ID, t.id); err != nil {
			return err
		}
	}
	evs := encodeAll(t.opening())
	stored := func(last int64) {
		t.after, t.last = last-int64(len(evs)), last
		if last > 0 {
			t.opened = eventlog.Stored(t.id, last, evs)
		}
	}
	if !t.claimed {
		last, err := r.Events.Append(ctx, t.conv.ID, t.id, evs)
		if err == nil {
			stored(last)
		}
		return err
	}
	// The opening is the transaction's last statement: it may go with the
	// COMMIT, and Opened hears what it stored once it did.
	message := t.userItem != nil
	t.sent = t.sent || len(t.answerIDs) > 0
	_, _, err := r.Turns.Open(ctx, conversation.TurnOpening{ConversationID: t.conv.ID, TurnID: t.id, Owner: t.user.ID,
		Replica: t.s.replica, LeaseTTL: t.s.leaseTTL, SentIDs: t.answerIDs, Events: evs, Now: t.s.now(),
		Limits: turnlimits.For(t.s.decider.limits, message), Message: message,
		Opened: func(last int64, gs []conversation.Grant) {
			t.grants = grantRefs(gs)
			stored(last)
		}})
	return err
}

// After is the id just before the turn's first event: its stream starts
// after it.
func (t *Turn) After() int64 { return t.after }

// ID is the turn's id; its events carry it.
func (t *Turn) ID() string { return t.id }
