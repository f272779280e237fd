package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestAgentFace_DecisionHookAnswersFirst: a server's decision hook is
// asked about an agent's call that asks, before anyone (as about a
// chat's): its denial returns its reason to the client and its approval
// runs the call, with nobody asked; the hook sees the call as the card
// would (the agent's session as the conversation).
func TestAgentFace_DecisionHookAnswersFirst(t *testing.T) {
	// A call the hook did not answer would wait for the person: 3 s, then fail.
	env := map[string]string{"DATABASE_URL": testdb.URL(t), "MCP_HOLD_TIMEOUT": "3s"}
	base, _, _ := start(t, env)
	token := tokenFor(t, env, testAdminEmail)

	var mu sync.Mutex
	var secret, reply string
	var got []hooks.Request
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := hooks.Verify(secret, r.Header.Get(hooks.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var req hooks.Request
		_ = json.Unmarshal(body, &req)
		got = append(got, req)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	defer rcv.Close()
	st, body := do(t, "PUT", base+"/api/mcp/servers/demo/decision-hook", `{"url":"`+rcv.URL+`"}`)
	var h struct{ Secret string }
	if err := json.Unmarshal([]byte(body), &h); st != 200 || err != nil || h.Secret == "" {
		t.Fatalf("set the hook: %d %s", st, body)
	}
	mu.Lock()
	secret, reply = h.Secret, `{"decision":"deny","reason":"the hook says not today"}`
	mu.Unlock()

	var asked atomic.Int32
	s := agentClient(t, base, "/mcp/demo", token, "hooked-agent", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "delete_forecast", Arguments: map[string]any{"city": "Oslo"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "the hook says not today") {
		t.Fatalf("a call the hook denies: %v %s; want an error result with the hook's reason", err, text(res))
	}
	mu.Lock()
	reply = `{"decision":"approve"}`
	mu.Unlock()
	res, err = s.CallTool(t.Context(), &mcp.CallToolParams{Name: "delete_forecast", Arguments: map[string]any{"city": "Berlin"}})
	if err != nil || res.IsError {
		t.Fatalf("a call the hook approves: %v %s; want it to run", err, text(res))
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the person was asked %d times about calls the hook answered", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Tool != "delete_forecast" || !strings.HasPrefix(got[0].ConversationID, "agt_") || got[0].ApprovalRequestID == "" {
		t.Errorf("the hook was asked %+v; want both calls, with the agent's session and the request", got)
	}
}
