package engine_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/policy"
)

// hostileMCP is the demo MCP server over streamable HTTP whose tools/list
// can be made hostile: answered slowly, or replaced by an answer written
// straight to the wire (a 150 MB one is never built in memory).
type hostileMCP struct {
	url  string
	mu   sync.Mutex
	list func(w io.Writer) // nil: the demo's own answer
	slow time.Duration     // before answering tools/list
}

func newHostileMCP(t *testing.T) *hostileMCP {
	t.Helper()
	h := &hostileMCP{}
	demo := demomcp.New(demomcp.Options{}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Method != "tools/list" {
			demo.ServeHTTP(w, r)
			return
		}
		h.mu.Lock()
		list, slow := h.list, h.slow
		h.mu.Unlock()
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
		if list == nil {
			demo.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":`, req.ID)
		list(w)
		fmt.Fprint(w, "}")
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/mcp"
	return h
}

func (h *hostileMCP) set(list func(io.Writer), slow time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list, h.slow = list, slow
}

// jsonString writes a JSON string of n 'a's, stopping when the client has
// hung up.
func jsonString(w io.Writer, n int) {
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

func toolsAnswer(tools ...func(io.Writer)) func(io.Writer) {
	return func(w io.Writer) {
		_, _ = io.WriteString(w, `{"tools":[`)
		for i, tool := range tools {
			if i > 0 {
				_, _ = io.WriteString(w, ",")
			}
			tool(w)
		}
		_, _ = io.WriteString(w, `]}`)
	}
}

func rawTool(name, description, schema string) func(io.Writer) {
	return func(w io.Writer) {
		b, _ := json.Marshal(map[string]any{"name": name, "description": description, "inputSchema": json.RawMessage(schema)})
		_, _ = w.Write(b)
	}
}

// TestDiscovery_HostileListIsRefusedAndNothingIsStored: a server whose
// tool list breaks a limit (a 150 MB description, a 300 KiB schema, a list
// of 10 MB) or holds a name with a bidi override, a zero-width or a control
// character fails its refresh with a clear error on its health; its tools
// stay as they were (not half-replaced); the other server and a chat go on,
// the hostile one left out with server_skipped.
func TestDiscovery_HostileListIsRefusedAndNothingIsStored(t *testing.T) {
	e := newEngine(t, engineOptions{})
	h := newHostileMCP(t)
	if srv := e.register("hostile", h.url); srv.Health.Status != policy.HealthOK || srv.ToolCount != 6 {
		t.Fatalf("registering the server while it behaves: %+v, %d tools", srv.Health, srv.ToolCount)
	}
	digests := func() map[string]string {
		t.Helper()
		tools, err := e.policies.Policies.Tools(as(t.Context(), admin), "hostile")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, tool := range tools {
			m[tool.Name] = tool.Digest
		}
		return m
	}
	before := digests()

	obj := `{"type":"object"}`
	manyTools := func(w io.Writer) {
		var tools []func(io.Writer)
		for i := range 2000 {
			tools = append(tools, rawTool(fmt.Sprintf("tool_%d", i), strings.Repeat("d", 5000), obj))
		}
		toolsAnswer(tools...)(w)
	}
	tests := []struct {
		name string
		list func(io.Writer)
		want string
	}{
		{"a 150 MB description", toolsAnswer(rawTool("get_forecast", "Get it.", obj), func(w io.Writer) {
			_, _ = io.WriteString(w, `{"name":"delete_forecast","inputSchema":{"type":"object"},"description":`)
			jsonString(w, 150<<20)
			_, _ = io.WriteString(w, `}`)
		}), "larger than the limit of 8 MiB (MCP_TOOL_LIST_MAX_BYTES); Toolgate stopped reading and stored nothing"},
		{"a 300 KiB schema", toolsAnswer(rawTool("get_forecast", "Get it.",
			`{"type":"object","properties":{"city":{"type":"string","description":"`+strings.Repeat("s", 300<<10)+`"}}}`)),
			`the input schema of the tool "get_forecast" is 300.1 KiB, more than the limit of 256 KiB (MCP_TOOL_SCHEMA_MAX_BYTES); nothing was stored`},
		{"a 10 MB list of 2000 tools", manyTools, "(MCP_TOOL_LIST_MAX_BYTES)"},
		{"a bidi override in a name", toolsAnswer(rawTool("get_forecast", "Get it.", obj), rawTool("get_\u202Etsacerof_eteled", "Delete.", obj)),
			`invisible or control character U+202E, so it would not show what runs: "get_\u202Etsacerof_eteled"`},
		{"a zero-width space in a name", toolsAnswer(rawTool("get\u200B_forecast", "Get it.", obj)),
			`invisible or control character U+200B, so it would not show what runs: "get\u200B_forecast"`},
		{"a control character in a name", toolsAnswer(rawTool("get_forecast\u001b[2K", "Get it.", obj)),
			`invisible or control character U+001B, so it would not show what runs: "get_forecast\u001B[2K"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.set(tt.list, 0)
			_, err := e.policies.Servers.RefreshTools(as(t.Context(), admin), "hostile")
			if apperr.KindOf(err) != apperr.Upstream || !strings.Contains(fmt.Sprint(err), tt.want) {
				t.Errorf("refresh: %v, want a discovery_failed error saying %q", err, tt.want)
			}
			srv, err := e.policies.Servers.Server(t.Context(), "hostile")
			if err != nil {
				t.Fatal(err)
			}
			if srv.Health.Status != policy.HealthUnreachable || !strings.Contains(srv.Health.LastError, tt.want) ||
				!strings.Contains(srv.RefreshError, tt.want) {
				t.Errorf("health %+v, refresh error %q: want unreachable, saying %q", srv.Health, srv.RefreshError, tt.want)
			}
			if strings.ContainsAny(srv.Health.LastError+srv.RefreshError, "\u202E\u200B\u001b") {
				t.Errorf("the stored error holds a raw hidden character: %q", srv.Health.LastError)
			}
			if after := digests(); !equalMaps(before, after) {
				t.Errorf("tools after the refused refresh: %v, want the ones before kept: %v", after, before)
			}

			conv, rec := e.send(ana, "", "hello")
			wantNotice(t, rec.notices(), conversation.NoticeServerSkipped, "hostile", "hostile skipped: unreachable since", tt.want[:20])
			if l := listed(e.transcript(ana, conv)); !hasKey(l, "demo") || l["demo"] || hasKey(l, "hostile") {
				t.Errorf("listings %v: want demo listed, hostile left out", l)
			}
		})
	}

	t.Run("behaving again, it is listed and offered again", func(t *testing.T) {
		h.set(nil, 0)
		if _, err := e.policies.Servers.RefreshTools(as(t.Context(), admin), "hostile"); err != nil {
			t.Fatal(err)
		}
		conv, rec := e.send(ana, "", "hello")
		if l := listed(e.transcript(ana, conv)); !hasKey(l, "hostile") || len(rec.notices()) != 0 {
			t.Errorf("listings %v, notices %+v: want hostile offered again", l, rec.notices())
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestHealth_SlowServerIsSkippedUntilFastAgain: the provider lists every
// offered server's tools in every request, so a server slow to list
// would slow every new conversation. The health check measures each
// server's listing time: a server slower than MCP_LIST_TIME_LIMIT is left
// out (server_skipped) and a chat turn stays fast; once it lists fast
// again, the re-check offers it again.
func TestHealth_SlowServerIsSkippedUntilFastAgain(t *testing.T) {
	e := newEngine(t, engineOptions{health: policy.HealthOptions{ListTimeLimit: 700 * time.Millisecond, Failures: 3}})
	h := newHostileMCP(t)
	e.register("slowpoke", h.url)

	const delay = 2500 * time.Millisecond
	h.set(nil, delay)
	checked, err := e.policies.Health.CheckReachable(t.Context(), 0, 8)
	if err != nil || !slices.Contains(checked, "slowpoke") || !slices.Contains(checked, "demo") {
		t.Fatalf("checked %v, %v: want both servers", checked, err)
	}
	hs := e.health("slowpoke")
	if hs.Status != policy.HealthSlow || hs.Since == nil || hs.ListMS == nil || *hs.ListMS < int(delay/time.Millisecond) ||
		!strings.Contains(hs.LastError, "more than the limit of 700ms (MCP_LIST_TIME_LIMIT)") {
		t.Fatalf("slowpoke's health %+v, want slow, with how long the listing took and the limit", hs)
	}
	if hd := e.health("demo"); hd.Status != policy.HealthOK || hd.ListMS == nil {
		t.Errorf("demo's health %+v, want ok with its listing time", hd)
	}

	start := time.Now()
	conv, rec := e.send(ana, "", "hello")
	if took := time.Since(start); took >= delay {
		t.Errorf("a new conversation's hello took %v with a server slow to list left out, want well under %v", took, delay)
	}
	wantNotice(t, rec.notices(), conversation.NoticeServerSkipped, "slowpoke",
		"slowpoke skipped: slow to list its tools since", "(MCP_LIST_TIME_LIMIT)")
	if l := listed(e.transcript(ana, conv)); hasKey(l, "slowpoke") || !hasKey(l, "demo") {
		t.Errorf("listings %v: want demo only", l)
	}

	// Still slow: the re-check keeps it out.
	if _, err := e.policies.Health.RecheckUnreachable(t.Context(), 0, 8); err != nil {
		t.Fatal(err)
	}
	if hs := e.health("slowpoke"); hs.Status != policy.HealthSlow {
		t.Errorf("after a re-check that was still slow: %+v, want slow", hs)
	}

	h.set(nil, 0)
	if _, err := e.policies.Health.RecheckUnreachable(t.Context(), 0, 8); err != nil {
		t.Fatal(err)
	}
	if hs := e.health("slowpoke"); hs.Status != policy.HealthOK || hs.Since != nil || hs.LastError != "" {
		t.Fatalf("after a fast re-check: %+v, want ok", hs)
	}
	conv, rec = e.send(ana, "", "hello")
	if l := listed(e.transcript(ana, conv)); !hasKey(l, "slowpoke") || len(rec.notices()) != 0 {
		t.Errorf("listings %v, notices %+v: want slowpoke offered again", l, rec.notices())
	}
}

// TestDiscovery_ProviderListingKeepsTheSameLimits: tools the model's
// provider lists itself (for a server Toolgate has not discovered) are not
// recorded when discovery would refuse them: a name with a bidi override,
// or a description over its limit; the others are.
func TestDiscovery_ProviderListingKeepsTheSameLimits(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.register("later", closedURL(t)+"/mcp") // discovery fails: nothing known yet
	obj := json.RawMessage(`{"type":"object"}`)
	err := e.policies.Servers.RecordListed(t.Context(), "later", []policy.DiscoveredTool{
		{Name: "get_forecast", Description: "Get it.", InputSchema: obj},
		{Name: "get_\u202Etsacerof_eteled", Description: "Delete.", InputSchema: obj},
		{Name: "chatty", Description: strings.Repeat("d", 100<<10), InputSchema: obj},
	})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := e.policies.Policies.Tools(as(t.Context(), admin), "later")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"get_forecast"}) {
		t.Errorf("recorded %q, want only get_forecast", names)
	}
}
