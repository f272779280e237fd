package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testdb"
)

// bearer adds a personal API token to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// agentClient connects an MCP client (the official Go SDK's) named name to
// Toolgate's face at path with token; ask, when set, answers elicitations.
func agentClient(t *testing.T, base, path, token, name string, ask func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if ask != nil {
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return ask(r) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.2.3"}, opts)
	s, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + path,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// agentCalls are the receipts of the calls made through the agent face.
type agentCall struct {
	Tool, State, Client string
	Approval            *string
}

func agentCalls(t *testing.T, pool *pgxpool.Pool) []agentCall {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT tool_name, state, coalesce(client->>'name', ''), approval_request_id
		FROM gateway_calls WHERE conversation_id LIKE 'agt_%' ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []agentCall
	for rows.Next() {
		var c agentCall
		if err := rows.Scan(&c.Tool, &c.State, &c.Client, &c.Approval); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// TestAgentFace_AnyMCPClientWithAPersonalToken: an MCP client of the
// person's own (the official Go SDK's client here) reaches every server at
// /mcp with an API token: blocked tools are not listed, tools that run
// unasked run, a tool that asks is held until the person decides in the
// client (elicitation), a denial returns its reason, a client that goes
// away withdraws its request, and each call's receipt names the client.
func TestAgentFace_AnyMCPClientWithAPersonalToken(t *testing.T) {
	dbURL := testdb.URL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "MCP_HOLD_TIMEOUT": "30s"}
	base, logs, _ := start(t, env)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "create", testAdminEmail, "agent"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(out.String())
	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if st, body := do(t, "PUT", base+"/api/mcp/servers/demo/tools/reset_forecasts/approval-policy", `{"policy":"blocked"}`); st != 200 {
		t.Fatalf("block reset_forecasts: %d %s", st, body)
	}

	var answer atomic.Value // func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)
	answer.Store(func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	})
	s := agentClient(t, base, "/mcp", token, "test-agent", func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return answer.Load().(func(*mcp.ElicitRequest) (*mcp.ElicitResult, error))(r)
	})

	t.Run("blocked tools are not listed", func(t *testing.T) {
		lt, err := s.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range lt.Tools {
			names = append(names, tool.Name)
		}
		if !slices.Contains(names, "demo__get_forecast") || !slices.Contains(names, "demo__delete_forecast") {
			t.Errorf("tools %v: want demo's tools named demo__{tool}", names)
		}
		if slices.Contains(names, "demo__reset_forecasts") {
			t.Errorf("tools %v list the blocked demo__reset_forecasts", names)
		}
	})

	t.Run("a tool that runs unasked runs", func(t *testing.T) {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__get_forecast", Arguments: map[string]any{"city": "Berlin"}})
		if err != nil || res.IsError {
			t.Fatalf("get_forecast: %v %+v %s", err, res, text(res))
		}
	})

	t.Run("a blocked tool called anyway is refused", func(t *testing.T) {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__reset_forecasts", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "blocked") {
			t.Fatalf("reset_forecasts: %v %s; want a refusal saying it is blocked", err, text(res))
		}
	})

	t.Run("a tool that asks runs once the person approves in the client", func(t *testing.T) {
		var asked atomic.Int32
		answer.Store(func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if !strings.Contains(r.Params.Message, "delete_forecast") {
				t.Errorf("the question %q does not name the tool", r.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		})
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__delete_forecast", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil || res.IsError {
			t.Fatalf("delete_forecast: %v %s", err, text(res))
		}
		if asked.Load() != 1 {
			t.Errorf("the client was asked %d times, want once", asked.Load())
		}
	})

	t.Run("a held call denied returns the reason", func(t *testing.T) {
		answer.Store(func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false, "reason": "not Rome, ever"}}, nil
		})
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__delete_forecast", Arguments: map[string]any{"city": "Rome"}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "not Rome, ever") {
			t.Fatalf("delete_forecast: %v %s; want an error result with the reason", err, text(res))
		}
	})

	t.Run("a client that goes away withdraws its request", func(t *testing.T) {
		quiet := agentClient(t, base, "/mcp/demo", token, "quiet-agent", nil) // no elicitation: only the person can decide
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = quiet.CallTool(ctx, &mcp.CallToolParams{Name: "delete_forecast", Arguments: map[string]any{"city": "Lima"}})
		}()
		id := waitPending(t, pool, "Lima")
		cancel()
		<-done
		deadline := time.Now().Add(10 * time.Second)
		var state string
		for time.Now().Before(deadline) {
			if err := pool.QueryRow(t.Context(), `SELECT state FROM approval_requests WHERE id = $1`, id).Scan(&state); err != nil {
				t.Fatal(err)
			}
			if state != "pending" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if state != "withdrawn" {
			t.Fatalf("the request of a call whose client went away is %q, want withdrawn\nlogs:\n%s", state, logs)
		}
	})

	t.Run("approved for this session, the session's later calls of the tool run unasked; another session still asks", func(t *testing.T) {
		session := agentClient(t, base, "/mcp/demo", token, "session-agent", nil)
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "set_forecast",
				Arguments: map[string]any{"city": "Quito", "summary": "Mild", "temperature_c": 18}})
			done <- res
		}()
		id := waitPending(t, pool, "Quito")
		if st, b := do(t, "POST", base+"/api/approvals/"+id+"/decision", `{"approve":true,"scope":"conversation"}`); st != 200 {
			t.Fatalf("approve for this session: %d %s", st, b)
		}
		if res := <-done; res == nil || res.IsError {
			t.Fatalf("the approved call: %+v", res)
		}
		res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "set_forecast",
			Arguments: map[string]any{"city": "Quito", "summary": "Rain", "temperature_c": 12}})
		if err != nil || res.IsError {
			t.Fatalf("the session's next call of the tool: %v %s; want it to run unasked", err, text(res))
		}
		other := agentClient(t, base, "/mcp/demo", token, "other-session", nil)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		go func() {
			_, _ = other.CallTool(ctx, &mcp.CallToolParams{Name: "set_forecast",
				Arguments: map[string]any{"city": "Quito", "summary": "Snow", "temperature_c": 0}})
		}()
		waitPending(t, pool, "Snow") // another session's call still asks
		cancel()
	})

	t.Run("the client's answer after the person decided elsewhere changes nothing", func(t *testing.T) {
		decided := make(chan struct{})
		answer.Store(func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			<-decided // the person approves in the inbox first
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false, "reason": "too late"}}, nil
		})
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__delete_forecast", Arguments: map[string]any{"city": "Berlin"}})
			done <- res
		}()
		id := waitPending(t, pool, "Berlin")
		if st, b := do(t, "POST", base+"/api/approvals/"+id+"/decision", `{"approve":true}`); st != 200 {
			t.Fatalf("approve in the inbox: %d %s", st, b)
		}
		close(decided)
		if res := <-done; res == nil || res.IsError {
			t.Fatalf("the call approved in the inbox: %+v", res)
		}
		var state string
		if err := pool.QueryRow(t.Context(), `SELECT state FROM approval_requests WHERE id = $1`, id).Scan(&state); err != nil || state != "approved" {
			t.Errorf("the request is %q (%v) after the client's late denial; want approved", state, err)
		}
	})

	t.Run("argument rules answer an agent's call first, as a chat's", func(t *testing.T) {
		rules := `{"rules": [{"when": "args.city == \"Paris\"", "decision": "deny", "reason": "never Paris"},
			{"when": "args.city == \"Test\"", "decision": "approve", "reason": "test data"}]}`
		if st, b := do(t, "PUT", base+"/api/mcp/servers/demo/tools/send_alert/rules", rules); st != 200 {
			t.Fatalf("set rules: %d %s", st, b)
		}
		var asked atomic.Int32
		answer.Store(func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "decline"}, nil
		})
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__send_alert", Arguments: map[string]any{"city": "Paris", "message": "storm"}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "never Paris") {
			t.Errorf("a call a rule denies: %v %s; want an error result with the rule's reason", err, text(res))
		}
		res, err = s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__send_alert", Arguments: map[string]any{"city": "Test", "message": "drill"}})
		if err != nil || res.IsError {
			t.Errorf("a call a rule approves: %v %s; want it to run", err, text(res))
		}
		if asked.Load() != 0 {
			t.Errorf("the person was asked %d times about calls the rules answered", asked.Load())
		}
	})

	t.Run("a held call tells a client that sent a progress token that it still waits", func(t *testing.T) {
		progress := make(chan string, 10)
		c := mcp.NewClient(&mcp.Implementation{Name: "patient-agent", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				progress <- r.Params.Message
			}})
		ps, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp/demo",
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close()
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			p := &mcp.CallToolParams{Name: "delete_forecast", Arguments: map[string]any{"city": "Lisbon"}}
			p.SetProgressToken("p1")
			res, _ := ps.CallTool(t.Context(), p)
			done <- res
		}()
		id := waitPending(t, pool, "Lisbon")
		select {
		case msg := <-progress:
			if !strings.Contains(msg, "delete_forecast") {
				t.Errorf("progress %q does not say what waits", msg)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("no progress notification while the call was held")
		}
		if st, b := do(t, "POST", base+"/api/approvals/"+id+"/decision", `{"approve":true}`); st != 200 {
			t.Fatalf("approve: %d %s", st, b)
		}
		if res := <-done; res == nil || res.IsError {
			t.Fatalf("the held call after approval: %+v", res)
		}
	})

	t.Run("every call has a receipt naming the client, and ran once", func(t *testing.T) {
		calls := agentCalls(t, pool)
		ran := map[string]int{}
		for _, c := range calls {
			if c.Client == "" {
				t.Errorf("receipt %+v does not name the client", c)
			}
			if c.State == "done" {
				ran[c.Tool]++
			}
		}
		if ran["get_forecast"] != 1 || ran["delete_forecast"] != 3 || ran["set_forecast"] != 2 || ran["send_alert"] != 1 {
			t.Errorf("calls that ran: %v, want get_forecast once, delete_forecast three times (Oslo, Berlin, Lisbon), set_forecast twice (this session), send_alert once (a rule approved it); receipts %+v", ran, calls)
		}
		b, _ := json.Marshal(calls)
		if !strings.Contains(string(b), "test-agent") {
			t.Errorf("no receipt names test-agent: %s", b)
		}
		// A held call has one receipt, as it ended: none says "not
		// approved" for the moment it was held; the denied and the
		// withdrawn ones name their request and why.
		var held, ended int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE refusal->>'code' = 'not_approved'),
				count(*) FILTER (WHERE refusal->>'code' IN ('denied', 'withdrawn') AND approval_request_id IS NOT NULL)
			FROM gateway_calls WHERE conversation_id LIKE 'agt_%'`).Scan(&held, &ended); err != nil {
			t.Fatal(err)
		}
		if held != 0 || ended < 3 {
			t.Errorf("receipts: %d say not approved (want none), %d denied or withdrawn with their request (want the Rome denial and two withdrawals)", held, ended)
		}
	})
}

// waitPending waits for the pending approval request of a held call whose
// arguments mention what, and returns its id.
func waitPending(t *testing.T, pool *pgxpool.Pool, what string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var id string
		err := pool.QueryRow(t.Context(), `SELECT id FROM approval_requests WHERE state = 'pending' AND arguments LIKE '%' || $1 || '%'`, what).Scan(&id)
		if err == nil {
			return id
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no pending approval request for %s", what)
	return ""
}
