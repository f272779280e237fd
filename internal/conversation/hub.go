package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// The channels every replica listens on (Postgres LISTEN/NOTIFY): a
// committed batch of a conversation's events, {"c": id, "id": last}; and
// Signal as JSON.
const (
	ChannelEvents  = "toolgate_events"
	ChannelSignals = "toolgate_signals"
)

// Signal asks every replica to act on a conversation or a user: the one
// running the turn acts, the others ignore it.
type Signal struct {
	Op             string `json:"op"` // SignalCancel, SignalDeleted, SignalStopUser
	ConversationID string `json:"c,omitempty"`
	Turn           string `json:"turn,omitempty"`
	UserID         string `json:"u,omitempty"`
}

// Signal ops.
const (
	SignalCancel   = "cancel"    // cancel Turn in ConversationID
	SignalDeleted  = "deleted"   // ConversationID was deleted: end its streams
	SignalStopUser = "stop_user" // an admin disabled UserID: stop its turns
)

// EventNameDeleted ends the event streams of a conversation that was deleted.
const EventNameDeleted = "conversation.deleted"

// ErrDeleted ends a subscription: the conversation was deleted.
var ErrDeleted = errors.New("the conversation was deleted")

// hub wakes the event streams open in this process when their
// conversation has new events: at once for events this process stored,
// through OnEvents for events another replica stored.
type hub struct {
	mu     sync.Mutex
	topics map[string]map[*Subscription]struct{}
}

// Subscription reads one conversation's events from the store, after the
// last one it returned, waking when the hub says there are new ones (and
// every pollEvery regardless, in case a notification was lost).
type Subscription struct {
	s       *Service
	conv    string
	last    int64
	wake    chan struct{}
	deleted chan struct{}
	once    sync.Once
}

// pollEvery bounds how long a stream can miss events whose notification
// was lost (a listener reconnecting).
const pollEvery = 3 * time.Second

// eventBatch bounds one read of a subscription.
const eventBatch = 500

func (h *hub) add(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.topics == nil {
		h.topics = map[string]map[*Subscription]struct{}{}
	}
	t := h.topics[sub.conv]
	if t == nil {
		t = map[*Subscription]struct{}{}
		h.topics[sub.conv] = t
	}
	t[sub] = struct{}{}
}

func (h *hub) remove(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[sub.conv]; t != nil {
		delete(t, sub)
		if len(t) == 0 {
			delete(h.topics, sub.conv)
		}
	}
}

// poke wakes conv's subscriptions (all of them when conv is "").
func (h *hub) poke(conv string, deleted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c, t := range h.topics {
		if conv != "" && c != conv {
			continue
		}
		for sub := range t {
			if deleted {
				sub.once.Do(func() { close(sub.deleted) })
			}
			select {
			case sub.wake <- struct{}{}:
			default:
			}
		}
	}
}

// subscribers counts the open subscriptions (for metrics).
func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.topics {
		n += len(t)
	}
	return n
}

// OnEvents is called when any replica stored events of conv.
func (s *Service) OnEvents(conv string) { s.hub.poke(conv, false) }

// OnReconnect is called when the notification listener (re)connected:
// notifications may have been missed, so every stream looks again.
func (s *Service) OnReconnect() { s.hub.poke("", false) }

// OnSignal acts on a signal from any replica (this one included).
func (s *Service) OnSignal(payload []byte) {
	var sig Signal
	if err := json.Unmarshal(payload, &sig); err != nil {
		s.log.Warn("ignoring a malformed signal", "error", err)
		return
	}
	switch sig.Op {
	case SignalCancel:
		if r := s.lookup(sig.ConversationID); r != nil && (sig.Turn == "" || r.turn == sig.Turn) {
			r.cancel(ErrCancelled)
		}
	case SignalDeleted:
		if r := s.lookup(sig.ConversationID); r != nil {
			r.cancel(ErrCancelled)
		}
		s.hub.poke(sig.ConversationID, true)
	case SignalStopUser:
		s.stopUserHere(sig.UserID)
	}
}

