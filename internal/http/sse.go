package http

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/conversation"
)

// sseSink writes a turn's events as server-sent events. Once a write fails
// (the browser went away) it discards everything after: the turn itself
// goes on and stores what arrives.
type sseSink struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	n    int
	dead bool
	log  *slog.Logger
}

// Send writes one event with the next id.
func (s *sseSink) Send(event string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		s.log.Error("encode SSE event", "event", event, "error", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.write("id: " + strconv.Itoa(s.n) + "\nevent: " + event + "\ndata: " + string(raw) + "\n\n")
}

// ping writes a heartbeat comment, so proxies and browsers keep an idle
// stream open while the model thinks or a tool runs.
func (s *sseSink) ping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write(": ping\n\n")
}

func (s *sseSink) write(text string) {
	if s.dead {
		return
	}
	if _, err := fmt.Fprint(s.w, text); err == nil {
		err = s.rc.Flush()
		if err == nil {
			return
		}
	}
	s.dead = true
	s.log.Info("the browser left a stream; the turn goes on without it")
}

// stream runs a prepared turn as the response to c: SSE headers, heartbeat
// comments every s.heartbeat, the turn's events, then the end of the body.
func (s *Server) stream(c echo.Context, turn *conversation.Turn) error {
	rec, keyed := recorder(c) // an Idempotency-Key: keep the stream for repeats (idempotency.go)
	if keyed {
		rec.start(turn.ConversationID())
	}
	sink := s.openStream(c, turn.ConversationID())
	defer s.metrics.StreamOpened()() // metrics.go
	var out conversation.Sink = sink
	if keyed {
		rec.next, out = sink, rec
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.heartbeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sink.ping()
			}
		}
	})
	turn.Run(c.Request().Context(), s.observe(out))
	close(stop)
	wg.Wait()
	return nil
}

// openStream answers c with the SSE headers and a first heartbeat, and
// returns the sink for its events.
func (s *Server) openStream(c echo.Context, conversationID string) *sseSink {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set(echo.HeaderCacheControl, "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	h.Set("X-Conversation-Id", conversationID)
	w.WriteHeader(http.StatusOK)
	sink := &sseSink{w: w, rc: http.NewResponseController(w), log: s.log.With("conversation_id", conversationID)}
	sink.ping() // headers and a first byte now, before the model answers
	return sink
}
