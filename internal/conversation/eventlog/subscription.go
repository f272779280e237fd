package eventlog

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Subscription reads one conversation's events, after the last one it
// returned: from the hub's memory when it holds the next ones, else from
// the store, waking when the hub says there are new ones (and every
// pollEvery regardless, in case a notification was lost).
//
// A stream that delivers its events with Deliver may also let the hub
// write them directly (Direct): an event handed over in this process to a
// stream that has everything before it is written by the goroutine that
// handed it over (the running turn), with no wake and no second goroutine
// per event. Whoever writes a stream's events holds its write token (wmu),
// so they go out once each and in order.
type Subscription struct {
	h       *Hub
	conv    string
	last    atomic.Int64
	wake    chan struct{}
	deleted chan struct{}
	once    sync.Once
	timer   *time.Timer // the reader's wait for a poll or its deadline, reused
	// dirty (under the hub's lock) says the store may hold events the hub
	// does not: set at the start, by every wake that is not a publish, and
	// when a poll is due; cleared by the read of the store that follows.
	dirty bool
	// direct (set under the hub's lock) writes events for Direct.
	direct func([]conversation.StoredEvent) bool
	// wmu is the write token: held by Deliver while it takes and writes
	// events, and by a direct write. done (under wmu) says a write ended
	// the stream.
	wmu  sync.Mutex
	done bool
	// directs counts the direct writes: a reader whose poll comes due while
	// the turn writes its stream does not poll (wait).
	directs atomic.Int64
	// pump, while set (Drive), takes the wakes: no reader waits.
	pump atomic.Pointer[pump]
}

// pollEvery bounds how long a stream can miss events whose notification
// was lost (a listener reconnecting).
var pollEvery = 3 * time.Second // a variable for the tests

// eventBatch bounds one read of a subscription.
const eventBatch = 500

// Subscribe opens conv's stream after the event with id after. Close it
// when done.
func (h *Hub) Subscribe(conv string, after int64) *Subscription {
	sub := &Subscription{h: h, conv: conv, wake: make(chan struct{}, 1), deleted: make(chan struct{}), dirty: true}
	sub.last.Store(after)
	h.add(sub)
	return sub
}

// signal wakes the subscription's reader, if it is not woken already, or
// its pump (Drive).
func (sub *Subscription) signal() {
	if p := sub.pump.Load(); p != nil && p.kick() {
		return
	}
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// Close ends the subscription; a direct write in flight finishes first.
func (sub *Subscription) Close() {
	sub.h.remove(sub)
	sub.wmu.Lock()
	sub.done = true
	sub.wmu.Unlock()
}

// Last is the id of the last event Next returned.
func (sub *Subscription) Last() int64 { return sub.last.Load() }

// Next blocks until there are events after the last one returned and
// returns them in order; ErrDeleted once the conversation is deleted, or
// ctx's error.
func (sub *Subscription) Next(ctx context.Context) ([]conversation.StoredEvent, error) {
	return sub.NextBefore(ctx, time.Time{})
}

// NextBefore is Next that also returns, with no events and no error, at
// deadline (none when zero).
func (sub *Subscription) NextBefore(ctx context.Context, deadline time.Time) ([]conversation.StoredEvent, error) {
	var got []conversation.StoredEvent
	_, err := sub.Deliver(ctx, deadline, func(evs []conversation.StoredEvent) bool {
		got = evs
		return false
	})
	return got, err
}

// Direct lets the hub write the events handed over in this process with
// write, from the goroutine that hands them over, whenever this stream has
// every event before them; write says whether the stream is done (Deliver
// then returns done). write must not wait long: it holds up a running
// turn (a stream drops a client that stops reading). Use the same write
// as Deliver's.
func (sub *Subscription) Direct(write func([]conversation.StoredEvent) bool) {
	sub.h.mu.Lock()
	sub.direct = write
	sub.h.mu.Unlock()
}

// Deliver waits until there are events after the last one delivered and
// hands them, in order, to write, which says whether the stream is done;
// it returns then, with done. It also returns, with nothing delivered, at
// deadline (none when zero): a stream writes its heartbeat then, without a
// goroutine and a ticker of its own. It returns ErrDeleted once the
// conversation is deleted, or ctx's error; done once a direct write (see
// Direct) ended the stream.
func (sub *Subscription) Deliver(ctx context.Context, deadline time.Time, write func([]conversation.StoredEvent) bool) (done bool, err error) {
	for {
		sub.wmu.Lock()
		if sub.done {
			sub.wmu.Unlock()
			return true, nil
		}
		evs, read := sub.h.take(sub)
		switch {
		case evs != nil:
			sub.h.fromMemory.Add(1)
		case read:
			sub.h.fromStore.Add(1)
			if evs, err = sub.h.store.Repo().Events.After(ctx, sub.conv, sub.last.Load(), eventBatch); err != nil {
				sub.wmu.Unlock()
				sub.h.due(sub) // read again next time
				return false, err
			}
			if len(evs) == eventBatch {
				sub.h.due(sub) // there may be more
			}
		}
		if len(evs) > 0 {
			sub.last.Store(evs[len(evs)-1].ID)
			done = write(evs)
			sub.done = done
			sub.wmu.Unlock()
			return done, nil
		}
		sub.wmu.Unlock()
		if done, err := sub.wait(ctx, deadline); done || err != nil {
			return false, err
		}
	}
}

// wait blocks until sub is woken (false), its deadline passes (true), the
// conversation is deleted (ErrDeleted), or ctx ends.
func (sub *Subscription) wait(ctx context.Context, deadline time.Time) (bool, error) {
	select {
	case <-sub.deleted:
		return false, conversation.ErrDeleted
	default:
	}
	wait := pollEvery
	if !deadline.IsZero() {
		left := time.Until(deadline)
		if left <= 0 {
			return true, nil
		}
		wait = min(wait, left)
	}
	if sub.timer == nil {
		sub.timer = time.NewTimer(wait)
	} else {
		sub.timer.Reset(wait)
	}
	defer sub.timer.Stop()
	directs := sub.directs.Load()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-sub.deleted:
		return false, conversation.ErrDeleted
	case <-sub.wake:
	case <-sub.timer.C:
		if sub.directs.Load() == directs {
			// Nothing came for pollEvery: a notification may have been
			// lost. (Events written directly meanwhile say this process
			// is the one storing the conversation's events.)
			sub.h.due(sub)
		}
	}
	return false, nil
}