// signal sends sig to every replica; this one acts at once.
func (s *Service) signal(ctx context.Context, sig Signal) error {
	raw, _ := json.Marshal(sig)
	s.OnSignal(raw)
	return s.store.Repo().Notify(ctx, ChannelSignals, string(raw))
}

// Events opens the caller's conversation's event stream after the event
// with id after; with after < 0, from the start of the running turn if one
// runs (so a page reloaded mid-answer sees the answer so far), else from
// now. Close it when done.
func (s *Service) Events(ctx context.Context, conversationID string, after int64) (*Subscription, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	conv, err := s.store.Repo().Conversation(ctx, u.ID, conversationID, false)
	if err != nil {
		return nil, err
	}
	if after < 0 {
		after = conv.LastEventID
		if conv.ActiveTurn != "" {
			if start, err := s.store.Repo().TurnStart(ctx, conv.ID, conv.ActiveTurn); err == nil && start >= 0 {
				after = start
			}
		}
	}
	return s.subscribe(conv.ID, after), nil
}

func (s *Service) subscribe(conv string, after int64) *Subscription {
	sub := &Subscription{s: s, conv: conv, last: after, wake: make(chan struct{}, 1), deleted: make(chan struct{})}
	s.hub.add(sub)
	return sub
}

// Close ends the subscription.
func (sub *Subscription) Close() { sub.s.hub.remove(sub) }

// Last is the id of the last event Next returned.
func (sub *Subscription) Last() int64 { return sub.last }

// Next blocks until there are events after the last one returned and
// returns them in order; ErrDeleted once the conversation is deleted, or
// ctx's error.
func (sub *Subscription) Next(ctx context.Context) ([]StoredEvent, error) {
	return sub.NextBefore(ctx, time.Time{})
}

// NextBefore is Next that also returns, with no events and no error, at
// deadline (none when zero): a stream writes its heartbeat then, without a
// goroutine and a ticker of its own.
func (sub *Subscription) NextBefore(ctx context.Context, deadline time.Time) ([]StoredEvent, error) {
	for {
		evs, err := sub.s.store.Repo().EventsAfter(ctx, sub.conv, sub.last, eventBatch)
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 {
			sub.last = evs[len(evs)-1].ID
			return evs, nil
		}
		select {
		case <-sub.deleted:
			return nil, ErrDeleted
		default:
		}
		wait := pollEvery
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return nil, nil
			}
			wait = min(wait, left)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-sub.deleted:
			t.Stop()
			return nil, ErrDeleted
		case <-sub.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Follow opens the stream of a prepared turn: from its first event.
func (s *Service) Follow(t *Turn) *Subscription { return s.subscribe(t.conv.ID, t.after) }

// ConversationID is the conversation the subscription reads.
func (sub *Subscription) ConversationID() string { return sub.conv }

// Resume opens the caller's conversation's events after id after, for a
// client that lost a turn's stream (a POST sent again with Last-Event-ID):
// running says whether a turn still runs, so the stream goes on to its
// terminal event; otherwise the events after after are all there is.
func (s *Service) Resume(ctx context.Context, conversationID string, after int64) (sub *Subscription, running bool, err error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, false, err
	}
	conv, err := s.store.Repo().Conversation(ctx, u.ID, conversationID, false)
	if err != nil {
		return nil, false, err
	}
	return s.subscribe(conv.ID, after), conv.ActiveTurn != "", nil
}

// Subscribers is how many event streams are open in this process.
func (s *Service) Subscribers() int { return s.hub.subscribers() }

// Backlog returns every event after the last one returned, without
// waiting for more.
func (sub *Subscription) Backlog(ctx context.Context) ([]StoredEvent, error) {
	var out []StoredEvent
	for {
		evs, err := sub.s.store.Repo().EventsAfter(ctx, sub.conv, sub.last, eventBatch)
		if err != nil || len(evs) == 0 {
			return out, err
		}
		sub.last = evs[len(evs)-1].ID
		out = append(out, evs...)
	}
}
