package responses

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// The request of a turn at 1,000 servers × 100 tools, built as before
// (sdk: the old rendering into openai-go's ToolUnionParams, marshalled by
// openai-go, "stream" set by option.WithJSONSet) beside the tools written
// straight into the body, afresh (no cache) and from the cache of rendered
// entries, in the same run:
// go test -run '^$' -bench 1000x100 -benchmem ./internal/responses/

// scaleGroups is servers × tools as the policy snapshot groups them: every
// third tool runs without asking, the others ask (both lists sorted).
func scaleGroups(servers, tools int) []policy.ServerTools {
	out := make([]policy.ServerTools, 0, servers)
	for i := range servers {
		g := policy.ServerTools{Server: policy.Server{Label: fmt.Sprintf("srv-%04d", i), URL: fmt.Sprintf("https://mcp%d.example/mcp", i), Enabled: true}}
		for j := range tools {
			t := policy.GroupedTool{Name: fmt.Sprintf("tool_%03d", j), Source: policy.FromTool}
			if j%3 == 0 {
				g.Never = append(g.Never, t)
			} else {
				g.Always = append(g.Always, t)
			}
		}
		out = append(out, g)
	}
	return out
}

func scaleRequest() conversation.UpstreamRequest {
	return conversation.UpstreamRequest{ConversationID: "conv_1", TurnID: "turn_1", UserText: "hi", Tools: scaleGroups(1000, 100), Retry: true}
}

// regroup gives the first n servers new lists, as a turn whose user has
// personal policies or grants on them gets (policy.snapshot.request).
func regroup(groups []policy.ServerTools, n int) []policy.ServerTools {
	out := slices.Clone(groups)
	for i := range n {
		out[i].Never, out[i].Always = slices.Clone(out[i].Never), slices.Clone(out[i].Always)
	}
	return out
}

func BenchmarkRequestBody_1000x100(b *testing.B) {
	req := scaleRequest()
	c := New(Config{BaseURL: "http://127.0.0.1:1/v1/", APIKey: "sk", Model: "gpt-5", MaxTools: 100000})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = oldBody(b, c, req)
		}
	})
	b.Run("fresh", func(b *testing.B) {
		fresh := *c
		fresh.tools = nil
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := fresh.body(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := c.body(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached_10_regrouped", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := req
			r.Tools = regroup(req.Tools, 10)
			if _, _, err := c.body(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The same request sent to an upstream that reads it whole before it
// answers: from building the request to the answer's first event.
func BenchmarkRequestSent_1000x100(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+`{"type":"response.created","response":{"id":"resp_1"}}`+"\n\n")
	}))
	b.Cleanup(srv.Close)
	req := scaleRequest()
	c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk", Model: "gpt-5", MaxTools: 100000})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := c.params(req)
			p.Tools, _ = renderToolsSDK(req.Tools, nil, c.layout)
			var res *http.Response
			if err := c.sdk.Post(context.Background(), "responses", p, &res, option.WithJSONSet("stream", true)); err != nil {
				b.Fatal(err)
			}
			if _, ok := newSSEReader(res.Body).next(); !ok {
				b.Fatal("no event")
			}
			_ = res.Body.Close()
		}
	})
	b.Run("toolgate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := c.Stream(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			_ = s.Close()
		}
	})
}

var _ = sjson.SetBytes
