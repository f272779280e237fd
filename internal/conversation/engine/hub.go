package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// hub wakes the event streams open in this process when their
// conversation has new events: at once for events this process stored,
// through OnEvents for events another replica stored. It also keeps, for
// each conversation with a stream open here, the events this process
// stored last (publish), so that a stream takes them from memory rather
// than reading them back from Postgres: the same events, with the same
// ids, as a read would return.
type hub struct {
	mu     sync.Mutex
	topics map[string]*topic
	// writing counts, per conversation, this process's writes of its
	// events in flight (begin .. publish or end); notified is the highest
	// id another notification announced for it meanwhile: the write's own
	// announcement may arrive before the write returns.
	writing  map[string]int
	notified map[string]int64
	// fromMemory and fromStore count the reads of streams that took events
	// from memory and from the store.
	fromMemory, fromStore atomic.Int64
}

// topic is one conversation's open streams here and its recent events.
type topic struct {
	subs map[*Subscription]struct{}
	// recent holds events with consecutive ids, stored by this process and
	// committed; trimmed to what the slowest stream here has not read yet,
	// and never longer than maxRecent (a stream further behind reads from
	// Postgres). Its elements are never written again once appended, so
	// a stream may keep a slice of it.
	recent []conversation.StoredEvent
}

// maxRecent bounds the events kept in memory per conversation.
const maxRecent = 256

// Subscription reads one conversation's events, after the last one it
// returned: from the hub's memory when it holds the next ones, else from
// the store, waking when the hub says there are new ones (and every
// pollEvery regardless, in case a notification was lost).
type Subscription struct {
	s       *Service
	conv    string
	last    atomic.Int64
	wake    chan struct{}
	deleted chan struct{}
	once    sync.Once
	// dirty (under the hub's lock) says the store may hold events the hub
	// does not: set at the start, by every wake that is not a publish, and
	// when a poll is due; cleared by the read of the store that follows.
	dirty bool
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
		h.topics = map[string]*topic{}
	}
	t := h.topics[sub.conv]
	if t == nil {
		t = &topic{subs: map[*Subscription]struct{}{}}
		h.topics[sub.conv] = t
	}
	t.subs[sub] = struct{}{}
}

