package http

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
)

// sseSink writes events as server-sent events. Once a write fails (the
// browser went away) or does not finish in time (a client that stopped
// reading: the write deadline is moved to writeTimeout ahead once half of
// it is spent, so a write has at least half of writeTimeout and at most
// all of it, and a busy stream sets it twice per writeTimeout rather than
// on every write) it discards everything after: the stream ends and the
// client resumes with Last-Event-ID. The running turn writes the events
// it hands over itself (relay), so that write is also the most a client
// that stopped reading can hold up a turn, once.
//
// Events are written and flushed one at a time, except between hold and
// release: the events of a batch read together (those already in the log
// when a stream wakes) go out in one write and one flush.
type sseSink struct {
	mu           sync.Mutex
	w            http.ResponseWriter
	rc           *http.ResponseController
	n            int64
	dead         bool
	held         bool
	buf          []byte // what is written next, reused
	writeTimeout time.Duration
	deadline     time.Time // the write deadline set on the connection
	log          *slog.Logger
}

// A held batch is written once it reaches flushAt (a long backlog goes out
// in pieces); keepSSEBuffer is the largest write buffer a sink keeps
// between batches.
const (
	flushAt       = 32 << 10
	keepSSEBuffer = 64 << 10
)

// hold makes the writes that follow wait for release.
func (s *sseSink) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
}

// release writes and flushes what was written since hold, at once.
func (s *sseSink) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = false
	s.flush()
}

// sendBatch writes evs to out as one batch and reports whether turn's
// terminal event was among them (all that follows it is left out).
func sendBatch(sink *sseSink, out storedSink, evs []conversation.StoredEvent, turn string) bool {
	sink.hold()
	defer sink.release()
	for _, ev := range evs {
		out.SendStored(ev)
		if turn != "" && (ev.TurnID == turn || turn == anyTurn) && terminalEvent(ev.Name) {
			return true
		}
	}
	return false
}

