package eventlog

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/internal/conversation"
)

// TurnLog is a running turn's sink: each event is stored in the
// conversation's event log (numbered, announced to every replica) before
// any stream sees it, and handed to the observer (metrics). The turn never
// waits for a browser: streams read the log at their own pace. Text deltas
// go to the process's deltaWriter, which stores those of every running
// turn together, and the turn reads on meanwhile; any other event first
// waits until the turn's deltas are stored (Flush), then is stored at once,
// so the log keeps the order in which the turn sent its events.
type TurnLog struct {
	h        *Hub
	ctx      context.Context // for writes: they happen even when the turn is cancelled
	conv     string
	turn     string
	observer conversation.Sink

	outstanding atomic.Int64 // deltas handed to the writer, not yet stored

	mu  sync.Mutex
	err error // the first write that failed: the turn stops with storage_failed
}

// Log returns the log of turn, in conversation conv: its writes use ctx
// (they happen even when the turn is cancelled) and what it stores is
// handed to observer (nil: none).
func (h *Hub) Log(ctx context.Context, conv, turn string, observer conversation.Sink) *TurnLog {
	return &TurnLog{h: h, ctx: ctx, conv: conv, turn: turn, observer: observer}
}

// Send stores one event (a text delta: hands it to the writer).
func (l *TurnLog) Send(event string, data any) {
	ev, err := newEvent(event, data)
	if err == nil && event == conversation.EventNameTextDelta {
		n := l.outstanding.Add(1)
		l.h.writer.enqueue(queuedDelta{log: l, ev: ev, data: data})
		if n >= maxOutstanding {
			// The database is behind: wait for it rather than hold an
			// unbounded backlog (upstream waits in its TCP window).
			l.Flush()
		}
		return
	}
	var last int64
	if err == nil {
		l.Flush()
		l.h.Begin(l.conv)
		last, err = l.h.store.Repo().Events.Append(l.ctx, l.conv, l.turn, []conversation.NewEvent{ev})
		if last == 0 || err != nil {
			l.h.End(l.conv)
		} else {
			l.h.Publish(l.conv, Stored(l.turn, last, []conversation.NewEvent{ev}))
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

// maxOutstanding bounds the deltas a turn may have waiting for the writer.
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
