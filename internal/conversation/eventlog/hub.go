package eventlog

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Hub wakes the event streams open in this process when their
// conversation has new events: at once for events this process stored,
// through OnEvents for events another replica stored. It also keeps, for
// each conversation with a stream open here, the events this process
// stored last (publish), so that a stream takes them from memory rather
// than reading them back from Postgres: the same events, with the same
// ids, as a read would return.
type Hub struct {
	store      conversation.Store // where streams read events and a turn's log stores them
	eventStore conversation.Store // where writer stores text deltas (Options.EventStore)
	observer   conversation.Observer
	writer     deltaWriter // stores the running turns' text deltas together

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

// Options are a Hub's settings; the zero value of each field is its
// default.
type Options struct {
	// EventStore is where the writer of text deltas stores them (the same
	// database on connections of its own); nil: the hub's store.
	EventStore conversation.Store
	// Observer hears what metrics count; nil: NopObserver.
	Observer conversation.Observer
}

// New returns a Hub whose streams read store and whose turns' logs store
// their events there, set up by opts.
func New(store conversation.Store, opts Options) *Hub {
	h := &Hub{store: store, eventStore: opts.EventStore, observer: opts.Observer}
	h.writer.h, h.writer.nudge = h, make(chan struct{}, 1)
	if h.eventStore == nil {
		h.eventStore = store
	}
	if h.observer == nil {
		h.observer = conversation.NopObserver{}
	}
	return h
}

// topic is one conversation's open streams here and its recent events.
type topic struct {
	subs map[*Subscription]struct{}
	// recent holds events with consecutive ids, handed over by this
	// process: text deltas as soon as a turn sent them, other events once
	// committed. It keeps what some stream here has yet to read and what
	// is not settled yet (a delta not yet stored: a stream that reads the
	// store would not find it), never more than maxRecent (a stream
	// further behind reads from Postgres). Its elements are never written
	// again once appended, so a stream may keep a slice of it.
	recent []conversation.StoredEvent
	// high is the highest id handed over here; settled the highest below
	// which every event handed over is stored (or never will be).
	high, settled int64
}

// maxRecent bounds the events kept in memory per conversation.
const maxRecent = 1024

func (h *Hub) add(sub *Subscription) {
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

func (h *Hub) remove(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[sub.conv]; t != nil {
		delete(t.subs, sub)
		if len(t.subs) == 0 {
			delete(h.topics, sub.conv)
		}
	}
}

// Poke wakes conv's subscriptions (all of them when conv is "").
func (h *Hub) Poke(conv string, deleted bool) {
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
		sub.signal()
	}
}

// Begin says this process is about to store events of conv; Publish or
// End must follow.
func (h *Hub) Begin(conv string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.writing == nil {
		h.writing, h.notified = map[string]int{}, map[string]int64{}
	}
	h.writing[conv]++
}

// End closes a Begin whose write stored nothing to hand over (it failed,
// or the conversation is gone): conv's streams look at the store.
func (h *Hub) End(conv string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done(conv)
	if t := h.topics[conv]; t != nil {
		t.wake(false)
	}
}

// done closes a Begin; it returns the highest id announced meanwhile.
func (h *Hub) done(conv string) int64 {
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

// Publish closes a Begin: it hands the events it stored and committed
// (consecutive ids) to conv's streams here, and wakes them.
func (h *Hub) Publish(conv string, evs []conversation.StoredEvent) {
	h.mu.Lock()
	notified := h.done(conv)
	t := h.topics[conv]
	if t == nil || len(evs) == 0 {
		h.mu.Unlock()
		return // no stream here: nobody to hand them to
	}
	t.settled = max(t.settled, evs[len(evs)-1].ID)
	direct := t.hand(evs)
	if notified > evs[len(evs)-1].ID {
		// Announced meanwhile and stored by someone else, after these.
		t.wake(false)
	}
	h.mu.Unlock()
	writeDirect(direct, evs)
}

// Hand gives a running turn's text delta, numbered by the turn and not yet
// stored, to conv's streams here at once. The writer stores it behind and
// says so (Settled).
func (h *Hub) Hand(conv string, ev conversation.StoredEvent) {
	h.mu.Lock()
	t := h.topics[conv]
	if t == nil {
		h.mu.Unlock()
		return
	}
	evs := []conversation.StoredEvent{ev}
	direct := t.hand(evs)
	h.mu.Unlock()
	writeDirect(direct, evs)
}

// Settled says conv's events up to id are stored, or never will be (their
// write failed, the conversation is gone): the streams here that are
// behind what the hub holds read them from the store now.
func (h *Hub) Settled(conv string, id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[conv]
	if t == nil {
		return
	}
	t.settled = max(t.settled, id)
	first := t.high + 1
	if len(t.recent) > 0 {
		first = t.recent[0].ID
	}
	for sub := range t.subs {
		if sub.last.Load()+1 < first {
			sub.dirty = true
			sub.signal()
		}
	}
	t.trim()
}

// hand appends evs to what the topic holds and wakes its streams, except
// those it returns: streams that write directly (Subscription.Direct) and
// have every event before evs, whose write token it took and which it
// counts as having read evs. The caller writes evs to them (writeDirect)
// once it has let go of the hub's lock.
func (t *topic) hand(evs []conversation.StoredEvent) (direct []*Subscription) {
	switch n := len(t.recent); {
	case n > 0 && evs[0].ID == t.recent[n-1].ID+1:
		t.recent = append(t.recent, evs...)
	case n == 0 || evs[0].ID > t.recent[n-1].ID:
		// A gap (events stored elsewhere in between): start again; a
		// stream before the gap reads it from the store.
		t.recent = evs
	default:
		return nil // older than what is held (cannot happen: one writer hands over in order)
	}
	first, last := evs[0].ID, evs[len(evs)-1].ID
	t.high = max(t.high, last)
	for sub := range t.subs {
		if sub.direct != nil && !sub.dirty && sub.last.Load() == first-1 && sub.wmu.TryLock() {
			if !sub.done && sub.last.Load() == first-1 {
				sub.last.Store(last)
				direct = append(direct, sub)
				continue
			}
			sub.wmu.Unlock()
		}
		sub.signal()
	}
	t.trim()
	return direct
}

// writeDirect writes evs to the streams hand returned and gives back their
// write tokens; a stream whose write says it is done is woken to end.
func writeDirect(subs []*Subscription, evs []conversation.StoredEvent) {
	for _, sub := range subs {
		sub.directs.Add(1)
		if sub.direct(evs) {
			sub.done = true
			sub.signal()
		}
		sub.wmu.Unlock()
	}
}

// trim keeps only what some stream here has yet to read or is not
// settled, and at most maxRecent events.
func (t *topic) trim() {
	if len(t.recent) == 0 {
		return
	}
	keep := t.recent[len(t.recent)-1].ID
	for sub := range t.subs {
		keep = min(keep, sub.last.Load())
	}
	keep = min(keep, t.settled)
	drop := int(keep - t.recent[0].ID + 1)
	drop = max(drop, len(t.recent)-maxRecent)
	if drop > 0 {
		t.recent = t.recent[min(drop, len(t.recent)):]
	}
	if len(t.recent) == 0 {
		t.recent = nil
	}
}

// take returns the events after sub's last that the hub holds for its
// conversation, if it holds the very next one. Without them, read says
// whether the store must be read: it may hold events the hub does not
// (sub is dirty, or behind what the hub holds); the read is then due, and
// sub no longer dirty.
func (h *Hub) take(sub *Subscription) (evs []conversation.StoredEvent, read bool) {
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
func (h *Hub) due(sub *Subscription) {
	h.mu.Lock()
	sub.dirty = true
	h.mu.Unlock()
}

// notify acts on an announcement that conv's events up to id are stored:
// it wakes conv's streams here unless this process handed them those
// events already, or is storing events of conv (whose publish will wake
// them, and also for id when id is beyond what it published).
func (h *Hub) notify(conv string, id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[conv]
	if t == nil {
		return
	}
	if t.high >= id {
		return // handed over here already (a stream behind reads it when Settled)
	}
	if h.writing[conv] > 0 {
		h.notified[conv] = max(h.notified[conv], id)
		return
	}
	t.wake(false)
}

// subscribers counts the open subscriptions (for metrics).
func (h *Hub) subscribers() int {
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
func (h *Hub) OnEventsNotification(payload []byte) {
	var n conversation.EventsNotification
	if err := json.Unmarshal(payload, &n); err != nil {
		h.Poke("", false)
		return
	}
	if n.C != "" {
		h.OnEventsUpTo(n.C, n.ID)
	}
	for _, b := range n.B {
		h.OnEventsUpTo(b.C, b.ID)
	}
}

// OnEventsUpTo is OnEvents for a notification that names the last id
// stored: the streams here are not woken when this process stored those
// events itself and has handed them over already.
func (h *Hub) OnEventsUpTo(conv string, last int64) { h.notify(conv, last) }

// OnReconnect is called when the notification listener (re)connected:
// notifications may have been missed, so every stream looks again.
func (h *Hub) OnReconnect() { h.Poke("", false) }

// StreamReads counts the reads of the event streams open in this process:
// those served from memory (events this process stored) and those that
// read the store.
func (h *Hub) StreamReads() (memory, store int64) {
	return h.fromMemory.Load(), h.fromStore.Load()
}

// Subscribers is how many event streams are open in this process.
func (h *Hub) Subscribers() int { return h.subscribers() }
