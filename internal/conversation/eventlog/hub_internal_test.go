package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// logRepo is an event log in memory: the one part of Repo a subscription
// reads.
type logRepo struct {
	conversation.Events
	mu    sync.Mutex
	evs   []conversation.StoredEvent
	reads int
}

func (r *logRepo) After(_ context.Context, _ string, after int64, limit int) ([]conversation.StoredEvent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	var out []conversation.StoredEvent
	for _, e := range r.evs {
		if e.ID > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// store appends n events to the log and returns them.
func (r *logRepo) store(n int) []conversation.StoredEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []conversation.StoredEvent
	for range n {
		id := int64(len(r.evs) + 1)
		e := conversation.StoredEvent{ID: id, TurnID: "turn_1", Name: conversation.EventNameTextDelta, Data: fmt.Appendf(nil, `{"delta":"%d"}`, id)}
		r.evs = append(r.evs, e)
		out = append(out, e)
	}
	return out
}

type logStore struct {
	conversation.Store
	r *logRepo
}

func (s logStore) Repo() conversation.Repo { return conversation.Repo{Events: s.r} }

// next is sub.Next within one second (well below pollEvery: a stream that
// had to wait for its poll fails it).
func next(t *testing.T, sub *Subscription) []conversation.StoredEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	evs, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("Next after %d: %v", sub.Last(), err)
	}
	return evs
}

// drain takes a wake left over from the events already read.
func drain(sub *Subscription) {
	select {
	case <-sub.wake:
	default:
	}
}

func ids(evs []conversation.StoredEvent) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func wantIDs(t *testing.T, evs []conversation.StoredEvent, first, last int64) {
	t.Helper()
	if len(evs) != int(last-first+1) || evs[0].ID != first || evs[len(evs)-1].ID != last {
		t.Fatalf("got events %v; want %d..%d", ids(evs), first, last)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].ID != evs[i-1].ID+1 {
			t.Fatalf("got events %v; want consecutive ids", ids(evs))
		}
	}
}

