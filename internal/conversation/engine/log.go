package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/internal/conversation"
)

// eventLog is a running turn's sink: each event is stored in the
// conversation's event log (numbered, announced to every replica) before
// any stream sees it, and handed to the observer (metrics). The turn never
// waits for a browser: streams read the log at their own pace. Text deltas
// go to the process's deltaWriter, which stores those of every running
// turn together, and the turn reads on meanwhile; any other event first
// waits until the turn's deltas are stored (flush), then is stored at once,
// so the log keeps the order in which the turn sent its events.
type eventLog struct {
	s        *Service
	ctx      context.Context // for writes: they happen even when the turn is cancelled
	conv     string
	turn     string
	observer conversation.Sink

	outstanding atomic.Int64 // deltas handed to the writer, not yet stored

	mu  sync.Mutex
	err error // the first write that failed: the turn stops with storage_failed
}

// Send stores one event (a text delta: hands it to the writer).
func (l *eventLog) Send(event string, data any) {
	ev, err := newEvent(event, data)
	if err == nil && event == conversation.EventNameTextDelta {
		n := l.outstanding.Add(1)
		l.s.writer.enqueue(queuedDelta{log: l, ev: ev, data: data})
		if n >= maxOutstanding {
			// The database is behind: wait for it rather than hold an
			// unbounded backlog (upstream waits in its TCP window).
			l.flush()
		}
		return
	}
	var last int64
	if err == nil {
		l.flush()
		l.s.hub.begin(l.conv)
		last, err = l.s.store.Repo().AppendEvents(l.ctx, l.conv, l.turn, []conversation.NewEvent{ev})
		if last == 0 || err != nil {
			l.s.hub.end(l.conv)
		} else {
			l.s.hub.publish(l.conv, stored(l.turn, last, []conversation.NewEvent{ev}))
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

// flush waits until every delta the turn handed to the writer is stored
// (or failed to be: then failed says so). Call it before storing anything
// else of the turn's, so the log keeps the turn's order.
func (l *eventLog) flush() {
	if l.outstanding.Load() == 0 {
		return
	}
	done := make(chan struct{})
	l.s.writer.enqueue(queuedDelta{log: l, done: done})
	<-done
}

func (l *eventLog) setErr(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
}

// failed is the first write that failed, if any.
func (l *eventLog) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// observe hands a terminal event, which the turn stores itself together
// with the turn's end, to the observer.
func (l *eventLog) observe(event string, data any) {
	if l.observer != nil {
		l.observer.Send(event, data)
	}
}

func newEvent(name string, data any) (conversation.NewEvent, error) {
	raw, err := json.Marshal(data)
	return conversation.NewEvent{Name: name, Data: raw}, err
}

// mustEvent is newEvent for the payload types of this package, which
// always encode.
func mustEvent(name string, data any) conversation.NewEvent {
	ev, _ := newEvent(name, data)
	return ev
}

// opening is what every turn's stream opens with: which conversation and
// turn, the person's message, the decisions recorded.
func (t *Turn) opening() []namedEvent {
	evs := []namedEvent{{conversation.EventNameConversation, conversation.ConversationEvent{ConversationID: t.conv.ID, TurnID: t.id, Kind: t.kind,
		Offline: t.s.info.Offline, Model: t.s.info.Model}}}
	if t.userItem != nil {
		evs = append(evs, namedEvent{conversation.EventNameItem, conversation.ItemEvent{Item: *t.userItem}})
	}
	for _, d := range t.decisions {
		evs = append(evs, namedEvent{conversation.EventNameDecision, d})
	}
	if t.stopped != nil {
		evs = append(evs, namedEvent{conversation.EventNameError, conversation.ErrorEvent(*t.stopped)})
	} else if !t.claimed {
		evs = append(evs, namedEvent{conversation.EventNameCompleted, conversation.CompletedEvent{ResponseID: t.conv.LastResponseID,
			PendingApprovals: len(t.pendingIDs), PendingApprovalIDs: nonNil(t.pendingIDs)}})
	}
	return evs
}

type namedEvent struct {
	name string
	data any
}

func encodeAll(evs []namedEvent) []conversation.NewEvent {
	out := make([]conversation.NewEvent, len(evs))
	for i, e := range evs {
		out[i] = mustEvent(e.name, e.data)
	}
	return out
}

// logOpening stores the turn's opening events in the transaction that
// prepares it, so what the person did (a message, decisions) and its
// events commit together; it notes where the turn's events start. A claimed
// turn records its claim (the lease, the answers marked sent) and reads its
// grants in the same statement.
func (t *Turn) logOpening(ctx context.Context, r conversation.Repo) error {
	if k, ok := ctx.Value(idempotencyKeyCtx{}).(IdempotencyKey); ok {
		// The key's request started this turn: recorded with the turn, so
		// a repeat after its replica died knows that it ran, and which turn
		// to answer from.
		if err := r.ClaimIdempotencyKey(ctx, t.user.ID, k.Key, k.Holder, t.conv.ID, t.id); err != nil {
			return err
		}
	}
	evs := encodeAll(t.opening())
	var last int64
	var err error
	if t.claimed {
		var gs []conversation.Grant
		last, gs, err = r.OpenTurn(ctx, conversation.TurnOpening{ConversationID: t.conv.ID, TurnID: t.id, Owner: t.user.ID,
			Replica: t.s.replica, LeaseTTL: t.s.leaseTTL, SentIDs: t.answerIDs, Events: evs, Now: t.s.now()})
		t.grants = grantRefs(gs)
	} else {
		last, err = r.AppendEvents(ctx, t.conv.ID, t.id, evs)
	}
	t.after = last - int64(len(evs))
	if err == nil && last > 0 {
		t.opened = stored(t.id, last, evs)
	}
	return err
}

// After is the id just before the turn's first event: its stream starts
// after it.
func (t *Turn) After() int64 { return t.after }

// ID is the turn's id; its events carry it.
func (t *Turn) ID() string { return t.id }
