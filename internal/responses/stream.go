package responses

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/internal/conversation"
)

// eventStream is a response being streamed: the events a turn needs, read
// from the answer's body (sse.go) and converted (convert.go). Next, Event
// and Err belong to one goroutine; Close may come from another, to end a
// Next that waits.
type eventStream struct {
	closed    atomic.Bool
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

// Close ends the stream and its connection; Next then returns false.
func (s *eventStream) Close() error {
	s.closed.Store(true)
	defer s.w.stop()
	s.closeBody()
	return nil
}
