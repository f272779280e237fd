package eventlog

import (
	"context"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// deltaWriter stores the text deltas of every turn running in this process
// (group commit): a turn hands a delta over and reads on from upstream; one
// goroutine, alive while there is something to store, writes everything
// handed over since its last write in one statement (AppendMany: one round
// trip and one commit for every conversation in it), then gives the stored
// events, with their ids, to the streams open here (Hub.Publish) and to each
// turn's observer. While a write is in flight the next batch gathers, so
// under load a write carries many deltas of many conversations; alone, a
// delta is written at once.
//
// The guarantees of the event log stay: a delta is stored, numbered under
// its conversation's row lock and announced, before any stream sees it;
// each turn's events are stored in the order it sent them, because every
// other event a turn stores waits first for its deltas (TurnLog.Flush).
type deltaWriter struct {
	h     *Hub
	mu    sync.Mutex
	queue []queuedDelta
	busy  bool // a drain goroutine runs
}

// queuedDelta is a delta handed over, or (log and done only) a flush
// marker: done is closed once everything queued before it is stored.
type queuedDelta struct {
	log  *TurnLog
	ev   conversation.NewEvent
	data any
	done chan struct{}
}

// writeTimeout bounds one write: a database that hangs fails the turns
// whose deltas it holds (storage_failed) rather than holding them forever.
const writeTimeout = 15 * time.Second

func (w *deltaWriter) enqueue(q queuedDelta) {
	w.mu.Lock()
	w.queue = append(w.queue, q)
	start := !w.busy
	w.busy = true
	w.mu.Unlock()
	if start {
		go w.drain()
	}
}

// drain writes what is queued until nothing is.
func (w *deltaWriter) drain() {
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		if len(batch) == 0 {
			w.busy = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if rest := w.write(batch); len(rest) > 0 {
			w.mu.Lock()
			w.queue = append(rest, w.queue...)
			w.mu.Unlock()
		}
	}
}

// write stores batch and returns what it left for the next write: from the
// first delta of a conversation that already has a turn's deltas in this
// write (a turn ended and the next one began), so that each conversation is
// in one batch and its events keep their order.
func (w *deltaWriter) write(batch []queuedDelta) (rest []queuedDelta) {
	groups, markers, rest := gather(batch)
	for _, g := range groups {
		g.encodeJoined()
	}
	if len(groups) > 0 {
		lasts := w.store(groups)
		w.announce(groups, lasts)
	}
	for _, m := range markers {
		close(m)
	}
	return rest
}

// deltaGroup is what one write stores for one conversation: one turn's
// deltas, consecutive ones of a message joined.
type deltaGroup struct {
	log   *TurnLog
	evs   []conversation.NewEvent
	datas []any
	n     int64 // deltas handed over (joined ones too)
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
		g.add(q)
	}
	return groups, markers, rest
}

// add hands q to the group, joined to the delta before it when it can be.
func (g *deltaGroup) add(q queuedDelta) {
	g.n++
	if n := len(g.datas); n > 0 {
		if joined, ok := join(g.datas[n-1], q.data); ok {
			g.datas[n-1] = joined
			g.evs[n-1] = conversation.NewEvent{} // encoded below
			return
		}
	}
	g.evs = append(g.evs, q.ev)
	g.datas = append(g.datas, q.data)
}

// encodeJoined encodes the deltas that add joined.
func (g *deltaGroup) encodeJoined() {
	for i, e := range g.evs {
		if e.Name == "" {
			g.evs[i] = Encode(conversation.EventNameTextDelta, g.datas[i])
		}
	}
}

// store writes the groups in one statement (each announced as begun to
// the hub first) and returns the last event id of each, 0 where its write
// failed: when the one statement fails, each group is stored on its own
// and only the turns whose write fails are failed.
func (w *deltaWriter) store(groups []*deltaGroup) []int64 {
	in := make([]conversation.ConvEvents, len(groups))
	for i, g := range groups {
		in[i] = conversation.ConvEvents{ConversationID: g.log.conv, Turn: g.log.turn, Events: g.evs}
		w.h.Begin(g.log.conv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	began := time.Now()
	st := w.h.eventStore
	lasts, err := st.Repo().Events.AppendMany(ctx, in)
	w.h.observer.EventWrite(len(in), time.Since(began))
	if err != nil {
		// One conversation's trouble must not fail the others: store
		// each on its own, and fail only the turns whose write fails.
		lasts = make([]int64, len(groups))
		errs := make([]error, len(groups))
		for i, b := range in {
			lasts[i], errs[i] = st.Repo().Events.Append(ctx, b.ConversationID, b.Turn, b.Events)
		}
		for i, g := range groups {
			if errs[i] != nil {
				g.log.setErr(errs[i])
			}
		}
	}
	cancel()
	return lasts
}

// announce gives each group's stored events to the streams open here (or
// ends the hub's wait where nothing was stored) and to its turn's
// observer, and counts its deltas as no longer outstanding.
func (w *deltaWriter) announce(groups []*deltaGroup, lasts []int64) {
	for i, g := range groups {
		if last := lasts[i]; last > 0 {
			w.h.Publish(g.log.conv, Stored(g.log.turn, last, g.evs))
		} else {
			w.h.End(g.log.conv)
		}
		if g.log.observer != nil {
			for j, e := range g.evs {
				g.log.observer.Send(e.Name, g.datas[j])
			}
		}
		g.log.outstanding.Add(-g.n)
	}
}

// maxJoined bounds the text of deltas joined into one.
const maxJoined = 16 << 10

// join makes one delta of two consecutive ones of the same message (both
// waited for the same write, so the stream gets them at the same moment
// either way): under load a write then carries a row per message rather
// than one per delta, so the time a write takes stops growing with the
// rate of deltas. The stream's text is the same.
func join(a, b any) (any, bool) {
	x, ok1 := a.(conversation.TextDeltaEvent)
	y, ok2 := b.(conversation.TextDeltaEvent)
	if !ok1 || !ok2 || x.ItemID != y.ItemID || x.ResponseID != y.ResponseID || len(x.Delta)+len(y.Delta) > maxJoined {
		return nil, false
	}
	x.Delta += y.Delta
	return x, true
}

// Stored is evs as AppendEvents stored them, the last with id last.
func Stored(turn string, last int64, evs []conversation.NewEvent) []conversation.StoredEvent {
	out := make([]conversation.StoredEvent, len(evs))
	base := last - int64(len(evs))
	for i, e := range evs {
		out[i] = conversation.StoredEvent{ID: base + int64(i) + 1, TurnID: turn, Name: e.Name, Data: e.Data}
	}
	return out
}