// Send writes one event with the next id (a replayed idempotent stream).
func (s *sseSink) Send(event string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		s.log.Error("encode SSE event", "event", event, "error", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.write(s.n, event, raw)
}

// SendAt writes one event under id (the settings stream's ids are
// policy versions, not a count).
func (s *sseSink) SendAt(id int64, event string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		s.log.Error("encode SSE event", "event", event, "error", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n = id
	s.write(id, event, raw)
}

// SendStored writes a stored event under its own id.
func (s *sseSink) SendStored(ev conversation.StoredEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n = ev.ID
	s.write(ev.ID, ev.Name, ev.Data)
}

// ping writes a heartbeat comment, so proxies and browsers keep an idle
// stream open while the model thinks or a tool runs.
func (s *sseSink) ping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeText(": ping\n\n")
}

func (s *sseSink) write(id int64, event string, data []byte) {
	if s.dead {
		return
	}
	b := s.buf
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, "\nevent: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	s.buf = b
	if !s.held || len(s.buf) >= flushAt {
		s.flush()
	}
}

func (s *sseSink) writeText(text string) {
	if s.dead {
		return
	}
	s.buf = append(s.buf, text...)
	if !s.held {
		s.flush()
	}
}

// flush writes and flushes the buffer.
func (s *sseSink) flush() {
	b := s.buf
	s.buf = s.buf[:0]
	if cap(s.buf) > keepSSEBuffer {
		s.buf = nil
	}
	if s.dead || len(b) == 0 {
		return
	}
	if s.writeTimeout > 0 {
		if now := time.Now(); s.deadline.Sub(now) < s.writeTimeout/2 {
			s.deadline = now.Add(s.writeTimeout)
			_ = s.rc.SetWriteDeadline(s.deadline)
		}
	}
	if _, err := s.w.Write(b); err == nil {
		if err = s.rc.Flush(); err == nil {
			return
		}
	}
	s.dead = true
	s.log.Info("a client left a stream (or stopped reading); the turn goes on without it")
}

func (s *sseSink) closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// storedSink takes stored events: the stream, or the idempotency recorder
// in front of it.
type storedSink interface {
	SendStored(ev conversation.StoredEvent)
}

// stream starts the turn req asks for and answers c with its events as the
// conversation's event log has them (the same ids as every other stream of
// the conversation), until the turn's terminal event. The turn runs on
// this request's goroutine, which would otherwise only wait for it (a
// goroutine and its stack fewer per open stream): it writes its events to
// this stream itself while the stream has every event before them, a
// goroutine started only when the stream falls behind catches it up
// (Subscription.Drive), and a timer writes the heartbeats. The turn runs
// on whether or not the client stays. Errors found before the turn starts
// are returned, for an ordinary JSON error.
func (s *Server) stream(c echo.Context, req engine.Request) error {
	rec, keyed := recorder(c) // an Idempotency-Key: keep the stream for repeats (idempotency.go)
	if keyed {
		req.Prepared = rec.start
	}
	req.Observer = s.observe(nil)
	ctx := c.Request().Context()
	started, err := s.chat.Begin(ctx, req)
	if err != nil {
		return err
	}
	sub := started.Subscription
	defer sub.Close()
	sink := s.openStream(c, started.ConversationID())
	defer s.metrics.StreamOpened()() // metrics.go
	var out storedSink = sink
	if keyed {
		rec.next, out = sink, rec
	}
	turn := started.TurnID()
	stopDriving := sub.Drive(ctx, func(evs []conversation.StoredEvent) bool {
		return sendBatch(sink, out, evs, turn) || sink.closed()
	})
	stopBeating := s.beat(sink)
	started.Run()
	stopBeating()
	stopDriving()
	// What the turn did not write (the stream fell behind at the end, or
	// the turn was taken over elsewhere) up to its terminal event.
	s.relay(ctx, sink, out, sub, turn)
	return nil
}

// beat writes a heartbeat to sink every s.heartbeat until stop returns.
func (s *Server) beat(sink *sseSink) (stop func()) {
	var mu sync.Mutex
	stopped := false
	mu.Lock()
	defer mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(s.heartbeat, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			sink.ping()
			t.Reset(s.heartbeat)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// relay copies sub's events to out until the terminal event of turn (all
// events when turn is ""), the conversation's deletion, or the client
// leaving; heartbeats keep the stream open meanwhile. Events handed over
// in this process to a stream that has every event before them are
// written by the goroutine that hands them over (the running turn:
// Subscription.Direct), so a relayed delta costs no wake of this loop;
// what it has not written (a backlog, events stored elsewhere) this loop
// reads and writes. The heartbeat is written from this loop (Deliver
// returns at its time), not from a goroutine and ticker per stream: an
// open stream costs a goroutine less.
func (s *Server) relay(ctx context.Context, sink *sseSink, out storedSink, sub *eventlog.Subscription, turn string) {
	write := func(evs []conversation.StoredEvent) bool {
		return sendBatch(sink, out, evs, turn) || sink.closed()
	}
	sub.Direct(write)
	beat := time.Now().Add(s.heartbeat)
	for {
		done, err := sub.Deliver(ctx, beat, write)
		if done {
			return
		}
		if err == nil && !time.Now().Before(beat) {
			sink.ping()
			beat = time.Now().Add(s.heartbeat)
		}
		if sink.closed() {
			return
		}
		if errors.Is(err, conversation.ErrDeleted) {
			sink.Send(conversation.EventNameDeleted, conversation.DeletedEvent{ConversationID: sub.ConversationID()})
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "reading a conversation's events failed; ending the stream (resume with Last-Event-ID)", "error", err)
			}
			return
		}
	}
}

func terminalEvent(name string) bool {
	return name == conversation.EventNameCompleted || name == conversation.EventNameFailed || name == conversation.EventNameError
}

// openStream answers c with the SSE headers and a first heartbeat, and
// returns the sink for its events.
func (s *Server) openStream(c echo.Context, conversationID string) *sseSink {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set(echo.HeaderCacheControl, "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	log := s.log
	if conversationID != "" { // "": the settings stream (settingsevents.go)
		h.Set("X-Conversation-Id", conversationID)
		log = log.With("conversation_id", conversationID)
	}
	w.WriteHeader(http.StatusOK)
	sink := &sseSink{w: w, rc: http.NewResponseController(w), writeTimeout: s.streamWriteTimeout, log: log}
	sink.ping() // headers and a first byte now, before the model answers
	return sink
}

// conversationEvents is GET /api/conversations/{id}/events: the
// conversation's events after Last-Event-ID (or ?after=), then live ones
// from whichever replica runs the turn, until the client leaves.
func (s *Server) conversationEvents(c echo.Context) error {
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	ctx, done := s.untilClosing(c.Request().Context())
	defer done()
	sub, err := s.chat.Events(ctx, c.Param("conversationId"), after)
	if err != nil {
		return err
	}
	defer sub.Close()
	sink := s.openStream(c, sub.ConversationID())
	defer s.metrics.StreamOpened()()
	s.relay(ctx, sink, sink, sub, "")
	return nil
}

// CloseStreams ends every stream that only follows a conversation (GET
// /api/conversations/{id}/events, and a POST resumed with Last-Event-ID):
// at shutdown a browser tab holding one open must not keep the server
// waiting out its grace period. The client reconnects with Last-Event-ID
// and misses nothing. Streams of turns this server runs end with their
// turn. Register it with http.Server.RegisterOnShutdown.
func (s *Server) CloseStreams() { s.closeStreams() }

// untilClosing is parent, also cancelled by CloseStreams.
func (s *Server) untilClosing(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(s.closing, cancel)
	return ctx, func() { stop(); cancel() }
}

// lastEventID is where a conversation's stream resumes: the Last-Event-ID
// header, or the after query parameter; -1 when neither is given.
func lastEventID(c echo.Context) (int64, error) {
	return resumeAfter(c, "this conversation's stream")
}

// resumeAfter is the event id a stream (named by stream, for the error)
// resumes after: the Last-Event-ID header, or the after query parameter;
// -1 when neither is given. Anything but a whole number, 0 or more, is
// 400 invalid_last_event_id.
func resumeAfter(c echo.Context, stream string) (int64, error) {
	v, field := c.Request().Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, field = c.QueryParam("after"), "after"
	}
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apperr.Invalidf("invalid_last_event_id", field,
			"%s must be the id of an event of %s: a whole number, 0 or more (got %q)", field, stream, v)
	}
	return n, nil
}

// resume answers a POST sent again with Last-Event-ID: no new turn, the
// conversation's events after that id instead, to the end of the turn
// still running (or just those, when none runs).
func (s *Server) resume(c echo.Context, conversationID string, after int64) error {
	if conversationID == "" {
		return apperr.Invalidf("invalid_conversation_id", "conversation_id",
			"a request with Last-Event-ID resumes a conversation's stream, so it needs conversation_id (the X-Conversation-Id of the first answer)")
	}
	ctx, done := s.untilClosing(c.Request().Context())
	defer done()
	sub, running, err := s.chat.Resume(ctx, conversationID, after)
	if err != nil {
		return err
	}
	defer sub.Close()
	sink := s.openStream(c, conversationID)
	defer s.metrics.StreamOpened()()
	if !running {
		evs, err := sub.Backlog(ctx)
		sendBatch(sink, sink, evs, "")
		return err
	}
	s.relay(ctx, sink, sink, sub, anyTurn)
	return nil
}

// anyTurn makes relay end at the first terminal event.
const anyTurn = "*"
