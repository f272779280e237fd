package mcpclient_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
)

// hostileMCP is an MCP server whose tools/list answer is written by
// writeTools, straight to the wire (a 150 MB answer is never built in
// memory); it counts the bytes it managed to send.
type hostileMCP struct {
	sse     bool // answer tools/list as a text/event-stream of one event
	written atomic.Int64
}

func (h *hostileMCP) serve(writeTools func(w io.Writer)) func(t *testing.T) string {
	return serveHTTP(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if req.Method != "tools/list" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"0"}}}`, req.ID)
			return
		}
		cw := &countingWriter{w: w, n: &h.written}
		if h.sse {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(cw, "event: message\ndata: ")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		fmt.Fprintf(cw, `{"jsonrpc":"2.0","id":%s,"result":`, req.ID)
		writeTools(cw)
		fmt.Fprint(cw, "}")
		if h.sse {
			fmt.Fprint(cw, "\n\n")
		}
	})
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// bigString writes a JSON string of n 'a's in 64 KiB pieces; it stops at
// the first write that fails (the client hung up).
func bigString(w io.Writer, n int) {
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	_, _ = io.WriteString(w, `"`)
	for n > 0 {
		k := min(n, len(chunk))
		if _, err := w.Write(chunk[:k]); err != nil {
			return
		}
		n -= k
	}
	_, _ = io.WriteString(w, `"`)
}

func oneTool(name string, description func(io.Writer), schema string) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprintf(w, `{"tools":[{"name":%q,"inputSchema":%s,"description":`, name, schema)
		description(w)
		fmt.Fprint(w, `}]}`)
	}
}

// TestListToolsStopsReadingPastTheListLimit: a tool with a 150 MB
// description (as one JSON body and as one server-sent event) fails the
// discovery with a sentence naming MCP_TOOL_LIST_MAX_BYTES, and Toolgate
// stops reading at the limit instead of taking in 150 MB: the server could
// not send it all, and the discovery allocated far less than the answer.
func TestListToolsStopsReadingPastTheListLimit(t *testing.T) {
	const huge = 150 << 20
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			h := &hostileMCP{sse: sse}
			url := h.serve(oneTool("forecast", func(w io.Writer) { bigString(w, huge) }, `{"type":"object"}`))(t)

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := (&mcpclient.Discoverer{}).ListTools(t.Context(), url, nil)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)

			assertDiscoveryFailed(t, err, url+": the server's answers to the tool listing are larger than the limit of 8 MiB "+
				"(MCP_TOOL_LIST_MAX_BYTES); Toolgate stopped reading and stored nothing (the server must offer fewer or smaller tools)")
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("the discovery allocated %d MiB for a 150 MiB answer, want it to stop near the 8 MiB limit", alloc>>20)
			}
			if elapsed > 5*time.Second {
				t.Errorf("the discovery took %v, want it to stop at the limit at once", elapsed)
			}
			// The server's writes fail once Toolgate hangs up (socket buffers
			// take a few MiB more than Toolgate read).
			time.Sleep(100 * time.Millisecond)
			if n := h.written.Load(); n > 64<<20 {
				t.Errorf("the server sent %d MiB of a 150 MiB answer, want Toolgate to stop reading at the limit", n>>20)
			}
		})
	}
}

