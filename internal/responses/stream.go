package responses

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// eventStream is a response being streamed: the events a turn needs, read
// from the answer's body (sse.go) and converted (convert.go). Next, Event
// and Err belong to one goroutine; Close may come from another, to end a
// Next that waits.
type eventStream struct {
	closed    atomic.Bool
	kept      atomic.Bool // the body was handed to keepRest at the terminal event: Close leaves it be
	body      io.ReadCloser
	closeOnce sync.Once
	sse       *sseReader
	labels    Labels
	w         *watchdog           // the stream's context and timeouts
	first     conversation.Event  // read by Stream, not yet yielded
	hasFirst  bool                // first is to be yielded
	pending   *conversation.Event // an error event to yield before ending
	cur       conversation.Event
	err       error
	done      bool
}

func (s *eventStream) Next() bool {
	if s.hasFirst {
		s.hasFirst = false
		if !s.closed.Load() {
			s.cur = s.first
			return true
		}
	}
	for !s.done && !s.closed.Load() {
		data, ok := s.next()
		if !ok {
			s.end(s.sse.err)
			break
		}
		if ev, ok := s.convert(data); ok {
			s.cur = ev
			if terminalKind(ev.Kind) {
				// The last event: nothing after it is read as an event.
				s.done = true
				s.closeOnce.Do(s.keepRest)
			}
			return true
		}
	}
	if s.pending != nil && !s.closed.Load() {
		s.cur, s.pending = *s.pending, nil
		return true
	}
	return false
}

// next waits for the next event's data, with the idle timeout running.
func (s *eventStream) next() ([]byte, bool) {
	s.w.waitNext()
	defer s.w.pause()
	return s.sse.next()
}

// convert converts one event's data. An event that ends the stream ([DONE],
// an event with a top-level error, which is kept as the last event) or that
// cannot be read ends it here.
func (s *eventStream) convert(data []byte) (conversation.Event, bool) {
	if bytes.HasPrefix(data, []byte("[DONE]")) {
		s.end(nil)
		return conversation.Event{}, false
	}
	ev, ok, last, err := s.labels.convert(data, s.cur.ItemID)
	switch {
	case err != nil:
		s.end(err)
		return conversation.Event{}, false
	case last:
		p := ev
		s.pending = &p
		s.end(nil)
		return conversation.Event{}, false
	}
	return ev, ok
}

// end ends the stream after err (nil: it simply ended) and closes its
// connection.
func (s *eventStream) end(err error) {
	if te := s.w.timedOut(); te != nil && !s.closed.Load() {
		s.err = te
	} else if err != nil && !s.closed.Load() {
		s.err = fmt.Errorf("responses: reading the stream: %w", err)
	}
	s.done = true
	s.closeBody()
	s.w.stop()
}

func (s *eventStream) closeBody() {
	s.closeOnce.Do(func() { _ = s.body.Close() })
}

func (s *eventStream) Event() conversation.Event { return s.cur }

// Err is nil when the stream simply ended (the caller checks for a terminal
// event); a connection cut mid-stream wraps io.ErrUnexpectedEOF; a provider
// silent past the idle timeout is a *conversation.UpstreamError with
// conversation.CodeIdleTimeout.
func (s *eventStream) Err() error { return s.err }

// Close ends the stream; Next then returns false. Before the terminal
// event it closes the connection; after it, the rest of the body is being
// read so that the connection is kept (keepRest).
func (s *eventStream) Close() error {
	s.closed.Store(true)
	if s.kept.Load() {
		return nil
	}
	s.closeBody()
	s.w.stop()
	return nil
}

// A response's body is read past its terminal event for at most keepFor and
// keepBytes.
const (
	keepFor   = time.Second
	keepBytes = 64 << 10
)

// keepRest reads what follows the terminal event (over HTTP/1.1, at least
// the body's last chunk, which may come a moment after the event) to the
// end of the body and closes it, on a goroutine of its own, from the
// moment the event is read: the transport keeps a connection for the next
// request only once its body was read to the end, and a turn stops reading
// at its terminal event (and records its end before it closes the
// stream). Closed then, the connection was thrown away and the next
// request dialled again (against the real API, with a TLS handshake)
// whenever the last chunk had not arrived yet, as under load.
func (s *eventStream) keepRest() {
	s.kept.Store(true)
	body, r, w := s.body, s.sse.r, s.w
	w.pause() // the request's context lives on until the body is read
	go func() {
		defer w.stop()
		stop := time.AfterFunc(keepFor, func() { _ = body.Close() })
		_, _ = io.Copy(io.Discard, io.LimitReader(r, keepBytes))
		stop.Stop()
		_ = body.Close()
	}()
}

func terminalKind(k conversation.EventKind) bool {
	return k == conversation.EventCompleted || k == conversation.EventFailed || k == conversation.EventIncomplete
}
