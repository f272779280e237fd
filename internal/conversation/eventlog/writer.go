package eventlog

import (
	"context"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// deltaWriter stores the text deltas of every turn running in this process
// behind the streams (group commit): a turn numbers a delta, hands it to
// the streams open here and to the writer, and reads on from upstream; one
// goroutine, alive while there is something to store, writes everything
// handed over since its last write in one statement (PutMany: one round
// trip and one commit for every conversation in it, asynchronous where
// the store allows it), then tells the hub what is stored (Hub.Settled):
// another replica's streams read it from there. While a write is in flight
// the next batch gathers, so under load a write carries many deltas of
// many conversations; alone, a delta is written at once.
//
// Each turn's events are stored with the ids its streams saw, and in the
// order it sent them, because every other event a turn stores waits first
// for its deltas (TurnLog.Flush).
type deltaWriter struct {
	h      *Hub
	mu     sync.Mutex
	queue  []queuedDelta
	busy   bool          // a drain goroutine runs
	urgent bool          // a flush marker waits in queue: write at once
	nudge  chan struct{} // wakes a drain that lingers, for a flush marker
}

// queuedDelta is a delta handed over, numbered, or (log and done only) a
// flush marker: done is closed once everything queued before it is stored.
type queuedDelta struct {
	log  *TurnLog
	ev   conversation.StoredEvent
	data any // what the turn sent, for its observer once stored
	done chan struct{}
}

// writeTimeout bounds one write: a database that hangs fails the turns
// whose deltas it holds (storage_failed) rather than holding them forever.
const writeTimeout = 15 * time.Second

// linger is how long the writer lets deltas gather before a write nobody
// waits for: the streams here have them already, so the wait costs no
// client anything (another replica's streams see them that much later, and
// a crash of this replica can lose that much more of a turn's text, which
// the takeover replaces with the stored partial message) and saves most
// writes, commits and notifications under load. At 50 streams of a delta
// every 20 ms, 5 ms gave about 200 writes a second and 102 µs of CPU per
// relayed event; 50 ms gives 20 and 67 µs (make bench, 10 s rounds). A
// flush (a turn about to store another event) does not wait for it.
const linger = 50 * time.Millisecond

func (w *deltaWriter) enqueue(q queuedDelta) {
	w.mu.Lock()
	w.queue = append(w.queue, q)
	start := !w.busy
	w.busy = true
	if q.done != nil && !w.urgent {
		w.urgent = true
		select {
		case w.nudge <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
	if start {
		go w.drain()
	}
}

// drain writes what is queued until nothing is: each batch after lingering
// for more, unless a flush waits.
func (w *deltaWriter) drain() {
	t := time.NewTimer(linger)
	defer t.Stop()
	for {
		w.mu.Lock()
		urgent := w.urgent
		w.mu.Unlock()
		if !urgent {
			t.Reset(linger)
			select {
			case <-t.C:
			case <-w.nudge:
			}
		}
		w.mu.Lock()
		batch := w.queue
		w.queue, w.urgent = nil, false
		if len(batch) == 0 {
			w.busy = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if rest := w.write(batch); len(rest) > 0 {
			w.mu.Lock()
			w.queue = append(rest, w.queue...)
			w.urgent = w.urgent || hasMarker(rest)
			w.mu.Unlock()
		}
	}
}

// hasMarker says whether q holds a flush marker.
func hasMarker(q []queuedDelta) bool {
	for _, d := range q {
		if d.done != nil {
			return true
		}
	}
	return false
}

// write stores batch and returns what it left for the next write: from the
// first delta of a conversation that already has a turn's deltas in this
// write (a turn ended and the next one began), so that each conversation is
// in one batch and its events keep their order.
func (w *deltaWriter) write(batch []queuedDelta) (rest []queuedDelta) {
	groups, markers, rest := gather(batch)
	if len(groups) > 0 {
		w.store(groups)
		w.settle(groups)
	}
	for _, m := range markers {
		close(m)
	}
	return rest
}

// deltaGroup is what one write stores for one conversation: one turn's
// deltas, with consecutive ids.
type deltaGroup struct {
	log   *TurnLog
	evs   []conversation.NewEvent
	datas []any
	top   int64 // the last id
}

// gather groups batch by conversation, in order, up to the first delta of
// a conversation whose group holds another turn's (rest); markers are the
// flush markers before it.
func gather(batch []queuedDelta) (groups []*deltaGroup, markers []chan struct{}, rest []queuedDelta) {
	byConv := map[string]*deltaGroup{}
	for i, q := range batch {
		g := byConv[q.log.conv]
		if g != nil && g.log != q.log {
			rest = batch[i:]
			break
		}
		if q.done != nil {
			markers = append(markers, q.done)
			continue
		}
		if g == nil {
			g = &deltaGroup{log: q.log}
			byConv[q.log.conv] = g
			groups = append(groups, g)
		}
		g.evs = append(g.evs, conversation.NewEvent{Name: q.ev.Name, Data: q.ev.Data})
		g.datas = append(g.datas, q.data)
		g.top = q.ev.ID
	}
	return groups, markers, rest
}

// first is the id of the group's first delta.
func (g *deltaGroup) first() int64 { return g.top - int64(len(g.evs)) + 1 }

// store writes the groups in one statement: when it fails, each group is
// stored on its own and only the turns whose write fails are failed.
func (w *deltaWriter) store(groups []*deltaGroup) {
	in := make([]conversation.ConvEvents, len(groups))
	for i, g := range groups {
		in[i] = conversation.ConvEvents{ConversationID: g.log.conv, Turn: g.log.turn, First: g.first(), Events: g.evs}
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	began := time.Now()
	st := w.h.eventStore
	_, err := st.Repo().Events.PutMany(ctx, in)
	w.h.observer.EventWrite(len(in), time.Since(began))
	if err != nil {
		// One conversation's trouble must not fail the others: store
		// each on its own, and fail only the turns whose write fails.
		for i, b := range in {
			if _, err := st.Repo().Events.Put(ctx, b.ConversationID, b.Turn, b.First, b.Events); err != nil {
				groups[i].log.setErr(err)
			}
		}
	}
}

// settle tells the hub which deltas are stored (or will never be: a write
// that failed, a conversation gone), so that streams here that are behind
// read them from the store; hands the deltas to their turn's observer
// (what it saw, a takeover finds: it is told once they are stored); and
// counts them as no longer outstanding.
func (w *deltaWriter) settle(groups []*deltaGroup) {
	for _, g := range groups {
		w.h.Settled(g.log.conv, g.top)
		if g.log.observer != nil {
			for i, e := range g.evs {
				g.log.observer.Send(e.Name, g.datas[i])
			}
		}
		g.log.outstanding.Add(-int64(len(g.evs)))
	}
}

// Stored is evs as Append or Put stored them, the last with id last.
func Stored(turn string, last int64, evs []conversation.NewEvent) []conversation.StoredEvent {
	out := make([]conversation.StoredEvent, len(evs))
	base := last - int64(len(evs))
	for i, e := range evs {
		out[i] = conversation.StoredEvent{ID: base + int64(i) + 1, TurnID: turn, Name: e.Name, Data: e.Data}
	}
	return out
}
