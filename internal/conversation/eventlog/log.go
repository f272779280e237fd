package eventlog

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/internal/conversation"
)

// TurnLog is a running turn's sink. The turn holds its conversation's lease,
// so it numbers its events itself, after the last one its opening stored.
// A text delta goes to the streams open in this process at once (Hub.Hand)
// and is stored behind them by the process's deltaWriter, which stores
// those of every running turn together; the turn reads on meanwhile. Any
// other event carries a decision point or something one depends on: it
// first waits until the turn's deltas are stored (Flush), then is
// committed, and only then handed to the streams (Hub.Publish). So the
// log keeps the order in which the turn sent its events, every stream
// sees them in that order with the same ids, a stream on another replica
// reads what was committed, and a crash loses at most deltas not yet
// stored, which the takeover replaces with the stored partial message
// (after conversation.TakeoverGap, so no id is given twice). A stream here
// that has read everything before an event is written by the turn itself
// as it hands the event over (Subscription.Direct); one that is behind
// reads at its own pace. The turn waits for a browser only as long as one
// write to it may take (a stream drops a client that stops reading).
type TurnLog struct {
	h        *Hub
	ctx      context.Context // for writes: they happen even when the turn is cancelled
	conv     string
	turn     string
	observer conversation.Sink

	outstanding atomic.Int64 // deltas handed to the writer, not yet stored

	mu   sync.Mutex
	next int64 // the id of the turn's next event
	err  error // the first write that failed: the turn stops with storage_failed
}

// Log returns the log of turn, in conversation conv, whose last event
// stored so far has id last: its writes use ctx (they happen even when the
// turn is cancelled) and what it sends is handed to observer (nil: none).
func (h *Hub) Log(ctx context.Context, conv, turn string, last int64, observer conversation.Sink) *TurnLog {
	return &TurnLog{h: h, ctx: ctx, conv: conv, turn: turn, observer: observer, next: last + 1}
}

// Send logs one event: a text delta is streamed at once and stored behind;
// any other event is stored, then streamed.
func (l *TurnLog) Send(event string, data any) {
	if event == conversation.EventNameTextDelta {
		l.delta(event, data)
		return
	}
	ev, err := newEvent(event, data)
	if err == nil {
		l.Flush()
		l.h.Begin(l.conv)
		var last int64
		evs := []conversation.NewEvent{ev}
		last, err = l.Put(l.ctx, l.h.store.Repo(), evs)
		if last == 0 || err != nil {
			l.h.End(l.conv)
		} else {
			l.h.Publish(l.conv, Stored(l.turn, last, evs))
		}
	}
	// Observed once stored: what the observer saw, a takeover finds.
	if l.observer != nil {
		l.observer.Send(event, data)
	}
	if err != nil {
		l.setErr(err)
	}
}

// delta numbers a text delta, hands it to the streams here and to the
// writer. After a failed write the turn is stopping: it streams nothing
// more.
func (l *TurnLog) delta(event string, data any) {
	raw, err := encodeDelta(data)
	l.mu.Lock()
	if err == nil && l.err == nil {
		ev := conversation.StoredEvent{ID: l.next, TurnID: l.turn, Name: event, Data: raw}
		l.next++
		l.mu.Unlock()
		l.h.Hand(l.conv, ev)
		n := l.outstanding.Add(1)
		l.h.writer.enqueue(queuedDelta{log: l, ev: ev, data: data})
		if n >= maxOutstanding {
			// The database is behind: wait for it rather than hold an
			// unbounded backlog (upstream waits in its TCP window).
			l.Flush()
		}
		return
	}
	l.mu.Unlock()
	if err != nil {
		l.setErr(err)
	}
}

// Put stores evs in repo (a transaction's, or not) with the turn's next
// ids, and returns the last (0: the conversation is gone). Call Flush
// first, so the log keeps the turn's order.
func (l *TurnLog) Put(ctx context.Context, repo conversation.Repo, evs []conversation.NewEvent) (int64, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	l.mu.Lock()
	first := l.next
	l.next += int64(len(evs))
	l.mu.Unlock()
	return repo.Events.Put(ctx, l.conv, l.turn, first, evs)
}

// maxOutstanding bounds the deltas a turn may have waiting for the writer
// (and so the ids a crash can leave streamed but not stored: well within
// conversation.TakeoverGap).
const maxOutstanding = 512

// Flush waits until every delta the turn handed to the writer is stored
// (or failed to be: then Failed says so). Call it before storing anything
// else of the turn's, so the log keeps the turn's order.
func (l *TurnLog) Flush() {
	if l.outstanding.Load() == 0 {
		return
	}
	done := make(chan struct{})
	l.h.writer.enqueue(queuedDelta{log: l, done: done})
	<-done
}

func (l *TurnLog) setErr(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
}

// Failed is the first write that failed, if any.
func (l *TurnLog) Failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Observe hands a terminal event, which the turn stores itself together
// with the turn's end, to the observer.
func (l *TurnLog) Observe(event string, data any) {
	if l.observer != nil {
		l.observer.Send(event, data)
	}
}

func newEvent(name string, data any) (conversation.NewEvent, error) {
	raw, err := json.Marshal(data)
	return conversation.NewEvent{Name: name, Data: raw}, err
}

// Encode is newEvent for the payload types of the event contract, which
// always encode.
func Encode(name string, data any) conversation.NewEvent {
	ev, _ := newEvent(name, data)
	return ev
}