// A stream takes the events this process published from memory, and
// anything else the store holds from the store, at once: an event stored
// without being published (another replica's, a turn's end) is read when
// its wake arrives, even when the stream consumed that wake while taking
// published events; a backlog longer than one read is read to its end
// without waiting; a gap in what was published, or a stream that fell
// further behind than the hub keeps, reads the store.
func TestHub_MemoryWhenItHoldsTheNextEventsTheStoreOtherwise(t *testing.T) {
	r := &logRepo{}
	s := &Hub{store: logStore{r: r}}
	const conv = "conv_1"
	sub := s.Subscribe(conv, 0)
	defer sub.Close()

	s.Publish(conv, r.store(3))
	wantIDs(t, next(t, sub), 1, 3)
	if r.reads != 0 {
		t.Fatalf("published events read %d times from the store; want from memory", r.reads)
	}
	// The announcement of what this process stored and handed over
	// wakes nobody.
	drain(sub)
	s.notify(conv, 3)
	if len(sub.wake) != 0 {
		t.Fatal("the announcement of events already handed over woke the stream")
	}

	// Stored elsewhere and announced (in a notification naming several
	// conversations): read from the store.
	r.store(1)
	s.OnEventsNotification([]byte(`{"b":[{"c":"conv_other","id":9},{"c":"` + conv + `","id":4}]}`))
	wantIDs(t, next(t, sub), 4, 4)
	// A notification that cannot be read wakes every stream.
	r.store(1)
	s.OnEventsNotification([]byte(`{"b":`))
	wantIDs(t, next(t, sub), 5, 5)

	// Published, then one stored elsewhere and announced before the stream
	// looks: the stream takes the published ones and then reads the other
	// at once, although the one wake was used up.
	s.Publish(conv, r.store(2))
	r.store(1)
	s.Poke(conv, false)
	wantIDs(t, next(t, sub), 6, 7)
	wantIDs(t, next(t, sub), 8, 8)

	// Another replica's event announced while this process writes: the
	// write's publish wakes the stream, which then reads the store for it
	// (the announcement of the write itself, arriving before the write
	// returns, is no reason to read).
	drain(sub)
	s.Begin(conv)
	s.notify(conv, 8)
	if len(sub.wake) != 0 {
		t.Fatal("an announcement during this process's write woke the stream before the write was handed over")
	}
	mine := r.store(2)
	r.store(1) // 11, another replica's: announced, not published
	s.notify(conv, 11)
	before := r.reads
	s.Publish(conv, mine)
	wantIDs(t, next(t, sub), 9, 10)
	wantIDs(t, next(t, sub), 11, 11)
	if r.reads != before+1 {
		t.Fatalf("%d reads of the store; want one, for the other replica's event", r.reads-before)
	}

	// A gap in what is published: the stream reads the store.
	r.store(1) // 12, never published
	s.Publish(conv, r.store(2))
	wantIDs(t, next(t, sub), 12, 14)

	// Caught up and nothing new: the stream waits without reading.
	before = r.reads
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	if evs, err := sub.Next(ctx); err == nil || len(evs) != 0 {
		t.Fatalf("Next with nothing new = %v, %v; want to wait until the deadline", ids(evs), err)
	}
	cancel()
	if r.reads != before {
		t.Fatalf("a caught-up stream read the store %d times while waiting; want none", r.reads-before)
	}

	// A backlog longer than one read, for a new stream of a conversation
	// the hub holds nothing of: read to its end.
	r2 := &logRepo{}
	s2 := &Hub{store: logStore{r: r2}}
	r2.store(2*eventBatch + 7)
	late := s2.Subscribe(conv, 0)
	defer late.Close()
	wantIDs(t, next(t, late), 1, eventBatch)
	wantIDs(t, next(t, late), 1+eventBatch, 2*eventBatch)
	wantIDs(t, next(t, late), 1+2*eventBatch, 7+2*eventBatch)
	r.store(2*eventBatch + 7)

	// A stream further behind than the hub keeps reads the store; the hub
	// keeps at most maxRecent events.
	top := int64(len(r.evs))
	slow := s.Subscribe(conv, top)
	defer slow.Close()
	for range 3 {
		s.Publish(conv, r.store(maxRecent))
	}
	if n := len(s.topics[conv].recent); n > maxRecent {
		t.Fatalf("the hub keeps %d events of one conversation; want at most %d", n, maxRecent)
	}
	got := next(t, slow)
	for len(got) < 3*maxRecent {
		got = append(got, next(t, slow)...)
	}
	wantIDs(t, got, top+1, top+3*maxRecent)
}

// The hub keeps only what a stream here has yet to read: once every stream
// has read the published events, it holds none of them.
func TestHub_KeepsOnlyWhatAStreamHasYetToRead(t *testing.T) {
	r := &logRepo{}
	s := &Hub{store: logStore{r: r}}
	const conv = "conv_1"
	a, b := s.Subscribe(conv, 0), s.Subscribe(conv, 0)
	defer a.Close()
	defer b.Close()
	s.Publish(conv, r.store(5))
	wantIDs(t, next(t, a), 1, 5)
	s.Publish(conv, r.store(1)) // b has read nothing yet: everything stays
	if n := len(s.topics[conv].recent); n != 6 {
		t.Fatalf("the hub holds %d events while a stream has read none; want 6", n)
	}
	wantIDs(t, next(t, b), 1, 6)
	wantIDs(t, next(t, a), 6, 6)
	s.Publish(conv, r.store(1))
	if n := len(s.topics[conv].recent); n != 1 {
		t.Fatalf("the hub holds %d events after both streams read 1..6; want 1 (the new one)", n)
	}
	a.Close()
	b.Close()
	if s.topics[conv] != nil {
		t.Fatal("the hub keeps a conversation with no stream open")
	}
}