// TestListToolsLimitsEachField: one name, description or schema over its
// limit, and a list over the whole-list limit across pages, fail the
// discovery with a sentence naming the limit; the limits are configurable.
func TestListToolsLimitsEachField(t *testing.T) {
	str := func(n int) func(io.Writer) { return func(w io.Writer) { bigString(w, n) } }
	plain := func(w io.Writer) { fmt.Fprint(w, `"Get the weather."`) }
	bigSchema := `{"type":"object","properties":{"city":{"type":"string","description":"` + strings.Repeat("b", 300<<10) + `"}}}`
	manyPages := fakeMCP(func(cursor string) any {
		var tools []any
		for i := range 50 {
			tools = append(tools, map[string]any{"name": fmt.Sprintf("tool_%s_%d", cursor, i), "description": strings.Repeat("d", 900),
				"inputSchema": map[string]any{"type": "object"}})
		}
		if len(cursor) > 20 {
			return map[string]any{"tools": tools}
		}
		return map[string]any{"tools": tools, "nextCursor": cursor + "x"}
	})
	tests := []struct {
		name    string
		limits  policy.ToolLimits
		url     func(t *testing.T) string
		wantMsg string
	}{
		{"a 100 KiB description", policy.ToolLimits{}, (&hostileMCP{}).serve(oneTool("forecast", str(100<<10), `{"type":"object"}`)),
			`the tool "forecast" has a description or title of 100 KiB, more than the limit of 64 KiB (MCP_TOOL_DESCRIPTION_MAX_BYTES); nothing was stored`},
		{"a description over a configured limit", policy.ToolLimits{DescriptionBytes: 10}, (&hostileMCP{}).serve(oneTool("forecast", plain, `{"type":"object"}`)),
			`the tool "forecast" has a description or title of 16 bytes, more than the limit of 10 bytes (MCP_TOOL_DESCRIPTION_MAX_BYTES); nothing was stored`},
		{"a 300 KiB schema", policy.ToolLimits{}, (&hostileMCP{}).serve(oneTool("forecast", plain, bigSchema)),
			`the input schema of the tool "forecast" is 300.1 KiB, more than the limit of 256 KiB (MCP_TOOL_SCHEMA_MAX_BYTES); nothing was stored`},
		{"a 300-byte name", policy.ToolLimits{}, (&hostileMCP{}).serve(oneTool(strings.Repeat("n", 300), plain, `{"type":"object"}`)),
			`the server listed a tool whose name is 300 bytes, more than the limit of 256 bytes (MCP_TOOL_NAME_MAX_BYTES): "` + strings.Repeat("n", 64) + `…"; nothing was stored`},
		{"a list over the limit across 22 pages of 50 small tools", policy.ToolLimits{ListBytes: 512 << 10}, manyPages,
			`the server's answers to the tool listing are larger than the limit of 512 KiB (MCP_TOOL_LIST_MAX_BYTES); Toolgate stopped reading and stored nothing (the server must offer fewer or smaller tools)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url(t)
			_, err := (&mcpclient.Discoverer{Limits: tt.limits}).ListTools(t.Context(), url, nil)
			assertDiscoveryFailed(t, err, url+": "+tt.wantMsg)
		})
	}
	t.Run("the same list under a larger limit is listed", func(t *testing.T) {
		tools, err := (&mcpclient.Discoverer{Limits: policy.ToolLimits{ListBytes: 4 << 20}}).ListTools(t.Context(), manyPages(t), nil)
		if err != nil || len(tools) != 22*50 {
			t.Errorf("got %d tools, %v; want 1100", len(tools), err)
		}
	})
}

// TestListToolsRefusesNamesThatHideWhatRuns: a tool name holding a
// bidirectional override, a zero-width or another invisible or control
// character fails the discovery, and the error shows the name escaped.
func TestListToolsRefusesNamesThatHideWhatRuns(t *testing.T) {
	tests := []struct{ name, want string }{
		{"get_\u202Etsacerof", `U+202E, so it would not show what runs: "get_\u202Etsacerof"`},
		{"delete\u200B_forecast", `U+200B, so it would not show what runs: "delete\u200B_forecast"`},
		{"get_forecast\u2066", `U+2066, so it would not show what runs: "get_forecast\u2066"`},
		{"ring\u0007bell", `U+0007, so it would not show what runs: "ring\u0007bell"`},
		{"\uFEFFget_forecast", `U+FEFF, so it would not show what runs: "\uFEFFget_forecast"`},
		{"get_forecast\u061C", `U+061C, so it would not show what runs: "get_forecast\u061C"`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+q", tt.name), func(t *testing.T) {
			url := fakeMCP(func(string) any {
				return map[string]any{"tools": []any{
					map[string]any{"name": "get_forecast", "inputSchema": map[string]any{"type": "object"}},
					map[string]any{"name": tt.name, "inputSchema": map[string]any{"type": "object"}},
				}}
			})(t)
			_, err := (&mcpclient.Discoverer{}).ListTools(t.Context(), url, nil)
			e := assertDiscoveryFailed(t, err, "")
			want := "the server listed a tool whose name holds the invisible or control character " + tt.want + " (the server must rename it); nothing was stored"
			if !strings.HasSuffix(e.Message, want) {
				t.Errorf("message:\n got %q\nwant it to end %q", e.Message, want)
			}
			if strings.ContainsAny(e.Message, "\u202E\u200B\u2066\u0007\uFEFF\u061C") {
				t.Errorf("message %q holds the raw character", e.Message)
			}
		})
	}
	t.Run("names in other scripts are fine", func(t *testing.T) {
		url := fakeMCP(func(string) any {
			return map[string]any{"tools": []any{map[string]any{"name": "wetter_für_köln", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "天気", "inputSchema": map[string]any{"type": "object"}}}}
		})(t)
		if tools, err := (&mcpclient.Discoverer{}).ListTools(t.Context(), url, nil); err != nil || len(tools) != 2 {
			t.Errorf("got %d tools, %v; want both", len(tools), err)
		}
	})
}
