package http

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
)

// The SSE writer over a real HTTP connection: 1,000 text deltas as they
// come in batches of 10 (a stream waking to find several new events),
// written and flushed per batch (now) beside per event (before):
// go test -run '^$' -bench SSE ./internal/http/
func BenchmarkSSE_Write1000Deltas(b *testing.B) {
	evs := make([]conversation.StoredEvent, 1000)
	for i := range evs {
		evs[i] = conversation.StoredEvent{ID: int64(i + 1), Name: conversation.EventNameTextDelta,
			Data: []byte(`{"item_id":"msg_68c1f0a2b3d4e5f60718293a4b5c6d7e","response_id":"resp_68c1f0a2b3d4e5f6","delta":" world` + strconv.Itoa(i) + `"}`)}
	}
	for _, batched := range []bool{true, false} {
		name := "per_event_flush"
		if batched {
			name = "per_batch_flush"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sink := &sseSink{w: w, rc: http.NewResponseController(w), log: slog.New(slog.DiscardHandler)}
				for i := 0; i < len(evs); i += 10 {
					if batched {
						sendBatch(sink, sink, evs[i:i+10], "")
						continue
					}
					for _, ev := range evs[i : i+10] {
						sink.SendStored(ev)
					}
				}
			}))
			defer srv.Close()
			b.ReportAllocs()
			for b.Loop() {
				res, err := http.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
			}
		})
	}
}
