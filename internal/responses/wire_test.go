package responses_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/responses"
)

// The stream is read with Toolgate's own scanner (wire.go, sse.go), not
// openai-go's decoder: these are the shapes a hand-written reader gets
// wrong.
func TestStream_ReadsEventsTheScannerCouldMisread(t *testing.T) {
	created := `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}`
	completed := `{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","output":[]}}`
	longText := strings.Repeat("é\\\"x", 20000) // a delta far longer than the read buffer, with escapes
	for _, tc := range []struct {
		name   string
		body   string
		deltas string // the text of the deltas
		want   string // describe() of the events
	}{
		{"escapes in a delta are decoded",
			frame(t, created) +
				frame(t, `{"type":"response.output_text.delta","item_id":"msg_1","delta":"a \"quoted\" \\ line\nnext \u00e9 \ud83d\ude00 }]{["}`) + frame(t, completed),
			"a \"quoted\" \\ line\nnext é 😀 }]{[", "created delta completed"},
		{"keys in any order, whitespace between tokens",
			frame(t, `{ "response" : { "status":"in_progress", "tools":[{"a":"}"}], "id" : "resp_1" } , "type" : "response.created" }`) +
				frame(t, `{"delta":"Hi","item_id":"msg_1","type":"response.output_text.delta"}`) +
				frame(t, `{"response":{"output":[{"x":"\"}"}],"id":"resp_1"},"type":"response.completed"}`),
			"Hi", "created delta completed"},
		{"CRLF line ends and comments",
			": keep-alive\r\n\r\nevent: response.created\r\ndata: " + created + "\r\n\r\n" +
				"data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"delta\":\"ok\"}\r\n\r\n" +
				"data: " + completed + "\r\n\r\n",
			"ok", "created delta completed"},
		{"data split over lines",
			frame(t, created) + "data: {\"type\":\"response.output_text.delta\",\ndata: \"item_id\":\"msg_1\",\"delta\":\"two\"}\n\n" + frame(t, completed),
			"two", "created delta completed"},
		{"a line longer than the read buffer",
			frame(t, created) + frame(t, `{"type":"response.output_text.delta","item_id":"msg_1","delta":"`+longText+`"}`) + frame(t, completed),
			strings.ReplaceAll(longText, `\"`, `"`), "created delta completed"},
		{"deltas of two items keep their own ids",
			frame(t, created) + frame(t, `{"type":"response.output_text.delta","item_id":"msg_1","delta":"a"}`) +
				frame(t, `{"type":"response.output_text.delta","item_id":"msg_2","delta":"b"}`) +
				frame(t, `{"type":"response.output_text.delta","item_id":"msg_1","delta":"c"}`) + frame(t, completed),
			"abc", "created delta completed"},
		{"a top-level error key ends the stream after it",
			frame(t, created) + frame(t, `{"type":"response.output_text.delta","item_id":"msg_1","delta":"a","error":"the model broke"}`) + frame(t, completed),
			"", "created error:error:received error while streaming: the model broke"},
		{"an event cut off by the end of the body is dropped",
			frame(t, created) + `data: {"type":"response.output_text.delta","item_id":"msg_1","delta":"lost"}`,
			"", "created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := serveSSE(t, []byte(tc.body))
			c := responses.New(responses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "gpt-5"})
			s := stream(t, c, conversation.UpstreamRequest{UserText: "hi"})
			if s.Err != nil {
				t.Fatalf("Err = %v", s.Err)
			}
			if got := s.describe(); got != tc.want {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			if got := s.Deltas(); got != tc.deltas {
				t.Errorf("deltas %.80q, want %.80q", got, tc.deltas)
			}
			if tc.deltas != "" && s.ResponseID() != "resp_1" {
				t.Errorf("response id %q, want resp_1", s.ResponseID())
			}
			var prev string
			for _, ev := range s.Events {
				if ev.Kind == conversation.EventTextDelta && ev.ItemID == "" {
					t.Errorf("delta %q without its item id", ev.Delta)
				}
				if tc.name == "deltas of two items keep their own ids" && ev.Kind == conversation.EventTextDelta {
					want := map[string]string{"a": "msg_1", "b": "msg_2", "c": "msg_1"}[ev.Delta]
					if ev.ItemID != want {
						t.Errorf("delta %q of %q, want %q (after %q)", ev.Delta, ev.ItemID, want, prev)
					}
					prev = ev.ItemID
				}
			}
		})
	}
}

// Malformed JSON in an event ends the stream with an error, as openai-go's
// decoder did; before the first event, the request fails.
func TestStream_MalformedEventEndsTheStream(t *testing.T) {
	created := `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}`
	for _, bad := range []string{
		`{"type":"response.output_text.delta","item_id":"msg_1","delta":"unterminated}`,
		`{"type":"response.output_text.delta" "item_id":"msg_1"}`,
		`["not","an","object"]`,
		`{"type":"response.output_item.done","item":{"id":"x"`,
	} {
		t.Run(bad, func(t *testing.T) {
			api := serveSSE(t, []byte(frame(t, created)+"data: "+bad+"\n\n"))
			c := responses.New(responses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "gpt-5"})
			s := stream(t, c, conversation.UpstreamRequest{UserText: "hi"})
			if s.Err == nil || s.describe() != "created" {
				t.Errorf("events %q, Err %v; want created, then an error", s.describe(), s.Err)
			}
			api = serveSSE(t, []byte("data: "+bad+"\n\n"))
			c = responses.New(responses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "gpt-5"})
			if _, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi"}); err == nil {
				t.Error("Stream of a malformed first event: no error")
			}
		})
	}
}