// A stream that lets the hub write directly (Direct) gets every event once
// and in order, whoever writes it: the goroutine that hands events over
// while the stream is caught up, its own reader (Deliver) when it is behind
// (events stored elsewhere and announced, wakes that send it to the store).
func TestDirect_EveryEventOnceAndInOrder(t *testing.T) {
	repo := &logRepo{}
	h := New(logStore{r: repo}, Options{})
	sub := h.Subscribe("c", 0)
	var (
		mu              sync.Mutex
		got             []int64
		direct, fromRdr int
		reader          bool // set by the reader around its Deliver
	)
	write := func(evs []conversation.StoredEvent) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			got = append(got, e.ID)
		}
		if reader {
			fromRdr++
		} else {
			direct++
		}
		return false
	}
	sub.Direct(write)
	const n = 3000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := sub.Deliver(t.Context(), time.Now().Add(50*time.Millisecond), func(evs []conversation.StoredEvent) bool {
				mu.Lock()
				reader = true
				mu.Unlock()
				write(evs)
				mu.Lock()
				reader = false
				mu.Unlock()
				return false
			}); err != nil {
				t.Error(err)
				return
			}
			if sub.Last() >= n {
				return
			}
		}
	}()
	for i := 1; i <= n; i++ {
		evs := mixedEvent(h, repo, i)
		if i%10 == 0 {
			// Every tenth event, let the stream catch up (its reader parks:
			// the next hand-over is written directly); the rest come in
			// bursts that race the reader.
			for deadline := time.Now().Add(5 * time.Second); sub.Last() < evs[0].ID && time.Now().Before(deadline); {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
	<-done
	sub.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n {
		t.Fatalf("got %d events, want %d", len(got), n)
	}
	for i, id := range got {
		if id != int64(i+1) {
			t.Fatalf("event %d has id %d: an event twice, lost or out of order (%v…)", i+1, id, got[max(0, i-3):min(len(got), i+3)])
		}
	}
	if direct == 0 || fromRdr == 0 {
		t.Errorf("written directly %d times, by the reader %d: want both", direct, fromRdr)
	}
}

// recorder collects what a stream's writes wrote, in order.
type recorder struct {
	mu  sync.Mutex
	ids []int64
}

func (r *recorder) write(evs []conversation.StoredEvent) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		r.ids = append(r.ids, e.ID)
	}
	return false
}

func (r *recorder) got() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.ids)
}

// settle lets sub's reader look at the store and find nothing more: a
// stream is caught up (and may be written directly) once it has.
func settle(t *testing.T, sub *Subscription, rec *recorder) {
	t.Helper()
	drain(sub)
	if _, err := sub.Deliver(t.Context(), time.Now().Add(10*time.Millisecond), rec.write); err != nil {
		t.Fatal(err)
	}
}

// caughtUp is a hub with one stream on conversation "c" that lets the hub
// write directly (to rec) and has read everything.
func caughtUp(t *testing.T) (*Hub, *logRepo, *Subscription, *recorder) {
	t.Helper()
	repo := &logRepo{}
	h := New(logStore{r: repo}, Options{})
	sub := h.Subscribe("c", 0)
	t.Cleanup(sub.Close)
	rec := &recorder{}
	sub.Direct(rec.write)
	settle(t, sub, rec)
	return h, repo, sub, rec
}

// publish stores n events and hands them over as a turn's commit does.
func publish(h *Hub, repo *logRepo, n int) {
	h.Begin("c")
	h.Publish("c", repo.store(n))
}

// A stream that is behind (an event was handed over while its reader held
// the write token) is not written directly: the next event would skip the
// one it has not read.
func TestDirect_NotWhenTheStreamIsBehind(t *testing.T) {
	h, repo, sub, rec := caughtUp(t)
	sub.wmu.Lock() // the reader, mid-read
	publish(h, repo, 1)
	sub.wmu.Unlock()
	publish(h, repo, 1) // the stream has not read event 1
	if _, err := sub.Deliver(t.Context(), time.Now().Add(time.Second), rec.write); err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); got != "[1 2]" {
		t.Fatalf("the stream got %s; want [1 2]", got)
	}
}

