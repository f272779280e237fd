package http

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
)

// countingWriter counts the writes and flushes an SSE sink makes.
type countingWriter struct {
	*httptest.ResponseRecorder
	writes, flushes int
}

func (w *countingWriter) Write(b []byte) (int, error) { w.writes++; return w.ResponseRecorder.Write(b) }
func (w *countingWriter) Flush()                      { w.flushes++; w.ResponseRecorder.Flush() }

// A batch of events read together reaches the client in one write and one
// flush, in order, ending at the turn's terminal event; single events are
// still written and flushed at once.
func TestSSESink_BatchIsOneWriteAndFlush(t *testing.T) {
	w := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
	sink := &sseSink{w: w, rc: http.NewResponseController(w), log: slog.New(slog.DiscardHandler)}
	evs := []conversation.StoredEvent{
		{ID: 7, TurnID: "t1", Name: conversation.EventNameTextDelta, Data: []byte(`{"delta":"a"}`)},
		{ID: 8, TurnID: "t1", Name: conversation.EventNameTextDelta, Data: []byte(`{"delta":"b"}`)},
		{ID: 9, TurnID: "t1", Name: conversation.EventNameCompleted, Data: []byte(`{}`)},
		{ID: 10, TurnID: "t2", Name: conversation.EventNameTextDelta, Data: []byte(`{"delta":"after"}`)},
	}
	if !sendBatch(sink, sink, evs, "t1") {
		t.Error("sendBatch did not see t1's terminal event")
	}
	want := "id: 7\nevent: text.delta\ndata: {\"delta\":\"a\"}\n\n" +
		"id: 8\nevent: text.delta\ndata: {\"delta\":\"b\"}\n\n" +
		"id: 9\nevent: " + conversation.EventNameCompleted + "\ndata: {}\n\n"
	if got := w.Body.String(); got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	if w.writes != 1 || w.flushes != 1 {
		t.Errorf("%d writes, %d flushes; want one of each for the batch", w.writes, w.flushes)
	}
	sink.Send("x", map[string]int{"n": 1})
	if w.writes != 2 || w.flushes != 2 || !strings.HasSuffix(w.Body.String(), "id: 10\nevent: x\ndata: {\"n\":1}\n\n") {
		t.Errorf("a single event: %d writes, %d flushes, body ends %q", w.writes, w.flushes, w.Body.String()[len(want):])
	}
}