// Follow opens the stream of a prepared turn (its transaction committed):
// from its first event (after after), handing over its opening events
// (opened). The turn's opening events come from memory; the
// stream reads the store only when the hub says it may hold more (a gap
// in what this process hands over, a wake from elsewhere, a poll): what
// another writer stored between the turn's commit and now is followed by
// the turn's own events, whose hand-over shows the gap.
func (h *Hub) Follow(conv string, after int64, opened []conversation.StoredEvent) *Subscription {
	sub := h.Subscribe(conv, after)
	if len(opened) > 0 {
		h.Publish(conv, opened)
		h.mu.Lock()
		sub.dirty = false
		h.mu.Unlock()
	}
	return sub
}

// ConversationID is the conversation the subscription reads.
func (sub *Subscription) ConversationID() string { return sub.conv }

// Backlog returns every event after the last one returned, without
// waiting for more.
func (sub *Subscription) Backlog(ctx context.Context) ([]conversation.StoredEvent, error) {
	var out []conversation.StoredEvent
	for {
		evs, err := sub.h.store.Repo().Events.After(ctx, sub.conv, sub.last.Load(), eventBatch)
		if err != nil || len(evs) == 0 {
			return out, err
		}
		sub.last.Store(evs[len(evs)-1].ID)
		out = append(out, evs...)
	}
}

// Drive delivers the stream's events with no reader waiting for them, for
// a caller that has other work for its goroutine (the request that runs
// its own turn): it writes what is waiting now, on the caller's goroutine,
// then lets the hub write what is handed over in this process as with
// Direct and, whenever the stream falls behind (a wake: a backlog, events
// stored elsewhere), starts a goroutine that delivers what is waiting and
// ends. There is no poll meanwhile. stop ends this and waits for a
// delivery in flight; the caller then reads on with Deliver, from where
// the stream is.
func (sub *Subscription) Drive(ctx context.Context, write func([]conversation.StoredEvent) bool) (stop func()) {
	sub.Direct(write)
	p := &pump{sub: sub, ctx: ctx, write: write}
	p.drain()
	sub.pump.Store(p)
	p.kick() // what was handed over before the pump was there
	return p.stop
}

// pump delivers a driven stream's backlog on a goroutine of its own while
// there is one (Drive).
type pump struct {
	sub     *Subscription
	ctx     context.Context
	write   func([]conversation.StoredEvent) bool
	mu      sync.Mutex
	running bool // a goroutine delivers
	again   bool // woken while it delivers: it delivers once more
	stopped bool
	idle    sync.WaitGroup
}

// kick starts a delivery, or makes the one running look again; false once
// stopped (the wake goes to the reader).
func (p *pump) kick() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped:
		return false
	case p.running:
		p.again = true
	default:
		p.running = true
		p.idle.Add(1)
		go p.run()
	}
	return true
}

// pumpDrained, when set (tests), runs after each drain of a pump's
// goroutine, before it decides whether to look again.
var pumpDrained func()

func (p *pump) run() {
	defer p.idle.Done()
	for {
		p.drain()
		if pumpDrained != nil {
			pumpDrained()
		}
		p.mu.Lock()
		if !p.again {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.again = false
		p.mu.Unlock()
	}
}

// drain delivers what is waiting, without waiting for more: until nothing
// is left, the stream is done, or a read fails (the next wake tries again).
func (p *pump) drain() {
	for {
		wrote := false
		done, err := p.sub.Deliver(p.ctx, time.Unix(0, 0), func(evs []conversation.StoredEvent) bool {
			wrote = true
			return p.write(evs)
		})
		if done || err != nil || !wrote {
			return
		}
	}
}

func (p *pump) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.sub.pump.Store(nil)
	p.idle.Wait()
	p.sub.signal() // the reader looks at what came meanwhile
}
