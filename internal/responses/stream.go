package responses

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/conversation"
)

// eventStream is a response being streamed: the SDK's stream with the
// events a turn needs, converted. Next, Event and Err belong to one
// goroutine; Close may come from another, to end a Next that waits.
type eventStream struct {
	closed   atomic.Bool
	sdk      *ssestream.Stream[responses.ResponseStreamEventUnion]
	labels   Labels
	w        *watchdog                          // the stream's context and timeouts
	first    responses.ResponseStreamEventUnion // read by Stream, not yet yielded
	hasFirst bool
	pending  *conversation.Event // an error event to yield before ending
	cur      conversation.Event
	err      error
	done     bool
}

func (s *eventStream) Next() bool {
	for !s.done && !s.closed.Load() {
		var ev responses.ResponseStreamEventUnion
		switch {
		case s.hasFirst:
			ev, s.hasFirst = s.first, false
		case s.next():
			ev = s.sdk.Current()
		default:
			if te := s.w.timedOut(); te != nil && !s.closed.Load() {
				s.err = te
			} else if err := s.sdk.Err(); err != nil && !s.closed.Load() && !s.takeStreamError(err) {
				s.err = fmt.Errorf("responses: reading the stream: %w", err)
			}
			s.done = true
			_ = s.sdk.Close()
			s.w.stop()
		}
		if s.done {
			break
		}
		if e, ok := s.labels.Convert(ev); ok {
			s.cur = e
			return true
		}
	}
	if s.pending != nil && !s.closed.Load() {
		s.cur, s.pending = *s.pending, nil
		return true
	}
	return false
}

// next waits for the SDK's next event, with the idle timeout running.
func (s *eventStream) next() bool {
	s.w.waitNext()
	defer s.w.pause()
	return s.sdk.Next()
}

// takeStreamError keeps the error event behind an SDK StreamError, to be
// yielded as the stream's last event, and reports whether err was one.
func (s *eventStream) takeStreamError(err error) bool {
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		return false
	}
	ev := streamErrorEvent(se)
	s.pending, s.done = &ev, true
	return true
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
	return s.sdk.Close()
}