func (h *hub) remove(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[sub.conv]; t != nil {
		delete(t.subs, sub)
		if len(t.subs) == 0 {
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
		t.wake(deleted)
	}
}

func (t *topic) wake(deleted bool) {
	for sub := range t.subs {
		sub.dirty = true
		if deleted {
			sub.once.Do(func() { close(sub.deleted) })
		}
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

// begin says this process is about to store events of conv; publish or
// end must follow.
func (h *hub) begin(conv string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.writing == nil {
		h.writing, h.notified = map[string]int{}, map[string]int64{}
	}
	h.writing[conv]++
}

// end closes a begin whose write stored nothing to hand over (it failed,
// or the conversation is gone): conv's streams look at the store.
func (h *hub) end(conv string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done(conv)
	if t := h.topics[conv]; t != nil {
		t.wake(false)
	}
}

// done closes a begin; it returns the highest id announced meanwhile.
func (h *hub) done(conv string) int64 {
	if h.writing[conv] == 0 {
		return 0
	}
	n := h.notified[conv]
	if h.writing[conv]--; h.writing[conv] == 0 {
		delete(h.writing, conv)
		delete(h.notified, conv)
	}
	return n
}

// publish closes a begin: it hands the events it stored and committed
// (consecutive ids) to conv's streams here, and wakes them.
func (h *hub) publish(conv string, evs []conversation.StoredEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	notified := h.done(conv)
	t := h.topics[conv]
	if t == nil || len(evs) == 0 {
		return // no stream here: nobody to hand them to
	}
	if notified > evs[len(evs)-1].ID {
		// Announced meanwhile and stored by someone else, after these.
		defer t.wake(false)
	}
	switch n := len(t.recent); {
	case n > 0 && evs[0].ID == t.recent[n-1].ID+1:
		t.recent = append(t.recent, evs...)
	case n == 0 || evs[0].ID > t.recent[n-1].ID:
		// A gap (events stored elsewhere in between): start again; a
		// stream before the gap reads it from the store.
		t.recent = evs
	default:
		return // older than what is held (cannot happen: one writer publishes in order)
	}
	// Keep only what some stream here has yet to read.
	slowest := t.recent[len(t.recent)-1].ID
	for sub := range t.subs {
		slowest = min(slowest, sub.last.Load())
	}
	drop := int(slowest - t.recent[0].ID + 1)
	drop = max(drop, len(t.recent)-maxRecent)
	if drop > 0 {
		t.recent = t.recent[min(drop, len(t.recent)):]
	}
	if len(t.recent) == 0 {
		t.recent = nil
	}
	for sub := range t.subs {
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

// take returns the events after sub's last that the hub holds for its
// conversation, if it holds the very next one. Without them, read says
// whether the store must be read: it may hold events the hub does not
// (sub is dirty, or behind what the hub holds); the read is then due, and
// sub no longer dirty.
func (h *hub) take(sub *Subscription) (evs []conversation.StoredEvent, read bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	after := sub.last.Load()
	t := h.topics[sub.conv]
	if t != nil && len(t.recent) > 0 {
		first, n := t.recent[0].ID, len(t.recent)
		if after+1 >= first && after < t.recent[n-1].ID {
			return t.recent[after+1-first : n : n], false
		}
		if !sub.dirty && after == t.recent[n-1].ID {
			return nil, false
		}
	} else if !sub.dirty {
		return nil, false
	}
	sub.dirty = false
	return nil, true
}

// due marks sub dirty: a poll is due (a notification may have been lost).
func (h *hub) due(sub *Subscription) {
	h.mu.Lock()
	sub.dirty = true
	h.mu.Unlock()
}

// notify acts on an announcement that conv's events up to id are stored:
// it wakes conv's streams here unless this process handed them those
// events already, or is storing events of conv (whose publish will wake
// them, and also for id when id is beyond what it published).
func (h *hub) notify(conv string, id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[conv]
	if t == nil {
		return
	}
	if len(t.recent) > 0 && t.recent[len(t.recent)-1].ID >= id {
		return
	}
	if h.writing[conv] > 0 {
		h.notified[conv] = max(h.notified[conv], id)
		return
	}
	t.wake(false)
}

// subscribers counts the open subscriptions (for metrics).
func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.topics {
		n += len(t.subs)
	}
	return n
}

// OnEventsNotification acts on a notification on ChannelEvents (its raw
// payload): OnEventsUpTo for each conversation it names; a payload it
// cannot read wakes every stream here.
func (s *Service) OnEventsNotification(payload []byte) {
	var n conversation.EventsNotification
	if err := json.Unmarshal(payload, &n); err != nil {
		s.hub.poke("", false)
		return
	}
	if n.C != "" {
		s.OnEventsUpTo(n.C, n.ID)
	}
	for _, b := range n.B {
		s.OnEventsUpTo(b.C, b.ID)
	}
}

// OnEventsUpTo is OnEvents for a notification that names the last id
// stored: the streams here are not woken when this process stored those
// events itself and has handed them over already.
func (s *Service) OnEventsUpTo(conv string, last int64) { s.hub.notify(conv, last) }

// OnReconnect is called when the notification listener (re)connected:
// notifications may have been missed, so every stream looks again.
func (s *Service) OnReconnect() { s.hub.poke("", false) }

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
		s.hub.poke(sig.ConversationID, true)
	case conversation.SignalStopUser:
		s.stopUserHere(sig.UserID)
	}
}

// signal sends sig to every replica; this one acts at once.
func (s *Service) signal(ctx context.Context, sig conversation.Signal) error {
	raw, _ := json.Marshal(sig)
	s.OnSignal(raw)
	return s.store.Repo().Notify(ctx, conversation.ChannelSignals, string(raw))
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
	sub := &Subscription{s: s, conv: conv, wake: make(chan struct{}, 1), deleted: make(chan struct{}), dirty: true}
	sub.last.Store(after)
	s.hub.add(sub)
	return sub
}

// Close ends the subscription.
func (sub *Subscription) Close() { sub.s.hub.remove(sub) }

// Last is the id of the last event Next returned.
func (sub *Subscription) Last() int64 { return sub.last.Load() }

// Next blocks until there are events after the last one returned and
// returns them in order; ErrDeleted once the conversation is deleted, or
// ctx's error.
func (sub *Subscription) Next(ctx context.Context) ([]conversation.StoredEvent, error) {
	return sub.NextBefore(ctx, time.Time{})
}

// NextBefore is Next that also returns, with no events and no error, at
// deadline (none when zero): a stream writes its heartbeat then, without a
// goroutine and a ticker of its own.
func (sub *Subscription) NextBefore(ctx context.Context, deadline time.Time) ([]conversation.StoredEvent, error) {
	for {
		evs, read := sub.s.hub.take(sub)
		switch {
		case evs != nil:
			sub.s.hub.fromMemory.Add(1)
		case read:
			sub.s.hub.fromStore.Add(1)
			var err error
			if evs, err = sub.s.store.Repo().EventsAfter(ctx, sub.conv, sub.last.Load(), eventBatch); err != nil {
				sub.s.hub.due(sub) // read again next time
				return nil, err
			}
			if len(evs) == eventBatch {
				sub.s.hub.due(sub) // there may be more
			}
		}
		if len(evs) > 0 {
			sub.last.Store(evs[len(evs)-1].ID)
			return evs, nil
		}
		select {
		case <-sub.deleted:
			return nil, conversation.ErrDeleted
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
			return nil, conversation.ErrDeleted
		case <-sub.wake:
		case <-t.C:
			sub.s.hub.due(sub)
		}
		t.Stop()
	}
}

// Follow opens the stream of a prepared turn (its transaction committed):
// from its first event. The turn's opening events come from memory; the
// stream reads the store only when the hub says it may hold more (a gap
// in what this process hands over, a wake from elsewhere, a poll): what
// another writer stored between the turn's commit and now is followed by
// the turn's own events, whose hand-over shows the gap.
func (s *Service) Follow(t *Turn) *Subscription {
	sub := s.subscribe(t.conv.ID, t.after)
	if len(t.opened) > 0 {
		s.hub.publish(t.conv.ID, t.opened)
		s.hub.mu.Lock()
		sub.dirty = false
		s.hub.mu.Unlock()
	}
	return sub
}

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

// StreamReads counts the reads of the event streams open in this process:
// those served from memory (events this process stored) and those that
// read the store.
func (s *Service) StreamReads() (memory, store int64) {
	return s.hub.fromMemory.Load(), s.hub.fromStore.Load()
}

// Subscribers is how many event streams are open in this process.
func (s *Service) Subscribers() int { return s.hub.subscribers() }

// Backlog returns every event after the last one returned, without
// waiting for more.
func (sub *Subscription) Backlog(ctx context.Context) ([]conversation.StoredEvent, error) {
	var out []conversation.StoredEvent
	for {
		evs, err := sub.s.store.Repo().EventsAfter(ctx, sub.conv, sub.last.Load(), eventBatch)
		if err != nil || len(evs) == 0 {
			return out, err
		}
		sub.last.Store(evs[len(evs)-1].ID)
		out = append(out, evs...)
	}
}
