package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testdb"
)

// mcpPost sends one raw JSON-RPC message to the face as a hostile client
// would, with token and (when set) a session id.
func mcpPost(t *testing.T, url, token, session, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b)
}

func tokenFor(t testing.TB, env map[string]string, email string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "create", email, "agent"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("token create %s: %v", email, err)
	}
	return strings.TrimSpace(out.String())
}

// TestAgentFace_Attacks: what an attacker tries at /mcp with or without
// someone's token. Each is refused, and nothing runs.
func TestAgentFace_Attacks(t *testing.T) {
	dbURL := testdb.URL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "MCP_HOLD_TIMEOUT": "2s"}
	base, _, _ := start(t, env)
	mine := tokenFor(t, env, testAdminEmail)
	st, body := do(t, "POST", base+"/api/users", `{"email":"mallory@toolgate.test","role":"member","password":"correct horse battery staple"}`)
	if st != 201 {
		t.Fatalf("create mallory: %d %s", st, body)
	}
	var mallory struct{ ID string }
	_ = json.Unmarshal([]byte(body), &mallory)
	theirs := tokenFor(t, env, "mallory@toolgate.test")
	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

	t.Run("no token, a forged one, a capability token at /mcp", func(t *testing.T) {
		for _, c := range []struct{ token, path, code string }{
			{"", "/mcp", "token_missing"},
			{"tg_forgedforgedforgedforgedforgedforgedforged1", "/mcp", "token_invalid"},
			{"tg_forgedforgedforgedforgedforgedforgedforged1", "/mcp/demo", "token_invalid"},
			{"tgc_x.y", "/mcp", "not_found"},
		} {
			st, b := mcpPost(t, base+c.path, c.token, "", list)
			if (st != 401 && st != 404) || !strings.Contains(b, c.code) {
				t.Errorf("%s with %q: %d %s, want 401/404 %s", c.path, c.token, st, b, c.code)
			}
		}
	})

	t.Run("another person's token cannot use my session", func(t *testing.T) {
		s := agentClient(t, base, "/mcp", mine, "mine", nil)
		st, b := mcpPost(t, base+"/mcp", theirs, s.ID(), list)
		if st == 200 || strings.Contains(b, "demo__") {
			t.Fatalf("mallory's token with my session id: %d %s; want refused", st, b)
		}
	})

	t.Run("a server nobody registered, and a tool of none", func(t *testing.T) {
		if st, b := mcpPost(t, base+"/mcp/nosuch", mine, "", list); st != 404 || !strings.Contains(b, "server_not_found") {
			t.Errorf("/mcp/nosuch: %d %s, want 404 server_not_found", st, b)
		}
		s := agentClient(t, base, "/mcp", mine, "mine", nil)
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "nosuch__delete_everything", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "no tool") {
			t.Errorf("nosuch__delete_everything: %v %s, want an error result saying there is no such tool", err, text(res))
		}
	})

	t.Run("huge and deeply nested arguments", func(t *testing.T) {
		s := agentClient(t, base, "/mcp", mine, "mine", nil)
		deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__get_forecast", Arguments: json.RawMessage(deep)})
		if err == nil && !res.IsError {
			t.Errorf("a call with arguments nested 20,000 deep ran")
		}
		huge := strings.Repeat("x", 2<<20)
		res, err = s.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__get_forecast", Arguments: map[string]any{"city": huge}})
		if err == nil && !res.IsError {
			t.Errorf("a call with 2 MiB of arguments ran: %s", text(res)[:min(200, len(text(res)))])
		}
		// The face still answers (a new session: the Go client closes its
		// own after a 413).
		if _, err := agentClient(t, base, "/mcp", mine, "mine", nil).ListTools(t.Context(), nil); err != nil {
			t.Errorf("after the hostile calls the face does not answer: %v", err)
		}
	})

	t.Run("a disabled account's token stops working, its open session too", func(t *testing.T) {
		s := agentClient(t, base, "/mcp", theirs, "mallory-agent", nil)
		if _, err := s.ListTools(t.Context(), nil); err != nil {
			t.Fatalf("mallory lists before being disabled: %v", err)
		}
		if st, b := do(t, "PATCH", base+"/api/users/"+mallory.ID, `{"disabled":true}`); st != 200 {
			t.Fatalf("disable mallory: %d %s", st, b)
		}
		if _, err := s.ListTools(t.Context(), nil); err == nil {
			t.Errorf("a disabled account's open session still lists tools")
		}
		if st, b := mcpPost(t, base+"/mcp", theirs, "", list); st != 401 {
			t.Errorf("a disabled account's token: %d %s, want 401", st, b)
		}
	})

	t.Run("a revoked token stops working", func(t *testing.T) {
		st, b := do(t, "POST", base+"/api/tokens", `{"name":"to revoke"}`)
		var tok struct{ ID, Token string }
		if err := json.Unmarshal([]byte(b), &tok); st != 201 || err != nil {
			t.Fatalf("create a token: %d %s", st, b)
		}
		if st, b := mcpPost(t, base+"/mcp", tok.Token, "", list); st == 401 {
			t.Fatalf("a fresh token: %d %s", st, b)
		}
		if st, b := do(t, "DELETE", base+"/api/tokens/"+tok.ID, ""); st != 204 {
			t.Fatalf("revoke: %d %s", st, b)
		}
		if st, b := mcpPost(t, base+"/mcp", tok.Token, "", list); st != 401 || !strings.Contains(b, "token_invalid") {
			t.Errorf("a revoked token: %d %s, want 401 token_invalid", st, b)
		}
	})

	t.Run("a held call nobody decides is withdrawn at MCP_HOLD_TIMEOUT", func(t *testing.T) {
		s := agentClient(t, base, "/mcp/demo", mine, "patient", nil)
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "delete_forecast", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "MCP_HOLD_TIMEOUT") {
			t.Fatalf("a held call past MCP_HOLD_TIMEOUT: %v %s; want an error result naming the limit", err, text(res))
		}
		var state string
		if err := pool.QueryRow(t.Context(), `SELECT state FROM approval_requests WHERE arguments LIKE '%Oslo%'`).Scan(&state); err != nil || state != "withdrawn" {
			t.Errorf("its request is %q (%v), want withdrawn", state, err)
		}
	})

	var ran int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM gateway_calls WHERE state <> 'refused'`).Scan(&ran); err != nil {
		t.Fatal(err)
	}
	if ran != 0 {
		t.Errorf("%d calls ran during the attacks, want none", ran)
	}
}
