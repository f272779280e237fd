package inbox

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Hub tells each open inbox stream of this replica when something may have
// changed in its person's inbox. It hears every replica's committed
// conversation events (the notifications on conversation.ChannelEvents,
// fed by cmd/api): a request asked, decided, expired or withdrawn is an
// event of its conversation. Each names only a conversation, so the hub
// looks up (and keeps) conversations' owners, and wakes the watchers of
// the owner; what changed, the watcher reads again through the API's own
// scoped query. Nothing is read when no inbox stream is open.
type Hub struct {
	owners Store
	log    *slog.Logger

	mu       sync.Mutex
	watchers map[string]map[*Watcher]struct{} // user id -> its open streams
	ownerOf  map[string]string                // conversation id -> owner id (owners never change)
	unknown  map[string]struct{}              // conversations whose owner is being looked up
	looking  bool                             // a lookup goroutine runs
}

// maxOwners bounds the owners the hub keeps; past it, it starts over.
const maxOwners = 50_000

// NewHub returns a hub that looks owners up in store.
func NewHub(store Store, log *slog.Logger) *Hub {
	return &Hub{owners: store, log: log, watchers: map[string]map[*Watcher]struct{}{},
		ownerOf: map[string]string{}, unknown: map[string]struct{}{}}
}

// Watcher is one open inbox stream's doorbell.
type Watcher struct {
	h    *Hub
	user string
	ring chan struct{}
}

// Watch returns a watcher of user's inbox; Close it when the stream ends.
func (h *Hub) Watch(user string) *Watcher {
	w := &Watcher{h: h, user: user, ring: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watchers[user] == nil {
		h.watchers[user] = map[*Watcher]struct{}{}
	}
	h.watchers[user][w] = struct{}{}
	return w
}

// Ready receives when the inbox may have changed since it last did.
func (w *Watcher) Ready() <-chan struct{} { return w.ring }

// Close stops w.
func (w *Watcher) Close() {
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watchers[w.user], w)
	if len(h.watchers[w.user]) == 0 {
		delete(h.watchers, w.user)
	}
}

func (w *Watcher) wake() {
	select {
	case w.ring <- struct{}{}:
	default:
	}
}

// OnEventsNotification acts on a notification on conversation.ChannelEvents:
// the watchers of each named conversation's owner are woken. A payload it
// cannot read wakes every watcher.
func (h *Hub) OnEventsNotification(payload []byte) {
	h.mu.Lock()
	idle := len(h.watchers) == 0
	h.mu.Unlock()
	if idle {
		return
	}
	var n conversation.EventsNotification
	if err := json.Unmarshal(payload, &n); err != nil {
		h.WakeAll()
		return
	}
	convs := make([]string, 0, 1+len(n.B))
	if n.C != "" {
		convs = append(convs, n.C)
	}
	for _, b := range n.B {
		convs = append(convs, b.C)
	}
	h.conversationsChanged(convs)
}

// OnSignal acts on a notification on conversation.ChannelSignals: a
// deleted conversation takes its pending requests with it, so every
// watcher looks again (the conversation, gone, has no owner to look up).
func (h *Hub) OnSignal(payload []byte) {
	var sig conversation.Signal
	if json.Unmarshal(payload, &sig) == nil && sig.Op == conversation.SignalDeleted {
		h.WakeAll()
	}
}

// WakeAll wakes every watcher (the listener reconnected: notifications may
// have been missed).
func (h *Hub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ws := range h.watchers {
		for w := range ws {
			w.wake()
		}
	}
}

// conversationsChanged wakes the watchers of convs' owners, looking up the
// owners not known yet in the background.
func (h *Hub) conversationsChanged(convs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range convs {
		owner, known := h.ownerOf[c]
		if !known {
			h.unknown[c] = struct{}{}
			continue
		}
		for w := range h.watchers[owner] {
			w.wake()
		}
	}
	if len(h.unknown) > 0 && !h.looking {
		h.looking = true
		go h.lookUp()
	}
}

// lookUp looks up the owners of the unknown conversations until none is
// left, waking their watchers.
func (h *Hub) lookUp() {
	for {
		h.mu.Lock()
		if len(h.unknown) == 0 {
			h.looking = false
			h.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(h.unknown))
		for c := range h.unknown {
			ids = append(ids, c)
		}
		clear(h.unknown)
		h.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		owners, err := h.owners.Owners(ctx, ids)
		cancel()
		if err != nil {
			// Not knowing whose it is, everyone looks again.
			h.log.Warn("look up the owners of conversations for the inbox streams", "error", err)
			h.WakeAll()
			continue
		}
		h.learned(owners)
	}
}

// learned keeps owners and wakes their watchers.
func (h *Hub) learned(owners map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ownerOf)+len(owners) > maxOwners {
		clear(h.ownerOf)
	}
	for c, owner := range owners {
		h.ownerOf[c] = owner
		for w := range h.watchers[owner] {
			w.wake()
		}
	}
}