// While the reader writes what it read, an event handed over is not
// written directly (it would overtake the reader's): the reader writes it
// after.
func TestDirect_NotWhileTheReaderWrites(t *testing.T) {
	h, repo, sub, rec := caughtUp(t)
	sub.wmu.Lock()
	publish(h, repo, 1) // for the reader: the token is taken
	sub.wmu.Unlock()
	writing, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := sub.Deliver(t.Context(), time.Now().Add(time.Second), func(evs []conversation.StoredEvent) bool {
			close(writing)
			<-release
			return rec.write(evs)
		})
		done <- err
	}()
	select {
	case <-writing:
	case <-time.After(5 * time.Second):
		t.Fatalf("the reader never wrote event 1 (the stream got %s): it was written directly while the reader held the write token", rec.got())
	}
	publish(h, repo, 1) // handed over while the reader writes event 1
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Deliver(t.Context(), time.Now().Add(time.Second), rec.write); err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); got != "[1 2]" {
		t.Fatalf("the stream got %s; want [1 2]", got)
	}
	settle(t, sub, rec)
	publish(h, repo, 1) // caught up, nobody writing: written directly
	if got := rec.got(); got != "[1 2 3]" {
		t.Fatalf("after a hand-over to a caught-up stream it got %s; want [1 2 3], written directly", got)
	}
}

// A stream written directly is not polled: its reader sleeps while the
// turn writes, and its poll (for a notification that might have been
// lost) is due only after pollEvery without any event, as when the reader
// wrote them itself. Polling anyway would read the store every pollEvery
// for every such stream, and send it to the store instead of writing it
// directly.
func TestDirect_AStreamWrittenDirectlyIsNotPolled(t *testing.T) {
	defer func(p time.Duration) { pollEvery = p }(pollEvery)
	pollEvery = 50 * time.Millisecond
	h, repo, sub, rec := caughtUp(t)
	ctx, cancel := context.WithCancel(t.Context())
	loop := make(chan error, 1)
	defer func() { // before pollEvery is put back
		cancel()
		if err := <-loop; !errors.Is(err, context.Canceled) {
			t.Errorf("the reader ended with %v; want it cancelled", err)
		}
	}()
	go func() {
		for {
			done, err := sub.Deliver(ctx, time.Time{}, rec.write)
			if err != nil || done {
				loop <- err
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond) // the reader parks
	repo.mu.Lock()
	before := repo.reads
	repo.mu.Unlock()
	for range 40 { // 400 ms: 8 polls' worth
		publish(h, repo, 1)
		time.Sleep(10 * time.Millisecond)
	}
	repo.mu.Lock()
	reads := repo.reads - before
	repo.mu.Unlock()
	if reads > 1 {
		t.Errorf("the store was read %d times while events were written directly every 10 ms; want none (a poll is due only after %v without events)", reads, pollEvery)
	}
	if got := rec.got(); !strings.HasSuffix(got, " 40]") {
		t.Errorf("the stream got %s; want events 1 to 40", got)
	}
}

// A driven stream (Drive: the request's goroutine runs the turn, so no
// reader waits) gets every event once and in order with nobody calling
// Deliver: written directly while it is caught up, and by a goroutine
// started when it falls behind (events stored elsewhere and announced,
// wakes that send it to the store, bursts). After stop, Deliver reads on
// from where it is.
func TestDrive_EveryEventOnceAndInOrder(t *testing.T) {
	repo := &logRepo{}
	h := New(logStore{r: repo}, Options{})
	sub := h.Subscribe("c", 0)
	defer sub.Close()
	var (
		mu     sync.Mutex
		got    []int64
		writes int
	)
	write := func(evs []conversation.StoredEvent) bool {
		mu.Lock()
		defer mu.Unlock()
		writes++
		for _, e := range evs {
			got = append(got, e.ID)
		}
		return false
	}
	stop := sub.Drive(t.Context(), write)
	const n = 3000
	for i := 1; i <= n; i++ {
		evs := mixedEvent(h, repo, i)
		if i%10 == 0 {
			caughtUpTo(t, sub, evs[0].ID)
		}
	}
	caughtUpTo(t, sub, n)
	stop()
	mu.Lock()
	if len(got) != n {
		t.Fatalf("got %d events with nobody reading, want %d", len(got), n)
	}
	for i, id := range got {
		if id != int64(i+1) {
			t.Fatalf("event %d has id %d: an event twice, lost or out of order (%v…)", i+1, id, got[max(0, i-3):min(len(got), i+3)])
		}
	}
	direct := int(sub.directs.Load())
	if direct == 0 || writes-direct == 0 {
		t.Errorf("written directly %d times, by the pump %d: want both", direct, writes-direct)
	}
	mu.Unlock()

	// Stopped: the stream reads on as any other (relay sets its write).
	rec := &recorder{}
	sub.Direct(rec.write)
	h.OnEventsUpTo("c", repo.store(1)[0].ID) // announced: for the reader
	publish(h, repo, 1)
	if _, err := sub.Deliver(t.Context(), time.Now().Add(time.Second), rec.write); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint([]int64{n + 1, n + 2}); rec.got() != want {
		t.Errorf("after stop the reader got %s, want %s", rec.got(), want)
	}
}

// stop waits for a delivery in flight: nothing is written to the stream
// after it returns (the request then ends its response), and the reader
// goes on after what the pump wrote, not again from before it.
func TestDrive_StopWaitsForTheDeliveryInFlight(t *testing.T) {
	repo := &logRepo{}
	h := New(logStore{r: repo}, Options{})
	sub := h.Subscribe("c", 0)
	defer sub.Close()
	rec := &recorder{}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	stop := sub.Drive(t.Context(), func(evs []conversation.StoredEvent) bool {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return rec.write(evs)
	})
	close(release) // the first drain (nothing stored yet) writes nothing
	release = make(chan struct{})
	ev := repo.store(1)
	h.OnEventsUpTo("c", ev[0].ID) // stored elsewhere: the pump reads it
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery started for an announced event")
	}
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		close(release)
		t.Fatal("stop returned while a delivery was writing")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-stopped
	if got := rec.got(); got != "[1]" {
		t.Fatalf("the pump wrote %s, want [1]", got)
	}
	sub.Direct(rec.write)
	h.OnEventsUpTo("c", repo.store(1)[0].ID)
	if _, err := sub.Deliver(t.Context(), time.Now().Add(time.Second), rec.write); err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); got != "[1 2]" {
		t.Errorf("the stream got %s, want [1 2]", got)
	}
}

