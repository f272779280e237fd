// Package changefeed fans the settings changes every replica commits out
// to the settings streams open on this one.
package changefeed

import (
	"slices"
	"sync"

	"github.com/toolgate/toolgate/internal/policy"
)

// Hub fans the settings changes every replica commits (heard through
// Postgres notifications) out to the settings streams open on this one.
// A stream that is slow to take them loses nothing: its pending kinds
// merge until it takes them.
type Hub struct {
	mu       sync.Mutex
	version  int64
	watchers map[*Watcher]struct{}
}

// New returns a hub with no watchers.
func New() *Hub {
	return &Hub{watchers: map[*Watcher]struct{}{}}
}

// Watcher is one open stream's view of the changes: only those its caller
// may know of.
type Watcher struct {
	hub    *Hub
	userID string
	admin  bool
	ready  chan struct{}       // has a value while kinds is not empty
	kinds  []policy.ChangeKind // guarded by hub.mu
}

// Watch starts watching for the changes userID (an admin or not) may
// know of. Close it when the stream ends.
func (c *Hub) Watch(userID string, admin bool) *Watcher {
	w := &Watcher{hub: c, userID: userID, admin: admin, ready: make(chan struct{}, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers[w] = struct{}{}
	return w
}

// Watching is the number of open watchers.
func (c *Hub) Watching() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watchers)
}

// Seen raises the version known to v and returns the version known.
func (c *Hub) Seen(v int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version = max(c.version, v)
	return c.version
}

// Publish tells every watcher that may know of ch.
func (c *Hub) Publish(ch policy.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version = max(c.version, ch.Version)
	for w := range c.watchers {
		if !w.sees(ch) {
			continue
		}
		if !slices.Contains(w.kinds, ch.Kind) {
			w.kinds = append(w.kinds, ch.Kind)
		}
		select {
		case w.ready <- struct{}{}:
		default: // already signalled
		}
	}
}

// sees reports whether w's caller may know that ch happened: a person's
// own policies are theirs alone, hooks and webhooks are the admins'.
func (w *Watcher) sees(ch policy.Change) bool {
	switch ch.Kind {
	case policy.ChangePersonal:
		return ch.UserID != "" && ch.UserID == w.userID
	case policy.ChangeDecisionHook, policy.ChangeWebhook:
		return w.admin
	}
	return true
}

// Ready has a value when changes wait to be taken.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Take returns the kinds changed since the last Take (in the order first
// heard) and the version known now.
func (w *Watcher) Take() (int64, []policy.ChangeKind) {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	kinds := w.kinds
	w.kinds = nil
	return w.hub.version, kinds
}

// Close stops watching.
func (w *Watcher) Close() {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	delete(w.hub.watchers, w)
}
