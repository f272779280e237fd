package responses

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// BenchmarkRequestSent_ThroughTheFace_128x1000 sends a turn's request at
// the most servers the provider accepts (128 × 1,000 tools, through the
// face as offline: 128 tokens a request) to an upstream that reads it
// whole before it answers, from the cache of rendered entries: "joined"
// copies the pieces into one buffer first (as before), "pieces" writes
// them from where they are. Same run, same client:
// go test -run '^$' -bench 128x1000 -benchmem ./internal/responses/
func BenchmarkRequestSent_ThroughTheFace_128x1000(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+`{"type":"response.created","response":{"id":"resp_1"}}`+"\n\n")
	}))
	b.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk", Model: "gpt-5",
		Face: &Face{BaseURL: "https://toolgate.example.com", Tokens: faceTokens(b)}})
	req := conversation.UpstreamRequest{ConversationID: "conv_1", TurnID: "turn_1", UserText: "hi", Tools: scaleGroups(128, 1000)}
	send := func(b *testing.B, build func() (pieces, error)) {
		body, err := build()
		if err != nil {
			b.Fatal(err)
		}
		var res *http.Response
		if err := c.sdk.Post(context.Background(), "responses", []byte{}, &res, option.WithMiddleware(letGo(body, build))); err != nil {
			b.Fatal(err)
		}
		if _, ok := newSSEReader(res.Body).next(); !ok {
			b.Fatal("no event")
		}
		_ = res.Body.Close()
	}
	b.Run("joined", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			send(b, func() (pieces, error) {
				p, _, err := c.bodyAt(req, time.Now())
				var one pieces
				one.add(p.bytes())
				return one, err
			})
		}
	})
	b.Run("pieces", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			send(b, func() (pieces, error) { p, _, err := c.bodyAt(req, time.Now()); return p, err })
		}
	})
}

// The body in pieces reads as the same bytes as the body joined, whatever
// the size of the reads.
func TestPieces_ReadAndWriteTheSameBytes(t *testing.T) {
	var p pieces
	for _, s := range []string{`{"a":1,`, "", `"tools":[`, strings.Repeat("x", 70000), `]`, `,"stream":true}`} {
		p.add([]byte(s))
	}
	want := p.bytes()
	if len(want) != p.n {
		t.Fatalf("joined %d bytes, counted %d", len(want), p.n)
	}
	for _, size := range []int{1, 7, 4096, 100000} {
		s := &sentBody{p: p}
		var got []byte
		buf := make([]byte, size)
		for {
			n, err := s.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil || n == 0 {
				t.Fatalf("read %d: %d, %v", size, n, err)
			}
		}
		if !bytes.Equal(got, want) || s.held() != 0 {
			t.Errorf("reads of %d: %d bytes, holding %d after; want the %d joined", size, len(got), s.held(), len(want))
		}
	}
	// The pieces themselves are not changed: the request sent again
	// (a retry) sends them all.
	if again := (&sentBody{p: p}); !bytes.Equal(readAll(t, again), want) {
		t.Error("a second body of the same pieces sends other bytes")
	}
}

func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A change of policy (a new snapshot's groups: a tool moved from asking to
// running unasked, a tool added, a server gone) reaches the very next
// request sent, though the entries before it came from the cache.
func TestStream_PolicyChangeReachesTheNextRequest(t *testing.T) {
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, b)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+`{"type":"response.completed","response":{"id":"resp_1"}}`+"\n\n")
	}))
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk", Model: "gpt-5"})
	groups := scaleGroups(3, 6)
	changed := regroup(groups, 3)
	changed[0].Never = append(changed[0].Never, changed[0].Always[0]) // runs unasked now
	changed[0].Always = changed[0].Always[1:]
	changed[1].Always = append(changed[1].Always, grouped("tool_new")...)
	changed = changed[:2] // the third server is gone
	for i, g := range [][][]policy.ServerTools{{groups}, {groups}, {changed}, {changed}} {
		s, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi", Tools: g[0]})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		want := RenderTools(g[0], nil, LayoutDefault).JSON
		if !bytes.Contains(bodies[i], append([]byte(`"tools":`), want...)) {
			t.Errorf("request %d sent\n%s\nwant its tools\n%s", i+1, bodies[i], want)
		}
	}
	if bytes.Equal(bodies[1], bodies[2]) {
		t.Error("the request after the change is the one before it")
	}
}
