package engine

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
)

// OnSignal acts on a signal from any replica (this one included).
func (s *Service) OnSignal(payload []byte) {
	var sig conversation.Signal
	if err := json.Unmarshal(payload, &sig); err != nil {
		s.log.Warn("ignoring a malformed signal", "error", err)
		return
	}
	switch sig.Op {
	case conversation.SignalCancel:
		if r := s.lookup(sig.ConversationID); r != nil && (sig.Turn == "" || r.turn == sig.Turn) {
			r.cancel(ErrCancelled)
		}
	case conversation.SignalDeleted:
		if r := s.lookup(sig.ConversationID); r != nil {
			r.cancel(ErrCancelled)
		}
		s.hub.Poke(sig.ConversationID, true)
	case conversation.SignalStopUser:
		s.stopUserHere(sig.UserID)
	}
}

// signal sends sig to every replica; this one acts at once.
func (s *Service) signal(ctx context.Context, sig conversation.Signal) error {
	raw, _ := json.Marshal(sig)
	s.OnSignal(raw)
	return s.store.Repo().Events.Notify(ctx, conversation.ChannelSignals, string(raw))
}

// Events opens the caller's conversation's event stream after the event
// with id after; with after < 0, from the start of the running turn if one
// runs (so a page reloaded mid-answer sees the answer so far), else from
// now. Close it when done.
func (s *Service) Events(ctx context.Context, conversationID string, after int64) (*eventlog.Subscription, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	conv, err := s.store.Repo().Conversations.Get(ctx, u.ID, conversationID, false)
	if err != nil {
		return nil, err
	}
	if after < 0 {
		after = conv.LastEventID
		if conv.ActiveTurn != "" {
			if start, err := s.store.Repo().Events.TurnStart(ctx, conv.ID, conv.ActiveTurn); err == nil && start >= 0 {
				after = start
			}
		}
	}
	return s.hub.Subscribe(conv.ID, after), nil
}

// Follow opens the stream of a prepared turn (its transaction committed):
// from its first event (eventlog.Hub.Follow).
func (s *Service) Follow(t *Turn) *eventlog.Subscription {
	return s.hub.Follow(t.conv.ID, t.after, t.opened)
}

// Resume opens the caller's conversation's events after id after, for a
// client that lost a turn's stream (a POST sent again with Last-Event-ID):
// running says whether a turn still runs, so the stream goes on to its
// terminal event; otherwise the events after after are all there is.
func (s *Service) Resume(ctx context.Context, conversationID string, after int64) (sub *eventlog.Subscription, running bool, err error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, false, err
	}
	conv, err := s.store.Repo().Conversations.Get(ctx, u.ID, conversationID, false)
	if err != nil {
		return nil, false, err
	}
	return s.hub.Subscribe(conv.ID, after), conv.ActiveTurn != "", nil
}
