package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/conversation"
)

// The benchmarks set each way of reading the stream beside the old one
// (openai-go's event union) or beside bytes passing through io.Copy, in the
// same run: go test -run '^$' -bench . -benchmem ./internal/responses/

const benchDelta = `{"type":"response.output_text.delta","sequence_number":42,"item_id":"msg_68c1f0a2b3d4e5f60718293a4b5c6d7e","output_index":1,"content_index":0,"delta":" world","logprobs":[],"obfuscation":"aBcDeFgHiJ"}`

// benchCreated is a response.created echoing n mcp tools entries of 100
// tools each, as the provider echoes the request's tools.
func benchCreated(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_bench","object":"response","created_at":1750000000,"status":"in_progress","error":null,"incomplete_details":null,"model":"gpt-5","output":[],"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"mcp","server_label":"srv_%d","server_url":"https://mcp%d.example.com/mcp","allowed_tools":[`, i, i)
		for j := range 100 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"tool_name_number_%d"`, j)
		}
		b.WriteString(`],"require_approval":{"always":{"tool_names":["tool_name_number_1","tool_name_number_2"]},"never":{"tool_names":["tool_name_number_3"]}},"headers":null,"server_description":"A server of the benchmark"}`)
	}
	b.WriteString(`],"metadata":{"toolgate_turn":"t1"}}}`)
	return b.String()
}

func BenchmarkStream_Decode(b *testing.B) {
	data := []byte(benchDelta)
	l := Labels{}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ev, ok, _, err := l.convert(data, "")
		if !ok || err != nil || ev.Delta != " world" {
			b.Fatal(ev, ok, err)
		}
	}
}

func BenchmarkStream_DecodeOpenAIUnion(b *testing.B) {
	data := []byte(benchDelta)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var ev responses.ResponseStreamEventUnion
		if err := json.Unmarshal(data, &ev); err != nil || ev.Delta != " world" {
			b.Fatal(err)
		}
		_ = conversation.Event{Kind: conversation.EventTextDelta, ItemID: ev.ItemID, Delta: ev.Delta}
	}
}

// The 1,000 × 100 tools echo of response.created (1.6 MB).
func BenchmarkStream_DecodeCreated1000Servers(b *testing.B) {
	data := []byte(benchCreated(1000))
	l := Labels{}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ev, ok, _, err := l.convert(data, "")
		if !ok || err != nil || ev.ResponseID != "resp_bench" {
			b.Fatal(ev, ok, err)
		}
	}
}

func BenchmarkStream_DecodeCreated1000ServersOpenAIUnion(b *testing.B) {
	data := []byte(benchCreated(1000))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var ev responses.ResponseStreamEventUnion
		if err := json.Unmarshal(data, &ev); err != nil || ev.Response.ID != "resp_bench" {
			b.Fatal(err)
		}
	}
}

// benchBody is an SSE body of n text deltas between created and completed.
func benchBody(n int) []byte {
	var b bytes.Buffer
	ev := func(data string) {
		var v struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(data), &v)
		b.WriteString("event: " + v.Type + "\ndata: " + data + "\n\n")
	}
	ev(benchCreated(1))
	for range n {
		ev(benchDelta)
	}
	ev(`{"type":"response.completed","sequence_number":9999,"response":{"id":"resp_bench","status":"completed","output":[]}}`)
	return b.Bytes()
}

const benchEvents = 1000

// Relaying: a canned body of 1,000 text deltas read through
// internal/responses (framing and conversion: sse.go, convert.go), beside
// openai-go's stream decoding the same body into its union, and beside the
// bytes passing through io.Copy.
func BenchmarkStream_Relay1000Events(b *testing.B) {
	body := benchBody(benchEvents)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s := &eventStream{body: io.NopCloser(bytes.NewReader(body)), sse: newSSEReader(bytes.NewReader(body)),
			w: newWatchdog(context.Background(), 0, 0)}
		n := 0
		for s.Next() {
			n++
		}
		if n != benchEvents+2 || s.Err() != nil {
			b.Fatal(n, s.Err())
		}
	}
}

func BenchmarkStream_Relay1000EventsOpenAIUnion(b *testing.B) {
	body := benchBody(benchEvents)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
		s := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(res), nil)
		n := 0
		for s.Next() {
			if _, ok := (Labels{}).Convert(s.Current()); ok {
				n++
			}
		}
		if n != benchEvents+2 || s.Err() != nil {
			b.Fatal(n, s.Err())
		}
	}
}

func BenchmarkStream_Relay1000EventsIOCopy(b *testing.B) {
	body := benchBody(benchEvents)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		// Hidden behind a plain io.Reader, so the bytes are read in
		// buffers (as from a connection), not handed over whole.
		if _, err := io.Copy(io.Discard, struct{ io.Reader }{bytes.NewReader(body)}); err != nil {
			b.Fatal(err)
		}
	}
}

// The same through a real HTTP upstream (an httptest server answering the
// canned body): the request built and sent by openai-go, the answer read
// by Client.Stream, beside the same HTTP exchange with the body io.Copy'd.
func BenchmarkStream_Client1000Events(b *testing.B) {
	body := benchBody(benchEvents)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-bench", Model: "gpt-5"})
	b.Run("toolgate", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			s, err := c.Stream(context.Background(), conversation.UpstreamRequest{UserText: "hi"})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for s.Next() {
				n++
			}
			_ = s.Close()
			if n != benchEvents+2 {
				b.Fatal(n, s.Err())
			}
		}
	})
	b.Run("io.Copy", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			res, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-5","input":"hi","stream":true}`))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
	})
}
