package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/emulator"
	"github.com/toolgate/toolgate/internal/testdb"
)

// gatedMCP is an MCP server with one tool, send_alert, that counts its
// calls by city and holds each call until the test lets it finish: the
// test kills the database while the tool runs.
type gatedMCP struct {
	mu       sync.Mutex
	calls    map[string]int
	entered  chan string   // receives the city of each call as it starts
	release  chan struct{} // closed: held calls finish
	released bool
}

func newGatedMCP(t *testing.T) (*gatedMCP, string) {
	t.Helper()
	g := &gatedMCP{calls: map[string]int{}, entered: make(chan string, 16), release: make(chan struct{})}
	server := mcp.NewServer(&mcp.Implementation{Name: "gated", Version: "1.0.0"}, nil)
	type alertIn struct {
		City    string `json:"city"`
		Message string `json:"message"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "send_alert", Description: "Send a weather alert for a city."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in alertIn) (*mcp.CallToolResult, any, error) {
			g.mu.Lock()
			g.calls[in.City]++
			g.mu.Unlock()
			g.entered <- in.City
			select {
			case <-g.release:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Alert sent to " + in.City + "."}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.open) // before the server closes: no call stays held
	return g, srv.URL + "/mcp"
}

// open lets held calls, and every later one, finish.
func (g *gatedMCP) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.released = true
		close(g.release)
	}
}

func (g *gatedMCP) count(city string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[city]
}

// TestDBKill_ApprovedCallThatRanIsKept kills Postgres (kill -9 of the
// server, the test's own) while an approved tool call runs, lets the call
// finish and the provider complete and store its response, then starts
// Postgres again: the turn's end, read back from the provider, is stored in
// full. The transcript has the call with its output, the audit log its
// receipt, the approval stays approved, the tool ran once, and the next
// message goes on from the response that ran the tool (it does not tell
// the model the request was denied).
func TestDBKill_ApprovedCallThatRanIsKept(t *testing.T) {
	pg := testdb.StartPGServer(t)
	dbURL := pg.NewDatabase()
	tool, toolURL := newGatedMCP(t)
	emu, err := emulator.New(emulator.Config{MCPTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	up := &provider{emu: emu.Handler()}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)

	base, logs, stop := start(t, map[string]string{
		// Direct mode: the provider calls the MCP server itself (the
		// gateway-mode counterpart is TestKill_GatewayFollowUpAtEachStep).
		"MCP_ROUTE": "direct", "DATABASE_URL": dbURL, "OPENAI_BASE_URL": upSrv.URL + "/v1/",
		"OFFLINE_DEMO": "false", "MCP_ALLOWED_HOSTS": "127.0.0.1", "USER_MESSAGES_PER_MINUTE": "1000", "LOG_LEVEL": "debug"})
	defer stop()
	defer func() {
		if t.Failed() {
			t.Logf("toolgate logs:\n%s", logs)
		}
	}()
	if st, body := do(t, "POST", base+"/api/mcp/servers", fmt.Sprintf(`{"label":"gated","url":%q}`, toolURL)); st != 201 {
		t.Fatalf("registering the MCP server: %d %s", st, body)
	}
	if st, body := do(t, "PUT", base+"/api/mcp/servers/gated/tools/send_alert/approval-policy", `{"policy":"always"}`); st != 200 {
		t.Fatalf("send_alert always asks: %d %s", st, body)
	}

	const city = "Crashville"
	_, events := sse(t, base+"/api/responses", `{"input":"send_alert {\"city\": \"`+city+`\", \"message\": \"storm\"}"}`)
	conv, approval := asked(t, events)
	if conv == "" || approval == "" {
		t.Fatalf("the model did not ask: %v", events)
	}
	stream := openSSE(t, base+"/api/responses/approval-response",
		fmt.Sprintf(`{"conversation_id":%q,"approval_request_id":%q,"approve":true}`, conv, approval))
	select {
	case <-tool.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the approved call never reached the MCP server")
	}
	stream.waitFor(t, func(ev event) bool { return ev.name == "tool.started" })

	pg.Kill() // while the tool runs
	tool.open()
	// The call ends, the provider completes and stores its response; the
	// turn cannot store what it received, nor its end.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), "recording the end of a turn failed"); {
		if time.Now().After(deadline) {
			t.Fatal("the turn never tried to store its end while the database was down")
		}
		time.Sleep(50 * time.Millisecond)
	}
	stream.close()
	time.Sleep(time.Second) // down a little longer: the retries fail too
	pg.Start()

	tr := getTranscript(t, base, conv)
	for deadline := time.Now().Add(30 * time.Second); tr.Conversation.Streaming; tr = getTranscript(t, base, conv) {
		if time.Now().After(deadline) {
			t.Fatal("the conversation still streams 30s after the database came back")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if n := tool.count(city); n != 1 {
		t.Errorf("send_alert ran %d times, want 1", n)
	}
	var callID string
	calls := 0
	for _, it := range tr.Items {
		if it.Type == "mcp_call" && it.ApprovalRequestID == approval {
			calls++
			callID = it.ID
			if it.Interrupted || it.Output == nil || !strings.Contains(*it.Output, "Alert sent to "+city) {
				t.Errorf("the call is in the transcript as %+v; want it with its output", it)
			}
		}
	}
	if calls != 1 {
		t.Fatalf("%d mcp_call items for the approved request in the transcript, want 1: %+v", calls, tr.Items)
	}
	if a := tr.approval(approval); a.State != "approved" {
		t.Errorf("the approval is %s (%q), want approved", a.State, a.Reason)
	}

	// The audit log has the call's receipt.
	st, body := do(t, "GET", base+"/api/audit?action=tool.call", "")
	var page struct {
		Entries []struct {
			After json.RawMessage `json:"after"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(body), &page); st != 200 || err != nil {
		t.Fatalf("GET /api/audit: %d %v %s", st, err, body)
	}
	receipts := 0
	for _, e := range page.Entries {
		var rc struct {
			CallID            string  `json:"call_id"`
			ApprovalRequestID *string `json:"approval_request_id"`
			Outcome           string  `json:"outcome"`
		}
		if json.Unmarshal(e.After, &rc) == nil && rc.CallID == callID {
			receipts++
			if rc.ApprovalRequestID == nil || *rc.ApprovalRequestID != approval || rc.Outcome != "output" {
				t.Errorf("receipt %s; want the approved call's, with its output", e.After)
			}
		}
	}
	if receipts != 1 {
		t.Errorf("%d receipts for call %s in the audit log, want 1: %s", receipts, callID, body)
	}

	// The next message goes on from the response that ran the tool: the
	// approval is not answered again, as a denial or otherwise.
	_, events = sse(t, base+"/api/responses", fmt.Sprintf(`{"conversation_id":%q,"input":"thanks"}`, conv))
	if events[len(events)-1].name != "completed" {
		t.Errorf("the next message did not complete: %v", events)
	}
	if last := up.last(); bytes.Contains(last, []byte(approval)) || bytes.Contains(last, []byte("mcp_approval_response")) {
		t.Errorf("the next message answers the approval again (the model would say it was denied): %s", last)
	}
	if n := tool.count(city); n != 1 {
		t.Errorf("after the next message send_alert ran %d times, want 1", n)
	}
}
