package inbox

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// owners is a Store that only knows conversations' owners, counting its
// lookups.
type owners struct {
	Store
	mu      sync.Mutex
	of      map[string]string
	lookups int
}

func (o *owners) Owners(_ context.Context, ids []string) (map[string]string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lookups++
	out := map[string]string{}
	for _, id := range ids {
		if owner, ok := o.of[id]; ok {
			out[id] = owner
		}
	}
	return out, nil
}

func (o *owners) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lookups
}

func rang(w *Watcher, within time.Duration) bool {
	select {
	case <-w.Ready():
		return true
	case <-time.After(within):
		return false
	}
}

// A conversation's events ring its owner's watchers only, the owner looked
// up once; an unreadable payload or a deletion rings everyone; nothing is
// looked up with no watcher open. Catches: waking every watcher for every
// event (another person's stream hears of ana's requests), a lookup per
// event, lookups while nobody watches.
func TestHub_RingsOnlyTheOwnersWatchers(t *testing.T) {
	st := &owners{of: map[string]string{"conv_a": "ana", "conv_b": "ben"}}
	h := NewHub(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.OnEventsNotification([]byte(`{"c":"conv_a","id":3}`))
	if n := st.count(); n != 0 {
		t.Fatalf("%d lookups with no watcher open", n)
	}
	ana, ben := h.Watch("ana"), h.Watch("ben")
	defer ana.Close()
	defer ben.Close()

	h.OnEventsNotification([]byte(`{"c":"conv_a","id":4}`))
	if !rang(ana, time.Second) || rang(ben, 50*time.Millisecond) {
		t.Fatal("want ana's watcher rung, ben's not")
	}
	h.OnEventsNotification([]byte(`{"b":[{"c":"conv_a","id":5},{"c":"conv_gone","id":1}]}`))
	if !rang(ana, time.Second) || rang(ben, 50*time.Millisecond) {
		t.Fatal("a batch: want ana's watcher rung, ben's not")
	}
	time.Sleep(20 * time.Millisecond)
	if n := st.count(); n != 2 { // conv_a once, conv_gone once
		t.Errorf("%d lookups, want 2 (owners are kept)", n)
	}
	h.OnEventsNotification([]byte(`not json`))
	if !rang(ana, time.Second) || !rang(ben, time.Second) {
		t.Error("an unreadable payload: want everyone rung")
	}
	h.OnSignal([]byte(`{"op":"deleted","c":"conv_b"}`))
	if !rang(ana, time.Second) || !rang(ben, time.Second) {
		t.Error("a deletion: want everyone rung")
	}
	h.OnSignal([]byte(`{"op":"cancel","c":"conv_b"}`))
	if rang(ana, 50*time.Millisecond) || rang(ben, 50*time.Millisecond) {
		t.Error("a cancel rang a watcher")
	}
}
