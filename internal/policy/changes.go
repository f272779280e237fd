package policy

import (
	"context"
	"slices"
	"sync"
)

// ChangeKind names what a committed settings change touched, so a page
// knows what to read again. It never carries the change itself: a page
// reads that through the API, as its caller.
type ChangeKind string

// The kinds of change a settings stream says (docs/sse-events.md).
const (
	// ChangeWorkspace is a change policy_version covers: the global
	// settings, a workspace tool policy or lock, a server's default, an
	// argument rule, a server or its tools.
	ChangeWorkspace ChangeKind = "workspace"
	// ChangePersonal is a change to one person's own tool policies; only
	// that person's streams hear of it.
	ChangePersonal ChangeKind = "personal"
	// ChangeCard is a change to a tool's approval card.
	ChangeCard ChangeKind = "card"
	// ChangeDecisionHook is a change to a decision hook (admins only).
	ChangeDecisionHook ChangeKind = "decision_hook"
	// ChangeWebhook is a change to a webhook (admins only).
	ChangeWebhook ChangeKind = "webhook"
	// ChangeServer is a change to a server the workspace version does not
	// follow (its result masking switch).
	ChangeServer ChangeKind = "server"
	// ChangeResync says that changes may have been missed (the
	// notification connection was lost, or a stream resumed behind the
	// version): read everything again.
	ChangeResync ChangeKind = "resync"
)

// Change is one committed change as a replica heard of it.
type Change struct {
	Kind    ChangeKind
	Version int64  // policy_version after a workspace change (0: not known)
	UserID  string // ChangePersonal: whose policies
}

// Changes fans the settings changes every replica commits (heard through
// Postgres notifications) out to the settings streams open on this one.
// A stream that is slow to take them loses nothing: its pending kinds
// merge until it takes them.
type Changes struct {
	mu       sync.Mutex
	version  int64
	watchers map[*Watcher]struct{}
}

// NewChanges returns a hub with no watchers.
func NewChanges() *Changes {
	return &Changes{watchers: map[*Watcher]struct{}{}}
}

// Watcher is one open stream's view of the changes: only those its caller
// may know of.
type Watcher struct {
	hub    *Changes
	userID string
	admin  bool
	ready  chan struct{} // has a value while kinds is not empty
	kinds  []ChangeKind  // guarded by hub.mu
}

// Watch starts watching for the changes userID (an admin or not) may
// know of. Close it when the stream ends.
func (c *Changes) Watch(userID string, admin bool) *Watcher {
	w := &Watcher{hub: c, userID: userID, admin: admin, ready: make(chan struct{}, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers[w] = struct{}{}
	return w
}

// Watching is the number of open watchers.
func (c *Changes) Watching() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watchers)
}

// Seen raises the version known to v and returns the version known.
func (c *Changes) Seen(v int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version = max(c.version, v)
	return c.version
}

// Publish tells every watcher that may know of ch.
func (c *Changes) Publish(ch Change) {
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
func (w *Watcher) sees(ch Change) bool {
	switch ch.Kind {
	case ChangePersonal:
		return ch.UserID != "" && ch.UserID == w.userID
	case ChangeDecisionHook, ChangeWebhook:
		return w.admin
	}
	return true
}

// Ready has a value when changes wait to be taken.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Take returns the kinds changed since the last Take (in the order first
// heard) and the version known now.
func (w *Watcher) Take() (int64, []ChangeKind) {
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

// Version returns policy_version: where a settings stream starts.
func (s *Service) Version(ctx context.Context) (int64, error) {
	v, _, err := s.store.PolicyVersion(ctx, "")
	return v, err
}