// caughtUpTo waits (a second at most) until a driven stream has event id.
func caughtUpTo(t *testing.T, sub *Subscription, id int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); sub.Last() < id; time.Sleep(50 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nobody delivered event %d to a driven stream (it has %d)", id, sub.Last())
		}
	}
}

// A wake that comes after the pump's last look and before its goroutine
// ends is not lost: the goroutine looks once more.
func TestDrive_AWakeWhileThePumpEndsIsNotLost(t *testing.T) {
	repo := &logRepo{}
	h := New(logStore{r: repo}, Options{})
	sub := h.Subscribe("c", 0)
	defer sub.Close()
	rec := &recorder{}
	var once sync.Once
	pumpDrained = func() {
		// Stored elsewhere and announced just as the drain found nothing
		// more.
		once.Do(func() { h.OnEventsUpTo("c", repo.store(1)[0].ID) })
	}
	t.Cleanup(func() { pumpDrained = nil })
	stop := sub.Drive(t.Context(), rec.write)
	defer stop()
	h.OnEventsUpTo("c", repo.store(1)[0].ID) // wakes the pump
	caughtUpTo(t, sub, 2)
	if got := rec.got(); got != "[1 2]" {
		t.Errorf("the stream got %s, want [1 2]", got)
	}
}

// mixedEvent stores the i-th event of a stress test and makes it known in
// one of the ways events reach a stream: stored by another replica and
// announced, published after a wake that sends the stream to the store,
// handed over as a delta and settled, or published.
func mixedEvent(h *Hub, repo *logRepo, i int) []conversation.StoredEvent {
	evs := repo.store(1)
	switch {
	case i%97 == 0: // stored by another replica: announced, not handed over
		h.OnEventsUpTo("c", evs[0].ID)
	case i%13 == 0: // a wake that sends the stream to the store
		h.Poke("c", false)
		h.Begin("c")
		h.Publish("c", evs)
	case i%2 == 0:
		h.Hand("c", evs[0])
		h.Settled("c", evs[0].ID)
	default:
		h.Begin("c")
		h.Publish("c", evs)
	}
	return evs
}
